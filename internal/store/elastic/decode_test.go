package elastic

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	gojson "github.com/goccy/go-json"
)

// BenchmarkDecodePage decodes one search answer of 20 notices
// (testdata/search-page.json, a relevance search of the 1M sample) with
// the decoder the store uses (go-json) and with encoding/json, the
// standard library's, as the baseline (docs/elasticsearch.md).
func BenchmarkDecodePage(b *testing.B) {
	raw, err := os.ReadFile("testdata/search-page.json")
	if err != nil {
		b.Fatal(err)
	}
	decoders := []struct {
		name   string
		decode func(*noticePage) error
	}{
		{"go-json", func(p *noticePage) error { return gojson.NewDecoder(bytes.NewReader(raw)).Decode(p) }},
		{"encoding-json", func(p *noticePage) error { return json.NewDecoder(bytes.NewReader(raw)).Decode(p) }},
	}
	for _, d := range decoders {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				var p noticePage
				if err := d.decode(&p); err != nil {
					b.Fatal(err)
				}
				if len(p.Hits.Hits) != 20 {
					b.Fatalf("decoded %d hits, want 20", len(p.Hits.Hits))
				}
			}
		})
	}
}

// TestDecodersAgree: go-json decodes a page of notices into exactly what
// encoding/json gives.
func TestDecodersAgree(t *testing.T) {
	raw, err := os.ReadFile("testdata/search-page.json")
	if err != nil {
		t.Fatal(err)
	}
	var a, b noticePage
	if err := gojson.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) || len(a.Hits.Hits) != 20 {
		t.Errorf("go-json and encoding/json decode the page differently:\n%s\n%s", ja, jb)
	}
}
