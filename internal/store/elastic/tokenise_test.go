//go:build sqlite_fts5

package elastic

import (
	"context"
	"fmt"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// TestTokenisation runs q against one notice text in both backends. Text is
// folded by query.Fold before the standard analyzer sees it, so the two
// agree wherever the standard tokenizer keeps a folded token whole. Where
// it does not, the difference is pinned here (same: false) and documented
// in docs/elasticsearch.md; a change in either direction fails the test.
func TestTokenisation(t *testing.T) {
	cases := []struct {
		name, text, q string
		same          bool
	}{
		{"diacritics in text", "CAFÉ SOCIÉTÉ PTY LTD", "cafe societe", true},
		{"diacritics in q", "Cafe Societe", "café", true},
		{"case", "Deed Of Company Arrangement", "DEED of company", true},
		{"apostrophe splits", "O'CONNOR NOMINEES", "connor", true},
		{"apostrophe phrase", "O'CONNOR NOMINEES", `"o connor"`, true},
		{"hyphen splits", "SMITH-JONES HOLDINGS", `"smith jones"`, true},
		{"section number", "subsection 601AB(3)", "601ab", true},
		{"decimal splits", "paid 3.5 cents", `"3 5"`, true},
		{"underscore splits", "ref FOO_BAR", "bar", true},
		{"ampersand", "K & N FLETCHER", `"k n fletcher"`, true},
		{"prefix", "administration", "administ*", true},
		{"phrase prefix", "deed of company arrangement", `"deed of comp*"`, true},
		{"digits and letters", "ACN 004085616", "004085616", true},
		{"greek folded case", "ΑΘΗΝΑ", "αθηνα", true},
		{"cjk word", "日本語 notice", "日本語", true},
		// The standard tokenizer splits CJK ideographs into one token each,
		// so a prefix of a CJK run matches no indexed token.
		{"cjk prefix", "日本語 notice", "日本*", false},
		// Private-use characters are token characters to unicode61 but not
		// to the standard tokenizer, which drops them.
		{"private use", "code \ue000\ue001 here", "\ue000\ue001", false},
	}
	ctx := context.Background()
	lite := openLite(t)
	es := openTest(t, nil)
	batch := make([]notice.Notice, len(cases))
	for i, c := range cases {
		n := synthNotice("T", i)
		n.Text = c.text
		n.CompanyName = fmt.Sprintf("TOKEN CASE %d", i)
		batch[i] = n
	}
	if _, err := lite.UpsertNotices(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if _, err := es.UpsertNotices(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := query.Parse(c.q)
			if err != nil {
				t.Fatal(err)
			}
			f := notice.Filter{Q: q}
			a, err := lite.Search(ctx, notice.SearchQuery{Filter: f, Sort: notice.SortPublishedDesc, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			b, err := es.Search(ctx, notice.SearchQuery{Filter: f, Sort: notice.SortPublishedDesc, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			hit := func(p notice.SearchPage) bool {
				for _, n := range p.Notices {
					if n.ID == batch[i].ID {
						return true
					}
				}
				return false
			}
			if !hit(a) {
				t.Fatalf("sqlite does not find %q in %q; the case is wrong", c.q, c.text)
			}
			if hit(b) != c.same {
				t.Errorf("q %q on %q: elastic finds it %v, want %v (update docs/elasticsearch.md if this changed)", c.q, c.text, hit(b), c.same)
			}
		})
	}
}
