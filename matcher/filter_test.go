package matcher

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// fixture returns the liquidation notice of testdata/notice.json.
func fixture(t testing.TB) notice.Notice {
	t.Helper()
	b, err := os.ReadFile("testdata/notice.json")
	if err != nil {
		t.Fatal(err)
	}
	var n notice.Notice
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func mustQ(t testing.TB, q string) query.Node {
	t.Helper()
	n, err := query.Parse(q)
	if err != nil {
		t.Fatalf("parse %q: %v", q, err)
	}
	return n
}

func TestFilterMatches(t *testing.T) {
	dereg := func(n *notice.Notice) { n.NoticePurpose = "DEREGISTRATION"; n.AppointmentType = nil }
	noAppt := func(n *notice.Notice) { n.AppointmentType = nil }
	tests := []struct {
		name   string
		filter notice.Filter
		edit   func(*notice.Notice)
		want   bool
	}{
		{"no filter", notice.Filter{}, nil, true},
		{"state", notice.Filter{State: []string{"NSW"}}, nil, true},
		{"state other case", notice.Filter{State: []string{"nsw"}}, nil, true},
		{"state one of several", notice.Filter{State: []string{"VIC", "Nsw"}}, nil, true},
		{"state miss", notice.Filter{State: []string{"VIC"}}, nil, false},
		{"appointment_type", notice.Filter{AppointmentType: []string{"creditors' voluntary liquidation"}}, nil, true},
		{"appointment_type miss", notice.Filter{AppointmentType: []string{"Court Liquidation"}}, nil, false},
		{"appointment_type on a notice without one", notice.Filter{AppointmentType: []string{"Court Liquidation"}}, noAppt, false},
		{"notice_purpose", notice.Filter{NoticePurpose: []string{"APPOINTMENT"}}, nil, true},
		{"notice_purpose miss", notice.Filter{NoticePurpose: []string{"Meeting"}}, nil, false},
		{"notice_code", notice.Filter{NoticeCode: []string{"aplq"}}, nil, true},
		{"notice_code miss", notice.Filter{NoticeCode: []string{"APRE"}}, nil, false},
		{"status", notice.Filter{Status: []string{"in liquidation"}}, nil, true},
		{"status miss", notice.Filter{Status: []string{"Registered"}}, nil, false},
		{"all pass", notice.Filter{State: []string{"NSW"}, Status: []string{"In Liquidation"}, NoticeCode: []string{"APLQ"}, Q: mustQ(t, "liquidator")}, nil, true},
		{"all must pass", notice.Filter{State: []string{"NSW"}, Status: []string{"Registered"}, NoticeCode: []string{"APLQ"}}, nil, false},
		{"deregistration excluded", notice.Filter{}, dereg, false},
		{"deregistration included", notice.Filter{IncludeDeregistration: true}, dereg, true},
		{"from inclusive", notice.Filter{From: "2026-03-02"}, nil, true},
		{"from after", notice.Filter{From: "2026-03-03"}, nil, false},
		{"to inclusive", notice.Filter{To: "2026-03-02"}, nil, true},
		{"to before", notice.Filter{To: "2026-03-01"}, nil, false},
		{"q word in text", notice.Filter{Q: mustQ(t, "Liquidator")}, nil, true},
		{"q word missing", notice.Filter{Q: mustQ(t, "receiver")}, nil, false},
		{"q company name", notice.Filter{Q: mustQ(t, "monaka")}, nil, true},
		{"q practitioner phrase", notice.Filter{Q: mustQ(t, `"jane citizen"`)}, nil, true},
		{"q phrase from name into firm, as in the full-text index", notice.Filter{Q: mustQ(t, `"citizen citizen partners"`)}, nil, true},
		{"q negation", notice.Filter{Q: mustQ(t, "-liquidator")}, nil, false},
		{"q with failing state", notice.Filter{Q: mustQ(t, "liquidator"), State: []string{"WA"}}, nil, false},
		{"company by acn", notice.Filter{Company: &ident.ID{Value: "000000019", Kind: ident.ACN}}, nil, true},
		{"company by abn", notice.Filter{Company: &ident.ID{Value: "89000000019", Kind: ident.ABN}}, nil, true},
		{"company other", notice.Filter{Company: &ident.ID{Value: "000000028", Kind: ident.ACN}}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := fixture(t)
			if tt.edit != nil {
				tt.edit(&n)
			}
			if got := FilterMatches(tt.filter, &n, nil); got != tt.want {
				t.Errorf("FilterMatches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFilterMatchesUsesGivenDoc(t *testing.T) {
	n := fixture(t)
	f := notice.Filter{Q: mustQ(t, "receiver")}
	if FilterMatches(f, &n, nil) {
		t.Fatal("receiver is not in the notice")
	}
	if !FilterMatches(f, &n, query.NewDoc("appointed a receiver")) {
		t.Error("the doc passed in was not used")
	}
}
