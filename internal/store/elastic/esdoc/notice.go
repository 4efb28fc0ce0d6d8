// Package esdoc encodes the notice document indexed in Elasticsearch
// (mappings/notices.json) byte for byte as encoding/json writes the
// reference type in notice_test.go, without reflection (a load encodes a
// million on the cores Elasticsearch indexes on). A package of its own, so
// fuzzing it (FuzzAppendNotice) builds a few packages, not the store's.
package esdoc

import (
	"strconv"

	"github.com/noticesd/noticesd/internal/jsontext"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// AppendNotice appends the document of n to buf (TestAppendNotice also
// fails when notice.Notice gains a field this does not write). Its fts
// field holds n's four searchable texts folded, one element each so that a
// phrase never spans two (appendFTS).
func AppendNotice(buf []byte, n *notice.Notice, indexedAt int64) []byte {
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
	buf = appendFTS(buf, n)
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
	buf = append(buf, `,"practitioners":[`...) // never null: a nil list is written empty
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

// appendFTS appends the fts elements folded straight into buf
// (query.AppendFold), unescaped: folded text is letters, digits and
// spaces, which JSON never escapes (FuzzAppendNotice). Folding into strings
// cost 2.1 of a million-notice load's 27.2 client CPU-seconds
// (docs/benchmarks.md, 2026-11-24).
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

// AppendField appends key and v as a JSON string.
func AppendField(buf []byte, key, v string) []byte {
	return AppendString(append(buf, key...), v)
}

// AppendString appends s as json.Marshal writes it (HTML escaping on);
// encoding/json cost a tenth of an ingest's client CPU on notice texts
// (docs/benchmarks.md, 2026-11-24).
func AppendString(buf []byte, s string) []byte {
	return jsontext.AppendString(buf, s, true)
}
