package storetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// nameRows is a register for the name search's ranking: exact, prefix and
// word matches of "acme", a former name, a company with two matching
// names, and names whose words only partly match.
func nameRows() []notice.RegisterRow {
	row := func(name, acn, abn, indicator, status string) notice.RegisterRow {
		return notice.RegisterRow{CompanyName: name, ACN: acn, ABN: abn, CurrentNameIndicator: indicator, Status: status, Type: "APTY"}
	}
	return []notice.RegisterRow{
		row("THE ACME CO PTY LTD", "000000301", "", "Y", "REGD"),
		row("ACME PTY LTD", "000000101", "11000000101", "Y", "REGD"),
		row("ACME", "000000501", "", "", "DRGD"), // a former name of ZED
		row("ACME HOLDINGS PTY LTD", "000000201", "", "Y", "REGD"),
		row("ZED PTY LTD", "000000501", "", "Y", "DRGD"),
		row("Acme", "000000401", "", "Y", "REGD"),
		row("ACME HOLDINGS (NSW) PTY LTD", "000000101", "11000000101", "", "REGD"), // ACME PTY LTD's former name
		row("ACMEX MINING PTY LTD", "000000601", "", "Y", "REGD"),
		row("CAFÉ SOCIÉTÉ PTY LTD", "000000701", "", "Y", "REGD"),
		row("ROAD RUNNER PTY LTD", "000000801", "", "Y", "REGD"),
	}
}

// testNames: GET /v1/companies?name=, the company name search of every
// backend: which names match, the ranking (notice.RankNames), one result
// per company by its best name, paging, exact totals and the cap.
func testNames(t *testing.T, b Backend) {
	ctx := context.Background()
	LoadRegister(t, b, nameRows())
	str := func(s string) *string { return &s }
	m := func(acn string, abn *string, name, matched, status string) notice.NameMatch {
		return notice.NameMatch{ACN: acn, ABN: abn, Name: name, MatchedName: matched, Status: status}
	}
	acme := m("000000401", nil, "Acme", "Acme", "REGD")
	zed := m("000000501", nil, "ZED PTY LTD", "ACME", "DRGD")
	holdings := m("000000201", nil, "ACME HOLDINGS PTY LTD", "ACME HOLDINGS PTY LTD", "REGD")
	acmePty := m("000000101", str("11000000101"), "ACME PTY LTD", "ACME PTY LTD", "REGD")
	the := m("000000301", nil, "THE ACME CO PTY LTD", "THE ACME CO PTY LTD", "REGD")
	acmex := m("000000601", nil, "ACMEX MINING PTY LTD", "ACMEX MINING PTY LTD", "REGD")
	tests := []struct {
		name        string
		words       string
		limit, page int
		want        []notice.NameMatch
		total       int64
	}{
		{"exact, then prefix (the last word a prefix), then words; current before former", "acme", 20, 1,
			[]notice.NameMatch{acme, zed, holdings, acmePty, acmex, the}, 6},
		{"a prefix of every name", "acm", 20, 1,
			[]notice.NameMatch{acme, holdings, acmePty, acmex, zed, the}, 6},
		{"paging", "acme", 2, 2, []notice.NameMatch{holdings, acmePty}, 6},
		{"past the end", "acme", 2, 4, []notice.NameMatch{}, 6},
		{"a company by its best name: current prefix over former", "acme holdings", 20, 1,
			[]notice.NameMatch{holdings, m("000000101", str("11000000101"), "ACME PTY LTD", "ACME HOLDINGS (NSW) PTY LTD", "REGD")}, 2},
		{"words in any order", "pty acme", 20, 1, []notice.NameMatch{holdings, acmePty, acmex, the}, 4},
		{"case, diacritics and punctuation folded", "Café-Société", 20, 1,
			[]notice.NameMatch{m("000000701", nil, "CAFÉ SOCIÉTÉ PTY LTD", "CAFÉ SOCIÉTÉ PTY LTD", "REGD")}, 1},
		{"a word must be whole but the last", "acm holdings", 20, 1, []notice.NameMatch{}, 0},
		{"no match", "wile coyote", 20, 1, []notice.NameMatch{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := b.Notices.CompaniesByName(ctx, notice.NameQuery{Words: query.Words(tt.words), Limit: tt.limit, Page: tt.page})
			if err != nil {
				t.Fatal(err)
			}
			got := p.Companies
			if got == nil {
				got = []notice.NameMatch{}
			}
			if !reflect.DeepEqual(got, tt.want) || p.Total != tt.total {
				t.Errorf("got %s (total %d)\nwant %s (total %d)", describeNames(got), p.Total, describeNames(tt.want), tt.total)
			}
		})
	}
	t.Run("more names than MaxNameRows", func(t *testing.T) {
		rows := make([]notice.RegisterRow, notice.MaxNameRows+1)
		for i := range rows {
			rows[i] = notice.RegisterRow{CompanyName: fmt.Sprintf("BIG %d PTY LTD", i), ACN: fmt.Sprintf("%09d", 900000000+i), CurrentNameIndicator: "Y"}
		}
		LoadRegister(t, b, rows)
		_, err := b.Notices.CompaniesByName(ctx, notice.NameQuery{Words: []string{"big"}, Limit: 20, Page: 1})
		if e, ok := errs.As(err); !ok || e.Code != errs.InvalidParameter {
			t.Errorf("%d names: %v, want invalid_parameter", len(rows), err)
		}
		p, err := b.Notices.CompaniesByName(ctx, notice.NameQuery{Words: []string{"big", "7"}, Limit: 1, Page: 1})
		if err != nil || p.Total != 111 || len(p.Companies) != 1 || p.Companies[0].Name != "BIG 7 PTY LTD" {
			t.Errorf("big 7: %+v %v, want 111 companies, BIG 7 PTY LTD first", p, err)
		}
	})
}

func describeNames(ms []notice.NameMatch) string {
	out := "["
	for i, m := range ms {
		if i > 0 {
			out += ", "
		}
		abn := "-"
		if m.ABN != nil {
			abn = *m.ABN
		}
		out += fmt.Sprintf("%s/%s %q by %q %s", m.ACN, abn, m.Name, m.MatchedName, m.Status)
	}
	return out + "]"
}
