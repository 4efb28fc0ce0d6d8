package elastic

import (
	"strconv"

	"github.com/noticesd/noticesd/internal/jsontext"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// appendRegisterBlock appends the JSON of a register block (registerBlock)
// holding rows, the first of which is row first of the file, to buf, byte
// for byte what encoding/json writes for it, without reflection: a
// register load encodes millions of rows on the cores Elasticsearch
// indexes them on. An empty ACN or ABN is left out of acn and abn (no read
// looks one up).
func appendRegisterBlock(buf []byte, first int64, rows []notice.RegisterRow) []byte {
	buf = append(buf, `{"row":`...)
	buf = strconv.AppendInt(buf, first, 10)
	buf = append(buf, `,"rows":`...)
	buf = strconv.AppendInt(buf, int64(len(rows)), 10)
	buf = appendIdents(append(buf, `,"acn":[`...), rows, func(r *notice.RegisterRow) string { return r.ACN })
	buf = appendIdents(append(buf, `],"abn":[`...), rows, func(r *notice.RegisterRow) string { return r.ABN })
	buf = append(buf, `],"data":[`...)
	for i := range rows {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendRegisterRow(buf, &rows[i])
	}
	return append(buf, "]}"...)
}

// appendIdents appends the non-empty idents of rows as JSON strings, comma
// separated.
func appendIdents(buf []byte, rows []notice.RegisterRow, ident func(*notice.RegisterRow) string) []byte {
	n := 0
	for i := range rows {
		if v := ident(&rows[i]); v != "" {
			if n > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, v)
			n++
		}
	}
	return buf
}

// appendRegisterRow appends the JSON of r as encoding/json writes it.
func appendRegisterRow(buf []byte, r *notice.RegisterRow) []byte {
	buf = appendField(buf, `{"CompanyName":`, r.CompanyName)
	buf = appendField(buf, `,"ACN":`, r.ACN)
	buf = appendField(buf, `,"Type":`, r.Type)
	buf = appendField(buf, `,"Class":`, r.Class)
	buf = appendField(buf, `,"SubClass":`, r.SubClass)
	buf = appendField(buf, `,"Status":`, r.Status)
	buf = appendField(buf, `,"RegisteredOn":`, r.RegisteredOn)
	buf = appendField(buf, `,"DeregisteredOn":`, r.DeregisteredOn)
	buf = appendField(buf, `,"PreviousState":`, r.PreviousState)
	buf = appendField(buf, `,"StateRegistrationNumber":`, r.StateRegistrationNumber)
	buf = appendField(buf, `,"ModifiedSinceLastReport":`, r.ModifiedSinceLastReport)
	buf = appendField(buf, `,"CurrentNameIndicator":`, r.CurrentNameIndicator)
	buf = appendField(buf, `,"ABN":`, r.ABN)
	buf = appendField(buf, `,"CurrentName":`, r.CurrentName)
	buf = appendField(buf, `,"CurrentNameStart":`, r.CurrentNameStart)
	return append(buf, '}')
}

func appendField(buf []byte, key, v string) []byte {
	return appendJSONString(append(buf, key...), v)
}

// appendJSONString appends s as a JSON string byte for byte as
// json.Marshal writes it (jsontext.AppendString, HTML escaping on). Notice
// texts hold quotes and ampersands often enough that handing such strings
// to encoding/json cost a tenth of an ingest's client CPU
// (docs/benchmarks.md, 2026-11-24).
func appendJSONString(buf []byte, s string) []byte {
	return jsontext.AppendString(buf, s, true)
}

// appendNoticeDoc appends the JSON of noticeDocWith(n, indexedAt, fts) to
// buf, byte for byte what encoding/json writes (TestAppendNoticeDoc, which
// also fails when notice.Notice or notice.Practitioner gains a field this
// does not write), without reflection. A nil fts is noticeFTS(n), folded
// straight into buf (appendFTS).
func appendNoticeDoc(buf []byte, n *notice.Notice, indexedAt int64, fts []string) []byte {
	buf = appendField(buf, `{"id":`, n.ID)
	buf = appendField(buf, `,"source_id":`, n.SourceID)
	buf = strconv.AppendInt(append(buf, `,"notice_seq":`...), n.Seq, 10)
	buf = appendField(buf, `,"published_date":`, n.PublishedDate)
	buf = appendField(buf, `,"published_at":`, n.PublishedAt)
	buf = appendField(buf, `,"collected_at":`, n.CollectedAt)
	buf = strconv.AppendInt(append(buf, `,"indexed_at":`...), indexedAt, 10)
	if n.ACN != nil {
		buf = appendField(buf, `,"acn":`, *n.ACN)
	}
	if n.ABN != nil {
		buf = appendField(buf, `,"abn":`, *n.ABN)
	}
	if n.AppointmentType != nil {
		buf = appendField(buf, `,"appointment_type":`, *n.AppointmentType)
	}
	buf = appendField(buf, `,"notice_purpose":`, n.NoticePurpose)
	buf = appendField(buf, `,"notice_code":`, n.NoticeCode)
	buf = appendField(buf, `,"state":`, n.State)
	buf = appendField(buf, `,"status":`, n.Status)
	buf = strconv.AppendBool(append(buf, `,"dereg":`...), n.IsDeregistration())
	buf = append(buf, `,"fts":[`...)
	if fts == nil {
		buf = appendFTS(buf, n)
	} else {
		for i, s := range fts {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, s)
		}
	}
	buf = append(buf, ']')
	buf = appendField(buf, `,"notice":{"id":`, n.ID)
	buf = strconv.AppendInt(append(buf, `,"notice_seq":`...), n.Seq, 10)
	buf = appendField(buf, `,"source_id":`, n.SourceID)
	buf = appendOptional(buf, `,"source_url":`, n.SourceURL)
	buf = appendField(buf, `,"published_date":`, n.PublishedDate)
	buf = appendField(buf, `,"published_at":`, n.PublishedAt)
	buf = appendField(buf, `,"collected_at":`, n.CollectedAt)
	buf = appendOptional(buf, `,"acn":`, n.ACN)
	buf = appendOptional(buf, `,"abn":`, n.ABN)
	buf = appendField(buf, `,"company_name":`, n.CompanyName)
	buf = appendField(buf, `,"notice_type":`, n.NoticeType)
	buf = appendField(buf, `,"notice_code":`, n.NoticeCode)
	buf = appendField(buf, `,"notice_purpose":`, n.NoticePurpose)
	buf = appendOptional(buf, `,"appointment_type":`, n.AppointmentType)
	buf = appendField(buf, `,"state":`, n.State)
	buf = appendField(buf, `,"status":`, n.Status)
	buf = appendField(buf, `,"text":`, n.Text)
	buf = append(buf, `,"practitioners":[`...) // never null: noticeDocWith makes nil empty
	for i := range n.Practitioners {
		p := &n.Practitioners[i]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendField(buf, `{"name":`, p.Name)
		buf = appendField(buf, `,"firm":`, p.Firm)
		buf = appendField(buf, `,"role":`, p.Role)
		buf = append(buf, '}')
	}
	buf = appendOptional(buf, `],"replaces":`, n.Replaces)
	return append(buf, "}}"...)
}

// appendFTS appends the elements of noticeFTS(n) as JSON strings, each
// folded straight into buf (query.AppendFold), with no string made and no
// escaping pass: a folded text is ASCII letters, digits and spaces and the
// UTF-8 of letters and digits, none of which JSON escapes
// (FuzzAppendNoticeDoc). Folding them into strings took 2.1 of a
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
	return appendField(buf, key, *v)
}
