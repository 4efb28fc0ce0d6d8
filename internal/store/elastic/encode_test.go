package elastic

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

// TestAppendRegisterDoc: the hand-written encoder writes what
// encoding/json writes for a registerDoc, for plain rows and for strings
// that need escaping; what it writes decodes back to the row (but for
// the invalid UTF-8, which becomes U+FFFD either way).
func TestAppendRegisterDoc(t *testing.T) {
	rows := storetest.RegisterRows()
	odd := rows[0]
	odd.CompanyName = "Smith & Jones <\"Café\"> \\ \t\x01 日本 \xff"
	odd.Status = ""
	rows = append(rows, odd, notice.RegisterRow{})
	for i, r := range rows {
		want, err := json.Marshal(registerDoc{Row: int64(i), ACN: r.ACN, ABN: r.ABN, Data: r})
		if err != nil {
			t.Fatal(err)
		}
		got := appendRegisterDoc(nil, int64(i), &r)
		if !bytes.Equal(got, want) {
			t.Errorf("row %d:\n got %s\nwant %s", i, got, want)
		}
		var back registerDoc
		if err := json.Unmarshal(got, &back); err != nil || back.Row != int64(i) || (i != len(rows)-2 && !reflect.DeepEqual(back.Data, r)) {
			t.Errorf("row %d does not decode back: %+v, %v", i, back, err)
		}
	}
}

// TestAppendNoticeDoc: the hand-written encoder writes what encoding/json
// writes for a noticeDoc, for the contract suite's notices, a notice with
// every optional field nil and one with strings that need escaping; and
// notice.Notice and notice.Practitioner still have the fields it writes.
func TestAppendNoticeDoc(t *testing.T) {
	if n, p := reflect.TypeOf(notice.Notice{}).NumField(), reflect.TypeOf(notice.Practitioner{}).NumField(); n != 19 || p != 3 {
		t.Fatalf("notice.Notice has %d fields and notice.Practitioner %d (appendNoticeDoc writes 19 and 3): teach appendNoticeDoc the new ones", n, p)
	}
	odd := notice.Notice{ID: "ntc_x", SourceID: "<&>", Text: "Café \"quoted\" \\ \n\t\x00 日本 \xff",
		CompanyName: "Zoë Ltd \x7f", NoticeType: "Café\u2028line", NoticeCode: "日本\u2029", Status: "ÆSØP — ünïcödé",
		Practitioners: []notice.Practitioner{{Name: "Zoë O'Brien", Firm: "A & B", Role: "liquidator"}}}
	ns := append(storetest.Notices(t), notice.Notice{SourceID: "bare"}, odd)
	for i, n := range ns {
		n.Seq = int64(i + 1)
		fts := noticeFTS(n)
		want, err := json.Marshal(noticeDocWith(n, 1700000000000+int64(i), fts))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendNoticeDoc(nil, &n, 1700000000000+int64(i), fts); !bytes.Equal(got, want) {
			t.Errorf("notice %d:\n got %s\nwant %s", i, got, want)
		}
	}
}
