//go:build sqlite_fts5

package elastic

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/store/sqlite"
)

// TestTokenisation runs q against notice texts in both backends and
// compares the full sets of notices found. Text is folded by query.Fold
// into the tokens of SQLite's unicode61 tokeniser, joined by spaces, and
// the whitespace analyzer splits it at those spaces only, so the two find
// the same notices. Each case's notice must be found; its decoy (a text
// the standard analyzer of mapping version 2 confused with it) must not.
func TestTokenisation(t *testing.T) {
	cases := []struct{ name, text, q, decoy string }{
		{"diacritics in text", "CAFÉ SOCIÉTÉ PTY LTD", "cafe societe", ""},
		{"diacritics in q", "Cafe Societe", "café", ""},
		{"decomposed diacritics", "cafe\u0301 de\u0301co", `"café déco"`, ""},
		{"mark at a token's start", "\u0301abc marks", "\u0301abc", ""},
		{"case", "Deed Of Company Arrangement", "DEED of company", ""},
		{"apostrophe splits", "O'CONNOR NOMINEES", "connor", ""},
		{"apostrophe phrase", "O'CONNOR NOMINEES", `"o connor"`, ""},
		{"hyphen splits", "SMITH-JONES HOLDINGS", `"smith jones"`, ""},
		{"section number", "subsection 601AB(3)", "601ab", ""},
		{"decimal splits", "paid 3.5 cents", `"3 5"`, ""},
		{"underscore splits", "ref FOO_BAR", "bar", ""},
		{"ampersand", "K & N FLETCHER", `"k n fletcher"`, ""},
		{"prefix", "administration", "administ*", ""},
		{"phrase prefix", "deed of company arrangement", `"deed of comp*"`, ""},
		{"digits and letters", "ACN 004085616", "004085616", ""},
		{"greek folded case", "ΑΘΗΝΑ", "αθηνα", ""},
		{"fraction in a word", "W½ HOLDINGS PTY LTD", "w½", "W & CO PTY LTD"},
		{"superscript", "area x² measured", "x²", "X RAY MEASURED"},
		{"superscript prefix", "x²y plan", "x²*", "x plan"},
		{"circled digit", "item ① reads", "①", "item 1 reads"},
		{"ideographic zero", "〇 numbered", "〇", "0 numbered"},
		{"emoji between letters", "a😀b emoji", "a😀b", "ab emoji"},
		{"middle dot", "a·b dotted", "a·b", "ab dotted"},
		{"undertie", "a‿b tied", "a‿b", "ab tied"},
		{"soft hyphen", "liqui\u00addator soft", "liqui\u00addator", "liquidator soft"},
		{"zero width joiner", "a\u200db joined", "a\u200db", "ab joined"},
		{"private use", "code \ue000\ue001 here", "\ue000\ue001", "code here"},
		{"private use inside a word", "abc\ue000def here", "abc\ue000def", "abc def here"},
		{"cjk word", "日本語 notice", "日本語", ""},
		{"cjk prefix", "日本語 notice", "日本*", "日 本 notice"},
		{"cjk whole run", "東京商事 notice", "東京商事", ""},
		{"cjk part of a run", "東京 notice", "東京", "東京商事 notice"},
		{"newly assigned symbol", "a\U0001F6D5b temple", "a\U0001F6D5b", "a b temple"},
		{"unassigned code point", "a\u0378b gap", "a\u0378b", "a b gap"},
		{"upper case unicode61 does not fold", "\u037f yot", "\u037f", "\u03f3 yot"},
	}
	var docs []tokenDoc
	for _, c := range cases {
		docs = append(docs, tokenDoc{text: c.text})
		if c.decoy != "" {
			docs = append(docs, tokenDoc{text: c.decoy})
		}
	}
	lite, es := tokenStores(t, "T", docs)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := query.Parse(c.q)
			if err != nil {
				t.Fatal(err)
			}
			a, b := foundIn(t, lite, es, q)
			if !slices.Equal(a, b) {
				t.Errorf("q %q: sqlite finds %v, elastic %v", c.q, textsOf(docs, a), textsOf(docs, b))
			}
			if !slices.Contains(textsOf(docs, a), c.text) {
				t.Errorf("q %q: sqlite does not find %q (it finds %q)", c.q, c.text, textsOf(docs, a))
			}
			if c.decoy != "" && slices.Contains(textsOf(docs, a), c.decoy) {
				t.Errorf("q %q: sqlite finds the decoy %q", c.q, c.decoy)
			}
		})
	}
}

// TestTokenisationSampled: the same comparison over code points sampled
// across the whole range, assigned or not: each notice holds the words
// a<r>b, <r>c and c<r> of four of them, and each code point is searched as
// a<r>b, <r>c* and the phrase "b <r>c".
func TestTokenisationSampled(t *testing.T) {
	var assigned, unassigned []rune
	for r := rune(1); r <= unicode.MaxRune; r++ {
		switch {
		case !utf8.ValidRune(r):
		case unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf, unicode.Co):
			assigned = append(assigned, r)
		default:
			unassigned = append(unassigned, r)
		}
	}
	var rs []rune
	for i := 0; i < 224; i++ {
		rs = append(rs, assigned[i*len(assigned)/224])
	}
	for i := 0; i < 32; i++ {
		rs = append(rs, unassigned[i*len(unassigned)/32])
	}
	const perDoc = 4
	var docs []tokenDoc
	for i := 0; i < len(rs); i += perDoc {
		var words []string
		for _, r := range rs[i : i+perDoc] {
			words = append(words, fmt.Sprintf("a%cb", r), fmt.Sprintf("%cc", r), fmt.Sprintf("c%c", r))
		}
		docs = append(docs, tokenDoc{text: strings.Join(words, " ")})
	}
	lite, es := tokenStores(t, "S", docs)
	searched, found := 0, 0
	for _, r := range rs {
		for _, qs := range []string{fmt.Sprintf("a%cb", r), fmt.Sprintf("%cc*", r), fmt.Sprintf(`"b %cc"`, r)} {
			q, err := query.Parse(qs)
			if err != nil || q == nil {
				continue // not a query (a bare *, a stray quote): neither backend sees it
			}
			searched++
			a, b := foundIn(t, lite, es, q)
			if !slices.Equal(a, b) {
				t.Errorf("U+%04X q %q: sqlite finds %d %v, elastic %d %v", r, qs, len(a), a, len(b), b)
			}
			if len(a) > 0 {
				found++
			}
		}
	}
	// Guard against a vacuous sample.
	if searched < 600 || found < 500 {
		t.Errorf("%d queries searched, %d found notices; want at least 600 and 500", searched, found)
	}
	t.Logf("%d code points, %d queries, %d finding notices", len(rs), searched, found)
}

// tokenDoc is one notice of a tokenisation test: its text.
type tokenDoc struct{ text string }

// tokenStores writes one notice per doc (the doc's text as its text) into
// a fresh embedded store and a fresh Elasticsearch namespace.
func tokenStores(t *testing.T, prefix string, docs []tokenDoc) (*sqlite.Store, *Store) {
	t.Helper()
	if len(docs) > 100 {
		t.Fatalf("%d notices: a search page holds 100", len(docs))
	}
	ctx := context.Background()
	lite := openLite(t)
	es := openTest(t, nil)
	batch := make([]notice.Notice, len(docs))
	for i, d := range docs {
		n := synthNotice(prefix, i)
		n.Text = d.text
		n.CompanyName = fmt.Sprintf("TOKEN CASE %d", i)
		batch[i] = n
	}
	if _, err := lite.UpsertNotices(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if _, err := es.UpsertNotices(ctx, batch); err != nil {
		t.Fatal(err)
	}
	return lite, es
}

// foundIn returns the positions (company "TOKEN CASE <i>") of the notices
// q finds in each backend, sorted.
func foundIn(t *testing.T, lite *sqlite.Store, es *Store, q query.Node) (a, b []int) {
	t.Helper()
	ctx := context.Background()
	f := notice.Filter{Q: q}
	get := func(search func(context.Context, notice.SearchQuery) (notice.SearchPage, error)) []int {
		p, err := search(ctx, notice.SearchQuery{Filter: f, Sort: notice.SortPublishedDesc, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != int64(len(p.Notices)) {
			t.Fatalf("%d notices found, %d on the page", p.Total, len(p.Notices))
		}
		var out []int
		for _, n := range p.Notices {
			var i int
			if _, err := fmt.Sscanf(n.CompanyName, "TOKEN CASE %d", &i); err != nil {
				t.Fatal(err)
			}
			out = append(out, i)
		}
		slices.Sort(out)
		return out
	}
	return get(lite.Search), get(es.Search)
}

func textsOf(docs []tokenDoc, is []int) []string {
	out := make([]string, len(is))
	for k, i := range is {
		out[k] = docs[i].text
	}
	return out
}
