package esdoc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

// TestAppendNotice: the hand-written encoder writes what encoding/json
// writes for a document, for the contract suite's notices, a notice with
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
		want, err := json.Marshal(newDocument(n, 1700000000000+int64(i)))
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendNotice([]byte("x"), &n, 1700000000000+int64(i)); !bytes.Equal(got[1:], want) {
			t.Errorf("notice %d, its texts folded into the document:\n got %s\nwant %s", i, got[1:], want)
		}
	}
}

// FuzzAppendNotice: whatever a notice's texts hold, the document with
// its texts folded straight into it (appendFTS, no escaping pass) is what
// encoding/json writes for newDocument.
func FuzzAppendNotice(f *testing.F) {
	f.Add("Acme Pty Ltd", "Winding up", "Café \"quoted\" <&> \u2028 \xff 日本", "Zoë O'Brien")
	f.Add("\x00\x1f", "\u2029", "ΑΘΗΝΑ Москва \ue000 a\u0301b", "A & B")
	f.Fuzz(func(t *testing.T, name, kind, text, practitioner string) {
		n := notice.Notice{ID: "ntc_x", SourceID: "s", Seq: 1, CompanyName: name, NoticeType: kind, Text: text,
			Practitioners: []notice.Practitioner{{Name: practitioner, Firm: text, Role: "liquidator"}}}
		want, err := json.Marshal(newDocument(n, 1))
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendNotice(nil, &n, 1); !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}

// document is a notice as indexed, the reference AppendNotice is checked
// against: the notice itself (not indexed, the
// answer of every read) and the fields searched, filtered, sorted and
// aggregated on. fts holds the four searchable texts (company name, notice
// type, text, practitioner names and firms), each folded by query.Fold to
// the tokens SQLite's unicode61 tokeniser makes, joined by spaces (where the
// field's whitespace analyzer splits them), one array element each so a
// phrase never spans two.
type document struct {
	ID              string        `json:"id"`
	SourceID        string        `json:"source_id"`
	Seq             int64         `json:"notice_seq"`
	PublishedDate   string        `json:"published_date"`
	PublishedAt     string        `json:"published_at"`
	CollectedAt     string        `json:"collected_at"`
	IndexedAt       int64         `json:"indexed_at"`
	ACN             *string       `json:"acn,omitempty"`
	ABN             *string       `json:"abn,omitempty"`
	AppointmentType *string       `json:"appointment_type,omitempty"`
	NoticePurpose   string        `json:"notice_purpose"`
	NoticeCode      string        `json:"notice_code"`
	State           string        `json:"state"`
	Status          string        `json:"status"`
	Dereg           bool          `json:"dereg"`
	FTS             []string      `json:"fts"`
	Notice          notice.Notice `json:"notice"`
}

// newDocument is the document of a notice (its texts folded here).
func newDocument(n notice.Notice, indexedAt int64) document {
	return documentWith(n, indexedAt, ftsOf(n))
}

// ftsOf is the fts field of a notice: its four searchable texts, each
// folded by query.Fold. (The writer folds them straight into each
// document: appendFTS.)
func ftsOf(n notice.Notice) []string {
	return []string{query.Fold(n.CompanyName), query.Fold(n.NoticeType), query.Fold(n.Text),
		query.Fold(notice.PractitionerText(n.Practitioners))}
}

// documentWith is the document of a notice whose texts are already
// folded (ftsOf).
func documentWith(n notice.Notice, indexedAt int64, fts []string) document {
	if n.Practitioners == nil {
		n.Practitioners = []notice.Practitioner{}
	}
	return document{
		ID: n.ID, SourceID: n.SourceID, Seq: n.Seq, PublishedDate: n.PublishedDate,
		PublishedAt: n.PublishedAt, CollectedAt: n.CollectedAt, IndexedAt: indexedAt,
		ACN: n.ACN, ABN: n.ABN, AppointmentType: n.AppointmentType,
		NoticePurpose: n.NoticePurpose, NoticeCode: n.NoticeCode, State: n.State, Status: n.Status,
		Dereg:  n.IsDeregistration(),
		FTS:    fts,
		Notice: n,
	}
}
