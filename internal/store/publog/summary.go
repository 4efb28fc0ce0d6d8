package publog

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/noticesd/noticesd/internal/notice"
)

// sep separates the fields of a summary (one byte). A notice whose fields
// hold sep or esc (ingest takes any valid UTF-8), or whose appointment type
// is "\x00", is written instead as esc followed by a JSON summary (rare, so
// the common form stays the short one).
const (
	sep = "\x1f"
	esc = "\x1e"
)

// jsonSummary is the escaped form of a summary.
type jsonSummary struct {
	F   [13]string `json:"f"`
	App *string    `json:"app,omitempty"`
}

// EncodeSummary keeps what the bulk screen and the matcher need of a
// notice: id, seq, published date and instant, type, code, purpose,
// appointment type ("\x00" for none), state, status, acn, abn (empty for
// none), company name. The publish log's entries and the screen's
// summaries carry it.
func EncodeSummary(n *notice.Notice) string {
	app := "\x00"
	if n.AppointmentType != nil {
		app = *n.AppointmentType
	}
	id := Idents(n)
	f := [13]string{n.ID, strconv.FormatInt(n.Seq, 10), n.PublishedDate, n.PublishedAt, n.NoticeType,
		n.NoticeCode, n.NoticePurpose, app, n.State, n.Status, id[0], id[1], n.CompanyName}
	plain := n.AppointmentType == nil || *n.AppointmentType != "\x00"
	for _, v := range f {
		plain = plain && !strings.ContainsAny(v, sep+esc)
	}
	if plain {
		return strings.Join(f[:], sep)
	}
	b, _ := json.Marshal(jsonSummary{F: f, App: n.AppointmentType}) // strings only: cannot fail
	return esc + string(b)
}

// DecodeSummaryInto decodes s into n; n's pointer fields (appointment
// type, acn, abn) point into ptrs, so a caller decoding many summaries
// allocates their targets once.
func DecodeSummaryInto(s string, n *notice.Notice, ptrs *[3]string) error {
	var f [13]string
	if strings.HasPrefix(s, esc) {
		var j jsonSummary
		if err := json.Unmarshal([]byte(s[len(esc):]), &j); err != nil {
			return fmt.Errorf("publog: unreadable notice summary %q", s)
		}
		if err := decodeFields(j.F, s, n, ptrs); err != nil {
			return err
		}
		if j.App != nil {
			ptrs[0] = *j.App
			n.AppointmentType = &ptrs[0]
		}
		return nil
	}
	rest := s
	for i := 0; i < 12; i++ {
		j := strings.IndexByte(rest, sep[0])
		if j < 0 {
			return fmt.Errorf("publog: unreadable notice summary %q", s)
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	if strings.IndexByte(rest, sep[0]) >= 0 {
		return fmt.Errorf("publog: unreadable notice summary %q", s)
	}
	f[12] = rest
	return decodeFields(f, s, n, ptrs)
}

// decodeFields sets n from a summary's fields (s, for the error).
func decodeFields(f [13]string, s string, n *notice.Notice, ptrs *[3]string) error {
	seq, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return fmt.Errorf("publog: unreadable notice summary %q", s)
	}
	*n = notice.Notice{ID: f[0], Seq: seq, PublishedDate: f[2], PublishedAt: f[3], NoticeType: f[4], NoticeCode: f[5],
		NoticePurpose: f[6], State: f[8], Status: f[9], CompanyName: f[12]}
	if f[7] != "\x00" {
		ptrs[0] = f[7]
		n.AppointmentType = &ptrs[0]
	}
	if f[10] != "" {
		ptrs[1] = f[10]
		n.ACN = &ptrs[1]
	}
	if f[11] != "" {
		ptrs[2] = f[11]
		n.ABN = &ptrs[2]
	}
	return nil
}

// Idents returns a notice's acn and abn ("" when absent).
func Idents(n *notice.Notice) [2]string {
	var out [2]string
	if n.ACN != nil {
		out[0] = *n.ACN
	}
	if n.ABN != nil {
		out[1] = *n.ABN
	}
	return out
}
