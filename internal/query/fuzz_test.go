package query

import (
	"reflect"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/errs"
)

// fuzzDocs are documents the fuzzer matches every parsed tree against.
var fuzzDocs = []*Doc{
	NewDoc(),
	NewDoc("Acme Holdings Pty Ltd", "Appointment of Liquidator", "Court liquidation of ACME"),
	NewDoc("Smith-Jones Café", "", "o'brien a b c or not and"),
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", " ", "acme", "a b", `"a b"`, "a OR b", "a -b", "NOT a", "(a OR b) c",
		"liquid*", `"acme hold*"`, "-foo", "--foo", "a OR -b", "-(a OR -b) c",
		"smith-jones", "o'brien", "Café", "&", "()", "(", ")", `"`, `""`, "*", "a*",
		"ab*cd", "a OR", "OR a", "a OR OR b", "a -", "-", "- a", `"x"*`, "AND", "-OR",
		"((((a))))", "a\u0301b", "\xff\xfe", "ǡ ı İ ſ", strings.Repeat("a ", 260),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		n, err := Parse(q)
		if err != nil {
			e, ok := err.(*errs.Error)
			if !ok || e.Code != errs.InvalidQuery {
				t.Fatalf("Parse(%q) error %#v is not an *errs.Error with code invalid_query", q, err)
			}
			if n != nil {
				t.Fatalf("Parse(%q) returned a tree with an error", q)
			}
			if e.Message == "" {
				t.Fatalf("Parse(%q) error has no message", q)
			}
			return
		}
		if (n == nil) != (strings.TrimSpace(q) == "") {
			t.Fatalf("Parse(%q) = %#v: nil exactly when q is blank", q, n)
		}
		if n != nil {
			checkSimplified(t, q, n)
		}
		expr, ok := FTS5(n)
		if ok && expr == "" {
			t.Fatalf("FTS5(Parse(%q)) ok with an empty expression", q)
		}
		where, args := SQL(n, "fts")
		if strings.Count(where, "?") != len(args) {
			t.Fatalf("SQL(Parse(%q)) = %q with %d args", q, where, len(args))
		}
		if ok && (len(args) != 1 || args[0] != expr) {
			t.Fatalf("SQL(Parse(%q)) args %q, want the one FTS5 expression %q", q, args, expr)
		}
		for _, d := range fuzzDocs {
			Match(n, d)
		}
	})
}

// checkSimplified checks the invariants Parse promises of its trees: And
// and Or hold at least two children, none of their own kind; no double
// negation; every Term and Phrase word is one non-empty folded token, and a
// prefix has at least 2 characters.
func checkSimplified(t *testing.T, q string, n Node) {
	t.Helper()
	isToken := func(w string) bool {
		return w != "" && reflect.DeepEqual(tokens(w), []string{w})
	}
	switch n := n.(type) {
	case Term:
		if !isToken(n.Text) || (n.Prefix && len([]rune(n.Text)) < 2) {
			t.Fatalf("Parse(%q): bad term %#v", q, n)
		}
	case Phrase:
		if len(n.Words) < 2 {
			t.Fatalf("Parse(%q): phrase of fewer than 2 words %#v", q, n)
		}
		for _, w := range n.Words {
			if !isToken(w) {
				t.Fatalf("Parse(%q): bad phrase word %q", q, w)
			}
		}
		if n.Prefix && len([]rune(n.Words[len(n.Words)-1])) < 2 {
			t.Fatalf("Parse(%q): short prefix %#v", q, n)
		}
	case And:
		if len(n.Children) < 2 {
			t.Fatalf("Parse(%q): And of %d children", q, len(n.Children))
		}
		for _, c := range n.Children {
			if _, ok := c.(And); ok {
				t.Fatalf("Parse(%q): And directly inside And", q)
			}
			checkSimplified(t, q, c)
		}
	case Or:
		if len(n.Children) < 2 {
			t.Fatalf("Parse(%q): Or of %d children", q, len(n.Children))
		}
		for _, c := range n.Children {
			if _, ok := c.(Or); ok {
				t.Fatalf("Parse(%q): Or directly inside Or", q)
			}
			checkSimplified(t, q, c)
		}
	case Not:
		if _, ok := n.Child.(Not); ok {
			t.Fatalf("Parse(%q): double negation", q)
		}
		checkSimplified(t, q, n.Child)
	default:
		t.Fatalf("Parse(%q): unexpected node %#v", q, n)
	}
}

// FuzzFold checks the one-pass Fold against its definition: the tokens of
// the tokeniser joined by single spaces; and AppendFold, after bytes
// already in its buffer, against Fold.
func FuzzFold(f *testing.F) {
	for _, s := range []string{
		"", " ", "Acme Holdings PTY. Ltd", "Smith-Jones Café", "o'brien", "a\u0301b", "\u0301a",
		"ǡ ı İ ſ Ǡ", "\xff\xfe", "日本 企業", "Ünïcödé ÆSØP", "x\ue000y", "12,345.67 ACN 123-456-789",
		"  lead and trail  ", "ΑΘΗΝΑ Москва",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Fold(s), strings.Join(tokens(s), " "); got != want {
			t.Fatalf("Fold(%q) = %q, want %q", s, got, want)
		}
		if got, want := string(AppendFold([]byte(`["x",`), s)), `["x",`+Fold(s); got != want {
			t.Fatalf("AppendFold(%q) after other bytes = %q, want %q", s, got, want)
		}
	})
}
