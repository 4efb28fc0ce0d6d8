package watch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// Filters are a watch's optional filters, as sent in the "filters" member of
// POST /v1/watches and POST /v1/match.
//
// On input each enumerated field is a string or an array of strings (a
// string is a one-value list; it is not split on commas), q is a string in
// the search grammar, include_deregistration a boolean, and null means
// absent. Values are trimmed; blank values are dropped, as are repeats that
// differ only in case (the first spelling is kept). On output every
// enumerated field is an array (empty when it does not filter), q is a
// string or null, and include_deregistration is the effective value (true
// unless the caller sent false).
type Filters struct {
	AppointmentType []string
	NoticePurpose   []string
	NoticeCode      []string
	State           []string
	Status          []string
	// Q is the search-grammar query, "" when absent.
	Q string
	// IncludeDeregistration is nil when the caller did not say; watches and
	// the bulk screen then include deregistration notices.
	IncludeDeregistration *bool
}

// Filter field names as they appear in JSON.
const (
	fieldAppointmentType       = "appointment_type"
	fieldNoticePurpose         = "notice_purpose"
	fieldNoticeCode            = "notice_code"
	fieldState                 = "state"
	fieldStatus                = "status"
	fieldQ                     = "q"
	fieldIncludeDeregistration = "include_deregistration"
)

// filterFields lists the accepted fields inside "filters", for messages.
var filterFields = []string{
	fieldAppointmentType, fieldNoticePurpose, fieldNoticeCode, fieldState,
	fieldStatus, fieldQ, fieldIncludeDeregistration,
}

// Empty reports whether the filters narrow nothing: no enumerated value,
// no q and include_deregistration absent or true (its default on watches).
// include_deregistration false is a filter: it leaves out deregistration
// notices, so a watch of every insolvency notice is not an empty one.
func (f Filters) Empty() bool {
	return len(f.AppointmentType) == 0 && len(f.NoticePurpose) == 0 &&
		len(f.NoticeCode) == 0 && len(f.State) == 0 && len(f.Status) == 0 &&
		strings.TrimSpace(f.Q) == "" && f.includeDeregistration()
}

// includeDeregistration returns the effective value: true unless set false.
func (f Filters) includeDeregistration() bool {
	return f.IncludeDeregistration == nil || *f.IncludeDeregistration
}

// NoticeFilter converts the filters to the filter every backend and the
// matcher understand. include_deregistration defaults to true (a watched
// company's deregistration matters). A q that does not parse gives
// invalid_filter naming filters.q and the parse problem.
func (f Filters) NoticeFilter() (notice.Filter, error) {
	nf := notice.Filter{
		AppointmentType:       slices.Clone(f.AppointmentType),
		NoticePurpose:         slices.Clone(f.NoticePurpose),
		NoticeCode:            slices.Clone(f.NoticeCode),
		State:                 slices.Clone(f.State),
		Status:                slices.Clone(f.Status),
		IncludeDeregistration: f.includeDeregistration(),
	}
	if strings.TrimSpace(f.Q) != "" {
		node, err := query.Parse(f.Q)
		if err != nil {
			return notice.Filter{}, errs.New(errs.InvalidFilter,
				"filters.q is not a valid search query: %s", problem(err))
		}
		nf.Q = node
	}
	return nf, nil
}

// problem returns the message of an *errs.Error, or the error's text.
func problem(err error) string {
	if e, ok := errs.As(err); ok {
		return e.Message
	}
	return err.Error()
}

// filtersJSON is the output form of Filters.
type filtersJSON struct {
	AppointmentType       []string `json:"appointment_type"`
	NoticePurpose         []string `json:"notice_purpose"`
	NoticeCode            []string `json:"notice_code"`
	State                 []string `json:"state"`
	Status                []string `json:"status"`
	Q                     *string  `json:"q"`
	IncludeDeregistration bool     `json:"include_deregistration"`
}

// MarshalJSON writes the output form: arrays always, q null when absent,
// include_deregistration as its effective value.
func (f Filters) MarshalJSON() ([]byte, error) {
	out := filtersJSON{
		AppointmentType:       nonNil(f.AppointmentType),
		NoticePurpose:         nonNil(f.NoticePurpose),
		NoticeCode:            nonNil(f.NoticeCode),
		State:                 nonNil(f.State),
		Status:                nonNil(f.Status),
		IncludeDeregistration: f.includeDeregistration(),
	}
	if strings.TrimSpace(f.Q) != "" {
		q := f.Q
		out.Q = &q
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads the input form with the same rules as a request
// (unknown fields and wrong types are invalid_filter), so a stored watch's
// filters read back exactly as they were accepted. It does not parse q.
func (f *Filters) UnmarshalJSON(b []byte) error {
	got, err := parseFilters(b)
	if err != nil {
		return err
	}
	*f = got
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// parseFilters decodes the "filters" member. Unknown fields (all of them,
// sorted) and wrong value types are invalid_filter naming the field. q is
// not parsed here (see checkQ).
func parseFilters(raw json.RawMessage) (Filters, error) {
	var f Filters
	if raw == nil || isNull(raw) {
		return f, nil
	}
	var m map[string]json.RawMessage
	if !isObject(raw) || json.Unmarshal(raw, &m) != nil {
		return f, errs.New(errs.InvalidFilter,
			"filters must be a JSON object with any of the fields %s", strings.Join(filterFields, ", "))
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(filterFields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return f, errs.New(errs.InvalidFilter,
			"unknown filter field(s) %s; the accepted fields are %s",
			quoteList("filters.", unknown), strings.Join(filterFields, ", "))
	}
	enum := []struct {
		name string
		dst  *[]string
	}{
		{fieldAppointmentType, &f.AppointmentType},
		{fieldNoticePurpose, &f.NoticePurpose},
		{fieldNoticeCode, &f.NoticeCode},
		{fieldState, &f.State},
		{fieldStatus, &f.Status},
	}
	for _, e := range enum {
		v, ok := m[e.name]
		if !ok {
			continue
		}
		vals, err := stringOrList(v)
		if err != nil {
			return Filters{}, errs.New(errs.InvalidFilter,
				"filters.%s must be a string or an array of strings", e.name)
		}
		*e.dst = vals
	}
	if v, ok := m[fieldQ]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &f.Q); err != nil {
			return Filters{}, errs.New(errs.InvalidFilter, "filters.q must be a string")
		}
	}
	if v, ok := m[fieldIncludeDeregistration]; ok && !isNull(v) {
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return Filters{}, errs.New(errs.InvalidFilter,
				"filters.include_deregistration must be true or false")
		}
		f.IncludeDeregistration = &b
	}
	return f, nil
}

// checkQ parses q, reporting a bad one as invalid_filter.
func (f Filters) checkQ() error {
	_, err := f.NoticeFilter()
	return err
}

// stringOrList decodes a string or an array of strings; null is no values.
// Values are trimmed, blanks dropped and case-insensitive repeats removed.
func stringOrList(raw json.RawMessage) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var list []string
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		list = []string{one}
	} else {
		// Elements decode through pointers: a null element would
		// otherwise pass as "" and be dropped as a blank.
		var elems []*string
		if err := json.Unmarshal(raw, &elems); err != nil {
			return nil, err
		}
		for _, e := range elems {
			if e == nil {
				return nil, errors.New("null element")
			}
			list = append(list, *e)
		}
	}
	var out []string
	seen := make(map[string]struct{}, len(list))
	for _, v := range list {
		v = strings.TrimSpace(v)
		key := strings.ToLower(v)
		if _, dup := seen[key]; v == "" || dup {
			continue
		}
		seen[key] = struct{}{}
		out = append(out, v)
	}
	return out, nil
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

func isObject(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

// quoteList renders names as "a", "b" with an optional prefix on each.
// Each name is cut to errs.QuoteLimit bytes and at most maxListed are named,
// so a body of many long unknown names still gives a short message.
func quoteList(prefix string, names []string) string {
	const maxListed = 5
	q := make([]string, 0, min(len(names), maxListed)+1)
	for _, n := range names[:min(len(names), maxListed)] {
		q = append(q, errs.Quote(prefix+n))
	}
	if len(names) > maxListed {
		q = append(q, fmt.Sprintf("and %d more", len(names)-maxListed))
	}
	return strings.Join(q, ", ")
}

// StoredFilters is how backends keep a watch's filters: the input form,
// with include_deregistration null when the caller did not say, so the
// filters read back exactly as accepted. Convert with StoredFilters(f)
// and Filters(sf).
type StoredFilters struct {
	AppointmentType       []string `json:"appointment_type,omitempty"`
	NoticePurpose         []string `json:"notice_purpose,omitempty"`
	NoticeCode            []string `json:"notice_code,omitempty"`
	State                 []string `json:"state,omitempty"`
	Status                []string `json:"status,omitempty"`
	Q                     string   `json:"q,omitempty"`
	IncludeDeregistration *bool    `json:"include_deregistration,omitempty"`
}
