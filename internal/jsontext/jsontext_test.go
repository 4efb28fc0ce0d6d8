package jsontext

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendString holds AppendString to encoding/json's bytes, with HTML
// escaping on and off (`go test -fuzz FuzzAppendString ./internal/jsontext`);
// the seeds run in every `go test`.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{
		"", "plain", `say "hi" \ there`, "<b>&amp;</b>", "tab\tnew\nline\rcr\bbs\fff",
		"\x00\x01\x1f\x7f", "café Zürich ✓ 𝄞", "line\u2028sep\u2029para",
		"bad \xff byte", "cut \xe2\x82", "\xed\xa0\x80 surrogate", "'single'", "end\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, html := range []bool{true, false} {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(html)
			if err := enc.Encode(s); err != nil {
				t.Fatal(err)
			}
			w := bytes.TrimSuffix(want.Bytes(), []byte("\n"))
			if got := AppendString([]byte("x"), s, html); got[0] != 'x' || !bytes.Equal(got[1:], w) {
				t.Fatalf("AppendString(%q, html %v) = %s, encoding/json writes %s", s, html, got[1:], w)
			}
		}
	})
}
