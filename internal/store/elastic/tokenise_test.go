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
		// same: both backends find the notice; otherwise only the one
		// named by liteOnly (true: SQLite alone, false: Elasticsearch
		// alone) does.
		same, liteOnly bool
	}{
		{"diacritics in text", "CAFÉ SOCIÉTÉ PTY LTD", "cafe societe", true, false},
		{"diacritics in q", "Cafe Societe", "café", true, false},
		{"case", "Deed Of Company Arrangement", "DEED of company", true, false},
		{"apostrophe splits", "O'CONNOR NOMINEES", "connor", true, false},
		{"apostrophe phrase", "O'CONNOR NOMINEES", `"o connor"`, true, false},
		{"hyphen splits", "SMITH-JONES HOLDINGS", `"smith jones"`, true, false},
		{"section number", "subsection 601AB(3)", "601ab", true, false},
		{"decimal splits", "paid 3.5 cents", `"3 5"`, true, false},
		{"underscore splits", "ref FOO_BAR", "bar", true, false},
		{"ampersand", "K & N FLETCHER", `"k n fletcher"`, true, false},
		{"prefix", "administration", "administ*", true, false},
		{"phrase prefix", "deed of company arrangement", `"deed of comp*"`, true, false},
		{"digits and letters", "ACN 004085616", "004085616", true, false},
		{"greek folded case", "ΑΘΗΝΑ", "αθηνα", true, false},
		{"cjk word", "日本語 notice", "日本語", true, false},
		// The standard tokenizer splits CJK ideographs into one token each,
		// so a prefix of a CJK run matches no indexed token.
		{"cjk prefix", "日本語 notice", "日本*", false, true},
		// and, the other way round, a part of a run is a phrase of its
		// ideographs there, found inside the run; FTS5 finds whole runs
		// only.
		{"cjk part of a run", "東京商事 notice", "東京", false, false},
		// Private-use characters are token characters to unicode61 but not
		// to the standard tokenizer, which drops them.
		{"private use", "code \ue000\ue001 here", "\ue000\ue001", false, true},
		// and a private-use character inside a word splits it there, so
		// its halves are words of their own; to FTS5 it is one word.
		{"private use inside a word", "abc\ue000def here", "abc", false, false},
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
			wantLite, wantES := true, true
			if !c.same {
				wantLite, wantES = c.liteOnly, !c.liteOnly
			}
			if hit(a) != wantLite || hit(b) != wantES {
				t.Errorf("q %q on %q: sqlite finds it %v, elastic %v; want %v and %v (update docs/elasticsearch.md if this changed)",
					c.q, c.text, hit(a), hit(b), wantLite, wantES)
			}
		})
	}
}
