package watch

import (
	"io"
	"strconv"

	"github.com/noticesd/noticesd/internal/jsontext"
)

// flushAt is the buffer size at which WriteJSON hands bytes to its writer.
const flushAt = 32 << 10

// WriteJSON writes exactly what AppendJSON appends, to w, through a buffer
// of about flushAt bytes: a 50,000-identifier answer (megabytes) is encoded
// without reflection and never held whole.
func (r *ScreenResult) WriteJSON(w io.Writer) error {
	buf, err := r.encode(make([]byte, 0, flushAt+1024), func(b []byte) ([]byte, error) {
		if len(b) < flushAt {
			return b, nil
		}
		_, err := w.Write(b)
		return b[:0], err
	})
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

// AppendJSON appends r as JSON to buf, exactly as encoding/json with HTML
// escaping off would write it (the API's encoding), followed by a newline.
// A 50,000-identifier screen answers with megabytes; this writes them
// without reflection, straight from the fields.
func (r *ScreenResult) AppendJSON(buf []byte) []byte {
	buf, _ = r.encode(buf, nil)
	return buf
}

// encode appends r as JSON and a newline to buf. After each element of
// an array it calls step (when not nil) with the bytes so far, and goes
// on with the buffer step returns (emptied once written); an error of
// step ends the encoding.
func (r *ScreenResult) encode(buf []byte, step func([]byte) ([]byte, error)) ([]byte, error) {
	var err error
	array := func(null bool, n int, elem func(b []byte, i int) []byte) {
		if null {
			buf = append(buf, "null"...)
			return
		}
		buf = append(buf, '[')
		for i := 0; i < n && err == nil; i++ {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = elem(buf, i)
			if step != nil {
				buf, err = step(buf)
			}
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `{"matched":`...)
	array(r.Matched == nil, len(r.Matched), func(b []byte, i int) []byte { return r.Matched[i].appendJSON(b) })
	buf = append(buf, `,"unmatched":`...)
	array(r.Unmatched == nil, len(r.Unmatched), func(b []byte, i int) []byte { return appendString(b, r.Unmatched[i]) })
	buf = append(buf, `,"unresolved":`...)
	array(r.Unresolved == nil, len(r.Unresolved), func(b []byte, i int) []byte { return appendString(b, r.Unresolved[i]) })
	buf = r.appendCounts(buf)
	buf = append(buf, `,"unmatched_companies":`...)
	array(r.UnmatchedCompanies == nil, len(r.UnmatchedCompanies), func(b []byte, i int) []byte { return r.UnmatchedCompanies[i].appendJSON(b) })
	return append(buf, "}\n"...), err
}

// appendCounts appends the counts member.
func (r *ScreenResult) appendCounts(buf []byte) []byte {
	buf = append(buf, `,"counts":{"submitted":`...)
	buf = strconv.AppendInt(buf, int64(r.Counts.Submitted), 10)
	buf = append(buf, `,"matched":`...)
	buf = strconv.AppendInt(buf, int64(r.Counts.Matched), 10)
	buf = append(buf, `,"unmatched":`...)
	buf = strconv.AppendInt(buf, int64(r.Counts.Unmatched), 10)
	buf = append(buf, `,"unresolved":`...)
	buf = strconv.AppendInt(buf, int64(r.Counts.Unresolved), 10)
	return append(buf, '}')
}

func (u *UnmatchedCompany) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"identifier":`...)
	buf = appendString(buf, u.Identifier)
	buf = append(buf, `,"acn":`...)
	buf = appendNullable(buf, u.ACN)
	buf = append(buf, `,"company_name":`...)
	buf = appendNullable(buf, u.CompanyName)
	return append(buf, '}')
}

func (m *Matched) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"identifier":`...)
	buf = appendString(buf, m.Identifier)
	buf = append(buf, `,"acn":`...)
	buf = appendNullable(buf, m.ACN)
	buf = append(buf, `,"company_name":`...)
	buf = appendNullable(buf, m.CompanyName)
	buf = append(buf, `,"notice_count":`...)
	buf = strconv.AppendInt(buf, int64(m.NoticeCount), 10)
	buf = append(buf, `,"latest_notice":`...)
	buf = m.LatestNotice.appendJSON(buf)
	buf = append(buf, `,"insolvency":`...)
	buf = strconv.AppendBool(buf, m.Insolvency)
	buf = append(buf, `,"latest_insolvency_notice":`...)
	if m.LatestInsolvencyNotice == nil {
		buf = append(buf, "null"...)
	} else {
		buf = m.LatestInsolvencyNotice.appendJSON(buf)
	}
	buf = append(buf, `,"notice_purposes":`...)
	buf = appendStrings(buf, m.NoticePurposes)
	return append(buf, '}')
}

func (n *LatestNotice) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"id":`...)
	buf = appendString(buf, n.ID)
	buf = append(buf, `,"notice_seq":`...)
	buf = strconv.AppendInt(buf, n.Seq, 10)
	buf = append(buf, `,"published_date":`...)
	buf = appendString(buf, n.PublishedDate)
	buf = append(buf, `,"notice_type":`...)
	buf = appendString(buf, n.NoticeType)
	buf = append(buf, `,"notice_purpose":`...)
	buf = appendString(buf, n.NoticePurpose)
	buf = append(buf, `,"appointment_type":`...)
	buf = appendNullable(buf, n.AppointmentType)
	return append(buf, '}')
}

func appendStrings(buf []byte, ss []string) []byte {
	if ss == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '[')
	for i, s := range ss {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, s)
	}
	return append(buf, ']')
}

func appendNullable(buf []byte, s *string) []byte {
	if s == nil {
		return append(buf, "null"...)
	}
	return appendString(buf, *s)
}

// appendString appends s as a JSON string the way encoding/json does with
// HTML escaping off (jsontext.AppendString).
func appendString(buf []byte, s string) []byte { return jsontext.AppendString(buf, s, false) }
