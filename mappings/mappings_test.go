package mappings

import "testing"

func TestLoad(t *testing.T) {
	for _, kind := range []string{Notices, Register} {
		t.Run(kind, func(t *testing.T) {
			ix, err := Load(kind)
			if err != nil {
				t.Fatal(err)
			}
			if ix.Kind != kind || ix.Version < 1 || len(ix.Body) == 0 {
				t.Errorf("Load(%q) = %+v", kind, ix)
			}
		})
	}
	if _, err := Load("nope"); err == nil {
		t.Error("Load of an unknown kind succeeded")
	}
}
