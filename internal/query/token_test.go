package query

import (
	"strings"
	"testing"
	"unicode"
)

// TestFoldSplitsOnlyAtItsSpaces: the Elasticsearch backend indexes Fold's
// output with the whitespace analyzer, which splits at every Java
// whitespace character (Character.isWhitespace: Zs, Zl and Zp but the
// no-break spaces, U+0009..U+000D, U+001C..U+001F). None of those, nor any
// other White_Space character, is ever inside a token, so Fold's tokens
// are the analyzer's tokens.
func TestFoldSplitsOnlyAtItsSpaces(t *testing.T) {
	var ws []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp, unicode.White_Space) ||
			(r >= 0x1C && r <= 0x1F) {
			ws = append(ws, r)
		}
	}
	if len(ws) < 25 {
		t.Fatalf("only %d whitespace characters", len(ws))
	}
	for _, r := range ws {
		if isTokenRune(r) || isDiacritic(r) {
			t.Errorf("U+%04X is whitespace to the analyzer but inside a token to unicode61", r)
		}
		if s := Fold("a" + string(r) + "b"); s != "a b" {
			t.Errorf("Fold(a U+%04X b) = %q", r, s)
		}
	}
	if f := Fold(" Ünïcödé  W½ x² ① 日本語 "); strings.Count(f, " ") != 4 || f != "unicode w½ x² ① 日本語" {
		t.Errorf("Fold = %q", f)
	}
}
