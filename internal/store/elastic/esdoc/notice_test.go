package esdoc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

// TestAppendNotice: the hand-written encoder writes what encoding/json
// writes for a Notice, for the contract suite's notices, a notice with
// every optional field nil and one with strings that need escaping; and
// notice.Notice and notice.Practitioner still have the fields it writes.
func TestAppendNotice(t *testing.T) {
	if n, p := reflect.TypeOf(notice.Notice{}).NumField(), reflect.TypeOf(notice.Practitioner{}).NumField(); n != 19 || p != 3 {
		t.Fatalf("notice.Notice has %d fields and notice.Practitioner %d (AppendNotice writes 19 and 3): teach AppendNotice the new ones", n, p)
	}
	odd := notice.Notice{ID: "ntc_x", SourceID: "<&>", Text: "Café \"quoted\" \\ \n\t\x00 日本 \xff",
		CompanyName: "Zoë Ltd \x7f", NoticeType: "Café\u2028line", NoticeCode: "日本\u2029", Status: "ÆSØP — ünïcödé",
		Practitioners: []notice.Practitioner{{Name: "Zoë O'Brien", Firm: "A & B", Role: "liquidator"}}}
	ns := append(storetest.Notices(t), notice.Notice{SourceID: "bare"}, odd)
	for i, n := range ns {
		n.Seq = int64(i + 1)
		fts := FTS(n)
		want, err := json.Marshal(NoticeWith(n, 1700000000000+int64(i), fts))
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendNotice(nil, &n, 1700000000000+int64(i), fts); !bytes.Equal(got, want) {
			t.Errorf("notice %d:\n got %s\nwant %s", i, got, want)
		}
		if got := AppendNotice([]byte("x"), &n, 1700000000000+int64(i), nil); !bytes.Equal(got[1:], want) {
			t.Errorf("notice %d, its texts folded into the document:\n got %s\nwant %s", i, got[1:], want)
		}
	}
}

// FuzzAppendNotice: whatever a notice's texts hold, the document with
// its texts folded straight into it (appendFTS, no escaping pass) is what
// encoding/json writes for NewNotice.
func FuzzAppendNotice(f *testing.F) {
	f.Add("Acme Pty Ltd", "Winding up", "Café \"quoted\" <&> \u2028 \xff 日本", "Zoë O'Brien")
	f.Add("\x00\x1f", "\u2029", "ΑΘΗΝΑ Москва \ue000 a\u0301b", "A & B")
	f.Fuzz(func(t *testing.T, name, kind, text, practitioner string) {
		n := notice.Notice{ID: "ntc_x", SourceID: "s", Seq: 1, CompanyName: name, NoticeType: kind, Text: text,
			Practitioners: []notice.Practitioner{{Name: practitioner, Firm: text, Role: "liquidator"}}}
		want, err := json.Marshal(NewNotice(n, 1))
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendNotice(nil, &n, 1, nil); !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}
