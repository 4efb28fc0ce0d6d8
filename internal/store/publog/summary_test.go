package publog

import (
	"reflect"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
)

// TestSummaryRoundTrip: every notice a summary is made of decodes to the
// same fields, whatever bytes its text fields hold (ingest accepts any
// valid UTF-8, the separator byte included).
func TestSummaryRoundTrip(t *testing.T) {
	str := func(s string) *string { return &s }
	base := notice.Notice{ID: "n-1", Seq: 42, PublishedDate: "2026-11-02", PublishedAt: "2026-11-02T10:00:00Z",
		NoticeType: "Winding up", NoticeCode: "WUP", NoticePurpose: "winding_up", State: "NSW", Status: "REGD",
		ACN: str("123456789"), ABN: str("12123456789"), CompanyName: "ACME PTY LTD"}
	for _, tc := range []struct {
		name string
		edit func(n *notice.Notice)
	}{
		{"plain", func(n *notice.Notice) {}},
		{"no identifiers or appointment", func(n *notice.Notice) { n.ACN, n.ABN = nil, nil }},
		{"appointment", func(n *notice.Notice) { n.AppointmentType = str("Liquidator") }},
		{"separator in the company name", func(n *notice.Notice) { n.CompanyName = "ACME\x1fPTY LTD" }},
		{"separator in the notice type", func(n *notice.Notice) { n.NoticeType = "Winding\x1fup" }},
		{"escape byte in the id", func(n *notice.Notice) { n.ID = "\x1en-1" }},
		{"NUL as the appointment", func(n *notice.Notice) { n.AppointmentType = str("\x00") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := base
			tc.edit(&n)
			var got notice.Notice
			var ptrs [3]string
			if err := DecodeSummaryInto(EncodeSummary(&n), &got, &ptrs); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, n) {
				t.Fatalf("decoded %+v, want %+v", got, n)
			}
		})
	}
}
