package watch

import (
	"io"
	"strconv"
	"unicode/utf8"
)

// flushAt is the buffer size at which WriteJSON hands bytes to its writer.
const flushAt = 32 << 10

// WriteJSON writes exactly what AppendJSON appends, to w, through a buffer
// of about flushAt bytes: a 50,000-identifier answer (megabytes) is encoded
// without reflection and never held whole.
func (r *ScreenResult) WriteJSON(w io.Writer) error {
	buf := make([]byte, 0, flushAt+1024)
	flush := func(force bool) error {
		if len(buf) < flushAt && !force {
			return nil
		}
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	strs := func(ss []string) error {
		if ss == nil {
			buf = append(buf, "null"...)
			return nil
		}
		buf = append(buf, '[')
		for i, s := range ss {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, s)
			if err := flush(false); err != nil {
				return err
			}
		}
		buf = append(buf, ']')
		return nil
	}
	buf = append(buf, `{"matched":`...)
	if r.Matched == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, '[')
		for i := range r.Matched {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = r.Matched[i].appendJSON(buf)
			if err := flush(false); err != nil {
				return err
			}
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `,"unmatched":`...)
	if err := strs(r.Unmatched); err != nil {
		return err
	}
	buf = append(buf, `,"unresolved":`...)
	if err := strs(r.Unresolved); err != nil {
		return err
	}
	buf = r.appendCounts(buf)
	return flush(true)
}

// AppendJSON appends r as JSON to buf, exactly as encoding/json with HTML
// escaping off would write it (the API's encoding), followed by a newline.
// A 50,000-identifier screen answers with megabytes; this writes them
// without reflection, straight from the fields.
func (r *ScreenResult) AppendJSON(buf []byte) []byte {
	buf = append(buf, `{"matched":`...)
	if r.Matched == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, '[')
		for i := range r.Matched {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = r.Matched[i].appendJSON(buf)
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `,"unmatched":`...)
	buf = appendStrings(buf, r.Unmatched)
	buf = append(buf, `,"unresolved":`...)
	buf = appendStrings(buf, r.Unresolved)
	return r.appendCounts(buf)
}

// appendCounts appends the counts member, the object's end and a newline.
func (r *ScreenResult) appendCounts(buf []byte) []byte {
	buf = append(buf, `,"counts":{"submitted":`...)
	buf = strconv.AppendInt(buf, int64(r.Counts.Submitted), 10)
	buf = append(buf, `,"matched":`...)
	buf = strconv.AppendInt(buf, int64(r.Counts.Matched), 10)
	buf = append(buf, `,"unmatched":`...)
	buf = strconv.AppendInt(buf, int64(r.Counts.Unmatched), 10)
	buf = append(buf, `,"unresolved":`...)
	buf = strconv.AppendInt(buf, int64(r.Counts.Unresolved), 10)
	return append(buf, "}}\n"...)
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
	n := &m.LatestNotice
	buf = append(buf, `,"latest_notice":{"id":`...)
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
	return append(buf, "}}"...)
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

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json does with
// HTML escaping off: control characters escaped (\b \f \n \r \t by name),
// invalid UTF-8 as \ufffd, and U+2028 and U+2029 escaped.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
