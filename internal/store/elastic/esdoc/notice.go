// Package esdoc is the notice document noticesd indexes in Elasticsearch
// (mappings/notices.json) and its encoder, which writes byte for byte what
// encoding/json writes for it without reflection: a load encodes a million
// of them on the cores Elasticsearch indexes them on. It is a package of
// its own so that fuzzing the encoder (FuzzAppendNotice, in make test)
// builds and instruments a few packages, not the Elasticsearch store's
// test binary with its servers' clients.
package esdoc

import (
	"strconv"

	"github.com/noticesd/noticesd/internal/jsontext"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// Notice is a notice as indexed: the notice itself (not indexed, the
// answer of every read) and the fields searched, filtered, sorted and
// aggregated on. fts holds the four searchable texts (company name, notice
// type, text, practitioner names and firms), each folded by query.Fold to
// the tokens SQLite's unicode61 tokeniser makes, joined by spaces (where the
// field's whitespace analyzer splits them), one array element each so a
// phrase never spans two.
type Notice struct {
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

// NewNotice is the document of a notice (its texts folded here).
func NewNotice(n notice.Notice, indexedAt int64) Notice {
	return NoticeWith(n, indexedAt, FTS(n))
}

// FTS is the fts field of a notice: its four searchable texts, each
// folded by query.Fold. (The writer folds them straight into each
// document: appendFTS.)
func FTS(n notice.Notice) []string {
	return []string{query.Fold(n.CompanyName), query.Fold(n.NoticeType), query.Fold(n.Text),
		query.Fold(notice.PractitionerText(n.Practitioners))}
}

// NoticeWith is the document of a notice whose texts are already
// folded (FTS).
func NoticeWith(n notice.Notice, indexedAt int64, fts []string) Notice {
	if n.Practitioners == nil {
		n.Practitioners = []notice.Practitioner{}
	}
	return Notice{
		ID: n.ID, SourceID: n.SourceID, Seq: n.Seq, PublishedDate: n.PublishedDate,
		PublishedAt: n.PublishedAt, CollectedAt: n.CollectedAt, IndexedAt: indexedAt,
		ACN: n.ACN, ABN: n.ABN, AppointmentType: n.AppointmentType,
		NoticePurpose: n.NoticePurpose, NoticeCode: n.NoticeCode, State: n.State, Status: n.Status,
		Dereg:  n.IsDeregistration(),
		FTS:    fts,
		Notice: n,
	}
}

// AppendNotice appends the JSON of NoticeWith(n, indexedAt, fts) to
// buf, byte for byte what encoding/json writes (TestAppendNotice, which
// also fails when notice.Notice or notice.Practitioner gains a field this
// does not write), without reflection. A nil fts is FTS(n), folded
// straight into buf (appendFTS).
func AppendNotice(buf []byte, n *notice.Notice, indexedAt int64, fts []string) []byte {
	buf = AppendField(buf, `{"id":`, n.ID)
	buf = AppendField(buf, `,"source_id":`, n.SourceID)
	buf = strconv.AppendInt(append(buf, `,"notice_seq":`...), n.Seq, 10)
	buf = AppendField(buf, `,"published_date":`, n.PublishedDate)
	buf = AppendField(buf, `,"published_at":`, n.PublishedAt)
	buf = AppendField(buf, `,"collected_at":`, n.CollectedAt)
	buf = strconv.AppendInt(append(buf, `,"indexed_at":`...), indexedAt, 10)
	if n.ACN != nil {
		buf = AppendField(buf, `,"acn":`, *n.ACN)
	}
	if n.ABN != nil {
		buf = AppendField(buf, `,"abn":`, *n.ABN)
	}
	if n.AppointmentType != nil {
		buf = AppendField(buf, `,"appointment_type":`, *n.AppointmentType)
	}
	buf = AppendField(buf, `,"notice_purpose":`, n.NoticePurpose)
	buf = AppendField(buf, `,"notice_code":`, n.NoticeCode)
	buf = AppendField(buf, `,"state":`, n.State)
	buf = AppendField(buf, `,"status":`, n.Status)
	buf = strconv.AppendBool(append(buf, `,"dereg":`...), n.IsDeregistration())
	buf = append(buf, `,"fts":[`...)
	if fts == nil {
		buf = appendFTS(buf, n)
	} else {
		for i, s := range fts {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendString(buf, s)
		}
	}
	buf = append(buf, ']')
	buf = AppendField(buf, `,"notice":{"id":`, n.ID)
	buf = strconv.AppendInt(append(buf, `,"notice_seq":`...), n.Seq, 10)
	buf = AppendField(buf, `,"source_id":`, n.SourceID)
	buf = appendOptional(buf, `,"source_url":`, n.SourceURL)
	buf = AppendField(buf, `,"published_date":`, n.PublishedDate)
	buf = AppendField(buf, `,"published_at":`, n.PublishedAt)
	buf = AppendField(buf, `,"collected_at":`, n.CollectedAt)
	buf = appendOptional(buf, `,"acn":`, n.ACN)
	buf = appendOptional(buf, `,"abn":`, n.ABN)
	buf = AppendField(buf, `,"company_name":`, n.CompanyName)
	buf = AppendField(buf, `,"notice_type":`, n.NoticeType)
	buf = AppendField(buf, `,"notice_code":`, n.NoticeCode)
	buf = AppendField(buf, `,"notice_purpose":`, n.NoticePurpose)
	buf = appendOptional(buf, `,"appointment_type":`, n.AppointmentType)
	buf = AppendField(buf, `,"state":`, n.State)
	buf = AppendField(buf, `,"status":`, n.Status)
	buf = AppendField(buf, `,"text":`, n.Text)
	buf = append(buf, `,"practitioners":[`...) // never null: NoticeWith makes nil empty
	for i := range n.Practitioners {
		p := &n.Practitioners[i]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = AppendField(buf, `{"name":`, p.Name)
		buf = AppendField(buf, `,"firm":`, p.Firm)
		buf = AppendField(buf, `,"role":`, p.Role)
		buf = append(buf, '}')
	}
	buf = appendOptional(buf, `],"replaces":`, n.Replaces)
	return append(buf, "}}"...)
}

// appendFTS appends the elements of FTS(n) as JSON strings, each
// folded straight into buf (query.AppendFold), with no string made and no
// escaping pass: a folded text is ASCII letters, digits and spaces and the
// UTF-8 of letters and digits, none of which JSON escapes
// (FuzzAppendNotice). Folding them into strings took 2.1 of a
// 1,000,000-notice load's 27.2 client CPU-seconds, before they were escaped
// like any other text (docs/benchmarks.md, 2026-11-24).
func appendFTS(buf []byte, n *notice.Notice) []byte {
	buf = append(query.AppendFold(append(buf, '"'), n.CompanyName), `","`...)
	buf = append(query.AppendFold(buf, n.NoticeType), `","`...)
	buf = append(query.AppendFold(buf, n.Text), `","`...)
	return append(query.AppendFold(buf, notice.PractitionerText(n.Practitioners)), '"')
}

// appendOptional appends key and *v, or null when v is nil.
func appendOptional(buf []byte, key string, v *string) []byte {
	if v == nil {
		return append(append(buf, key...), "null"...)
	}
	return AppendField(buf, key, *v)
}

// AppendField appends key and v as a JSON string: a member of a document
// being written by hand (the notice's here, the register block's in the
// store).
func AppendField(buf []byte, key, v string) []byte {
	return AppendString(append(buf, key...), v)
}

// AppendString appends s as a JSON string byte for byte as json.Marshal
// writes it (jsontext.AppendString, HTML escaping on). Notice texts hold
// quotes and ampersands often enough that handing such strings to
// encoding/json cost a tenth of an ingest's client CPU (docs/benchmarks.md,
// 2026-11-24).
func AppendString(buf []byte, s string) []byte {
	return jsontext.AppendString(buf, s, true)
}
