package watch

import (
	"bufio"
	"slices"
	"strconv"
	"strings"

	"github.com/noticesd/noticesd/internal/csvout"
	"github.com/noticesd/noticesd/internal/ident"
)

// Upload is a CSV body of POST /v1/match as it was sent, kept so the CSV
// answer can give it back with the results appended: its header row (nil
// without one) and every row after it in order, blank and repeated rows
// included.
type Upload struct {
	header []string
	rows   []uploadRow
}

// uploadRow is one row of an Upload: its cells as sent and its normalised
// identifier ("" for a row whose cells are all blank).
type uploadRow struct {
	cells []string
	id    string
}

// screenRow is one identifier's result as the CSV columns read it: result
// is matched, unmatched or unresolved ("" for a blank uploaded row), m is
// set when matched.
type screenRow struct {
	id, result string
	m          *Matched
	u          *UnmatchedCompany // when unmatched, if the screen gave it
}

// screenColumns are the result columns of the CSV answer of POST
// /v1/match, in order: each column's name and its cell for a row. Both
// CSV forms (one row per identifier, and an upload given back) write
// exactly these; a new result column is added here only.
var screenColumns = []struct {
	name string
	cell func(r screenRow) string
}{
	{"identifier", func(r screenRow) string { return r.id }},
	{"result", func(r screenRow) string { return r.result }},
	{"acn", func(r screenRow) string {
		switch {
		case r.m != nil:
			return deref(r.m.ACN)
		case r.u != nil:
			return deref(r.u.ACN)
		}
		return ""
	}},
	{"company_name", func(r screenRow) string {
		switch {
		case r.m != nil:
			return deref(r.m.CompanyName)
		case r.u != nil:
			return deref(r.u.CompanyName)
		}
		return ""
	}},
	{"notice_count", func(r screenRow) string {
		switch {
		case r.m != nil:
			return strconv.Itoa(r.m.NoticeCount)
		case r.result == resultUnmatched:
			return "0"
		}
		return ""
	}},
	{"latest_notice_id", matchedCell(func(m *Matched) string { return m.LatestNotice.ID })},
	{"latest_published_date", matchedCell(func(m *Matched) string { return m.LatestNotice.PublishedDate })},
	{"latest_notice_purpose", matchedCell(func(m *Matched) string { return m.LatestNotice.NoticePurpose })},
	{"insolvency", func(r screenRow) string {
		switch {
		case r.m != nil:
			return strconv.FormatBool(r.m.Insolvency)
		case r.result == resultUnmatched:
			return "false"
		}
		return ""
	}},
	{"latest_insolvency_notice_id", insolvencyCell(func(n *LatestNotice) string { return n.ID })},
	{"latest_insolvency_published_date", insolvencyCell(func(n *LatestNotice) string { return n.PublishedDate })},
	{"latest_insolvency_notice_purpose", insolvencyCell(func(n *LatestNotice) string { return n.NoticePurpose })},
	{"notice_purposes", matchedCell(func(m *Matched) string { return strings.Join(m.NoticePurposes, PurposeSeparator) })},
}

// PurposeSeparator joins a match's notice purposes in the notice_purposes
// column of the CSV answer.
const PurposeSeparator = "; "

// insolvencyCell is a column whose cell is f of the match's latest
// insolvency notice, empty unless matched with one.
func insolvencyCell(f func(n *LatestNotice) string) func(r screenRow) string {
	return matchedCell(func(m *Matched) string {
		if m.LatestInsolvencyNotice == nil {
			return ""
		}
		return f(m.LatestInsolvencyNotice)
	})
}

// The values of the result column.
const (
	resultMatched    = "matched"
	resultUnmatched  = "unmatched"
	resultUnresolved = "unresolved"
)

// matchedCell is a column whose cell is f of the match, empty unless
// matched.
func matchedCell(f func(m *Matched) string) func(r screenRow) string {
	return func(r screenRow) string {
		if r.m == nil {
			return ""
		}
		return f(r.m)
	}
}

// ScreenCSVColumns are the names of the result columns of the CSV answer
// of POST /v1/match, in order.
var ScreenCSVColumns = func() []string {
	names := make([]string, len(screenColumns))
	for i, c := range screenColumns {
		names[i] = c.name
	}
	return names
}()

// results indexes a screen by identifier.
type results struct {
	matched   map[string]*Matched
	unmatched map[string]bool
	companies map[string]*UnmatchedCompany
}

func (r *ScreenResult) index() results {
	x := results{matched: make(map[string]*Matched, len(r.Matched)), unmatched: make(map[string]bool, len(r.Unmatched))}
	for i := range r.Matched {
		x.matched[r.Matched[i].Identifier] = &r.Matched[i]
	}
	for _, u := range r.Unmatched {
		x.unmatched[u] = true
	}
	x.companies = make(map[string]*UnmatchedCompany, len(r.UnmatchedCompanies))
	for i := range r.UnmatchedCompanies {
		x.companies[r.UnmatchedCompanies[i].Identifier] = &r.UnmatchedCompanies[i]
	}
	return x
}

// row is id's result; a blank id is a blank row.
func (x results) row(id string) screenRow {
	switch {
	case id == "":
		return screenRow{}
	case x.matched[id] != nil:
		return screenRow{id: id, result: resultMatched, m: x.matched[id]}
	case x.unmatched[id]:
		return screenRow{id: id, result: resultUnmatched, u: x.companies[id]}
	}
	return screenRow{id: id, result: resultUnresolved}
}

// appendCells appends r's result cells to rec.
func appendCells(rec []string, r screenRow) []string {
	for _, c := range screenColumns {
		rec = append(rec, c.cell(r))
	}
	return rec
}

// WriteCSV writes the screen as CSV (RFC 4180, CRLF line ends): the
// header row, then one row per identifier of ids (the request's distinct
// identifiers) in that order, with its result: matched (with the company
// and its latest notice), unmatched (the register's ACN and name,
// notice_count 0, insolvency false, the other cells empty) or unresolved (all cells after result empty). Cells are written
// by csvout: a company name or notice purpose a spreadsheet would run as a
// formula gets a leading apostrophe unless raw.
func (r *ScreenResult) WriteCSV(w *bufio.Writer, ids []ident.ID, raw bool) error {
	x := r.index()
	cw := csvout.NewWriter(w, raw)
	if err := cw.Write(ScreenCSVColumns); err != nil {
		return err
	}
	rec := make([]string, 0, len(screenColumns))
	for _, id := range ids {
		if err := cw.Write(appendCells(rec[:0], x.row(id.Value))); err != nil {
			return err
		}
	}
	return w.Flush()
}

// UploadHeaderless names the one column of an upload sent without a
// header row, in the header of its answer.
const UploadHeaderless = "submitted"

// WriteUploadCSV writes the screen as CSV for the CSV body it was asked
// with: up's header row (UploadHeaderless for a body without one) and
// then every uploaded row, in the uploaded order, blank and repeated rows
// included, each with its cells as sent and the result columns appended
// (empty for a blank row). Rows are padded with empty cells to the widest
// row, so the result columns line up. A result column whose name the
// upload's header already uses (compared case-insensitively, trimmed) is
// named with the prefix "screen_" until it is unique. Every cell is
// written by csvout (formula-like cells escaped unless raw).
func (r *ScreenResult) WriteUploadCSV(w *bufio.Writer, up *Upload, raw bool) error {
	x := r.index()
	header := up.header
	if header == nil {
		header = []string{UploadHeaderless}
	}
	width := len(header)
	for _, row := range up.rows {
		width = max(width, len(row.cells))
	}
	cw := csvout.NewWriter(w, raw)
	rec := make([]string, 0, width+len(screenColumns))
	rec = append(rec, header...)
	for len(rec) < width {
		rec = append(rec, "")
	}
	if err := cw.Write(append(rec, resultNames(header)...)); err != nil {
		return err
	}
	for _, row := range up.rows {
		rec = append(rec[:0], row.cells...)
		for len(rec) < width {
			rec = append(rec, "")
		}
		if err := cw.Write(appendCells(rec, x.row(row.id))); err != nil {
			return err
		}
	}
	return w.Flush()
}

// resultNames are the result columns' names for an upload with header:
// each name the header (or an earlier result column) already uses gets
// the prefix "screen_" until it is unique.
func resultNames(header []string) []string {
	taken := make([]string, 0, len(header)+len(screenColumns))
	for _, h := range header {
		taken = append(taken, strings.ToLower(strings.TrimSpace(h)))
	}
	names := make([]string, len(screenColumns))
	for i, c := range screenColumns {
		name := c.name
		for slices.Contains(taken, strings.ToLower(name)) {
			name = "screen_" + name
		}
		names[i] = name
		taken = append(taken, strings.ToLower(name))
	}
	return names
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
