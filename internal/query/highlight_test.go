package query

import (
	"slices"
	"strings"
	"testing"
)

// TestHighlight pins the fragment rule of docs/api.md, "Highlights":
// matched words, escaping, lead and length of a fragment, ellipses, the
// fragment count, prefixes, phrases and negations.
func TestHighlight(t *testing.T) {
	long := strings.Fields("w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17 w18 w19 w20 w21 w22 w23 w24 w25 w26 w27 w28 w29 w30")
	words := func(from, to int) string { return strings.Join(long[from-1:to], " ") }
	text := strings.Join(long, " ")
	tests := []struct {
		name, q, text string
		want          []string
	}{
		{"one word, whole short text", "liquidator", "A liquidator was appointed.",
			[]string{"A <mark>liquidator</mark> was appointed."}},
		{"case and diacritics folded, original kept", "cafe societe", "CAFÉ SOCIÉTÉ PTY LTD (in liquidation)",
			[]string{"<mark>CAFÉ</mark> <mark>SOCIÉTÉ</mark> PTY LTD (in liquidation)"}},
		{"text escaped, marks not", "smith", `<b>Smith & Jones</b> "Smith's"`,
			[]string{`&lt;b&gt;<mark>Smith</mark> &amp; Jones&lt;/b&gt; &#34;<mark>Smith</mark>&#39;s&#34;`}},
		{"prefix", "liquidat*", "liquidator liquidation liquid",
			[]string{"<mark>liquidator</mark> <mark>liquidation</mark> liquid"}},
		{"phrase words one by one", `"deed of company"`, "a deed of company arrangement; the company",
			[]string{"a <mark>deed</mark> <mark>of</mark> <mark>company</mark> arrangement; the <mark>company</mark>"}},
		{"phrase prefix", `"acme hold*"`, "Acme Holdings and Acme Hold Co",
			[]string{"<mark>Acme</mark> <mark>Holdings</mark> and <mark>Acme</mark> <mark>Hold</mark> Co"}},
		{"negated words are not marked", "meeting -creditors", "meeting of creditors",
			[]string{"<mark>meeting</mark> of creditors"}},
		{"NOT and OR", "receiver OR (meeting NOT creditors)", "receiver meeting creditors",
			[]string{"<mark>receiver</mark> <mark>meeting</mark> creditors"}},
		{"only negations: nothing", "-creditors", "meeting of creditors", []string{}},
		{"no match: nothing", "dividend", "meeting of creditors", []string{}},
		{"no text", "dividend", "", []string{}},
		{"lead of 5 words, 20 in all, ellipses", "w10", text,
			[]string{"…" + words(5, 9) + " <mark>w10</mark> " + words(11, 24) + "…"}},
		{"fewer lead words at the start", "w3", text,
			[]string{words(1, 2) + " <mark>w3</mark> " + words(4, 20) + "…"}},
		{"ends at the last word without ellipsis", "w28", text,
			[]string{"…" + words(23, 27) + " <mark>w28</mark> " + words(29, 30)}},
		{"next fragment after the previous, not overlapping it", "w2 OR w22 OR w24", text,
			[]string{words(1, 1) + " <mark>w2</mark> " + words(3, 20) + "…", "…w21 <mark>w22</mark> " + words(23, 23) + " <mark>w24</mark> " + words(25, 30)}},
		{"matches inside a fragment are marked", "w7 OR w9", text,
			[]string{"…" + words(2, 6) + " <mark>w7</mark> w8 <mark>w9</mark> " + words(10, 21) + "…"}},
		{"a whole text keeps its punctuation", "b", "(a, b, c, d.)",
			[]string{"(a, <mark>b</mark>, c, d.)"}},
		{"inside the text a fragment is its words, punctuation around them left out", "w9", "(" + text + ".)",
			[]string{"…" + words(4, 8) + " <mark>w9</mark> " + words(10, 23) + "…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Parse(tt.q)
			if err != nil {
				t.Fatal(err)
			}
			got := Highlight(n, tt.text)
			if got == nil || !slices.Equal(got, tt.want) {
				t.Errorf("Highlight(%q)\n got %q\nwant %q", tt.q, got, tt.want)
			}
		})
	}
	t.Run("at most 3 fragments", func(t *testing.T) {
		var b strings.Builder
		for range 10 {
			b.WriteString("hit " + strings.Repeat("x ", 30))
		}
		n, _ := Parse("hit")
		if got := Highlight(n, b.String()); len(got) != MaxFragments {
			t.Errorf("%d fragments, want %d", len(got), MaxFragments)
		}
	})
	t.Run("nil query", func(t *testing.T) {
		if got := Highlight(nil, "text"); got == nil || len(got) != 0 {
			t.Errorf("got %q, want []", got)
		}
	})
}

// TestByteSpansAreTokens: byteSpans finds the tokens tokenSpans finds,
// folded alike, over texts with diacritics inside and at the start of
// words, other scripts, invalid UTF-8 and separators of every kind.
func TestByteSpansAreTokens(t *testing.T) {
	for _, s := range []string{
		"", "   ", "Notice is given: ACME PTY LTD (ACN 123 456 780).",
		"CAFÉ SOCIÉTÉ e\u0301e \u0301e Ǖber ß ŉ", "日本語 テキスト, 한국어", "x\xffy\xc3", "a\u00a0b\tc\u2028d",
		"W½ x² ① ﬁ", strings.Repeat("ab-cd ", 50),
	} {
		spans, folded := byteSpans(s)
		var got []string
		for _, sp := range spans {
			got = append(got, folded[sp.fold:sp.foldEnd])
			if tokens(s[sp.start:sp.end])[0] != folded[sp.fold:sp.foldEnd] {
				t.Errorf("%q: span %q folds to %q", s, s[sp.start:sp.end], folded[sp.fold:sp.foldEnd])
			}
		}
		if want := tokens(s); !slices.Equal(got, want) {
			t.Errorf("%q: byteSpans %q, tokens %q", s, got, want)
		}
	}
}

// BenchmarkHighlight: the highlight of one notice of `noticesd sample`
// (its text about 600 bytes), the work a search result adds per notice.
func BenchmarkHighlight(b *testing.B) {
	const text = "Notice is given that at a general meeting of members of SINGH FENCING PTY LTD (IN LIQUIDATION) ACN 349 174 563 held on 14 April 2022, it was resolved that the company be wound up voluntarily and for that purpose Wei Patel of Fremont Sinclair, Level 19, 483 Kent Street, Sydney NSW 2000, was appointed liquidator. The company operated a fencing business based in Liverpool, NSW. Dated 19 April 2022. Wei Patel, Liquidator, Fremont Sinclair."
	n, err := Parse(`liquidat* "general meeting" -receiver`)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(Highlight(n, text)) == 0 {
			b.Fatal("no fragment")
		}
	}
}
