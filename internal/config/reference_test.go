package config

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/operating.md's settings reference from the table")

// The markers around the settings reference in docs/operating.md.
const (
	referenceBegin = "<!-- settings:begin (made from internal/config/settings.go by `go generate ./internal/config`; do not edit) -->\n"
	referenceEnd   = "<!-- settings:end -->\n"
)

const operatingGuide = "../../docs/operating.md"

// TestSettingsReference: docs/operating.md's settings reference, between
// its markers, is Reference() (the table), and -update rewrites it.
func TestSettingsReference(t *testing.T) {
	doc, err := os.ReadFile(operatingGuide)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := bytes.Cut(doc, []byte(referenceBegin))
	current, after, ok2 := bytes.Cut(rest, []byte(referenceEnd))
	if !ok || !ok2 {
		t.Fatalf("docs/operating.md has no settings reference between the lines\n%s...\n%s", referenceBegin, referenceEnd)
	}
	want := "\n" + Reference() + "\n"
	if string(current) == want {
		return
	}
	if *update {
		out := string(before) + referenceBegin + want + referenceEnd + string(after)
		if err := os.WriteFile(operatingGuide, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the settings reference of docs/operating.md")
		return
	}
	line, got, wantLine := firstDiff(string(current), want)
	t.Errorf("docs/operating.md's settings reference differs from the table in internal/config/settings.go; "+
		"rewrite it with `go generate ./internal/config` (which runs `go test -tags sqlite_fts5 -run '^TestSettingsReference$' ./internal/config -update`).\nfirst difference at line %d:\n got: %q\nwant: %q",
		line, got, wantLine)
}

// firstDiff returns the first line (1-based) where a and b differ, and
// that line of each.
func firstDiff(a, b string) (int, string, string) {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return i + 1, x, y
		}
	}
	return 0, "", ""
}
