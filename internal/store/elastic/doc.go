package elastic

import (
	"encoding/json"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// noticeDoc is a notice as indexed: the notice itself (not indexed, the
// answer of every read) and the fields searched, filtered, sorted and
// aggregated on. fts holds the four searchable texts (company name, notice
// type, text, practitioner names and firms), each folded by query.Fold to
// the tokens SQLite's unicode61 tokeniser makes, joined by spaces (where the
// field's whitespace analyzer splits them), one array element each so a
// phrase never spans two.
type noticeDoc struct {
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

// newNoticeDoc is the document of a notice (its texts folded here).
func newNoticeDoc(n notice.Notice, indexedAt int64) noticeDoc {
	return noticeDocWith(n, indexedAt, noticeFTS(n))
}

// noticeFTS is the fts field of a notice: its four searchable texts, each
// folded by query.Fold. (The writer folds them straight into each
// document: appendFTS.)
func noticeFTS(n notice.Notice) []string {
	return []string{query.Fold(n.CompanyName), query.Fold(n.NoticeType), query.Fold(n.Text),
		query.Fold(notice.PractitionerText(n.Practitioners))}
}

// noticeDocWith is the document of a notice whose texts are already
// folded (noticeFTS).
func noticeDocWith(n notice.Notice, indexedAt int64, fts []string) noticeDoc {
	if n.Practitioners == nil {
		n.Practitioners = []notice.Practitioner{}
	}
	return noticeDoc{
		ID: n.ID, SourceID: n.SourceID, Seq: n.Seq, PublishedDate: n.PublishedDate,
		PublishedAt: n.PublishedAt, CollectedAt: n.CollectedAt, IndexedAt: indexedAt,
		ACN: n.ACN, ABN: n.ABN, AppointmentType: n.AppointmentType,
		NoticePurpose: n.NoticePurpose, NoticeCode: n.NoticeCode, State: n.State, Status: n.Status,
		Dereg:  n.IsDeregistration(),
		FTS:    fts,
		Notice: n,
	}
}

// hit is one search hit of a notice search.
type hit struct {
	ID      string          `json:"_id"`
	Version int64           `json:"_version"`
	Source  json.RawMessage `json:"_source"`
	Sort    []any           `json:"sort"`
}

// searchAnswer is the part of a _search answer the store reads.
type searchAnswer struct {
	Hits struct {
		Total struct {
			Value int64 `json:"value"`
		} `json:"total"`
		Hits []hit `json:"hits"`
	} `json:"hits"`
	Aggregations map[string]json.RawMessage `json:"aggregations"`
}

// noticeOf decodes the notice of a hit's _source.
func noticeOf(src json.RawMessage) (notice.Notice, error) {
	var d struct {
		Notice notice.Notice `json:"notice"`
	}
	if err := json.Unmarshal(src, &d); err != nil {
		return notice.Notice{}, err
	}
	if d.Notice.Practitioners == nil {
		d.Notice.Practitioners = []notice.Practitioner{}
	}
	return d.Notice, nil
}

// collectedAt decodes collected_at of a hit's _source.
func collectedAt(src json.RawMessage) (string, error) {
	var d struct {
		CollectedAt string `json:"collected_at"`
	}
	err := json.Unmarshal(src, &d)
	return d.CollectedAt, err
}
