package watch

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
)

// identifierColumns are the header names (case-insensitive) that mark a
// CSV body's first row as a header and name its identifier column.
var identifierColumns = []string{"acn", "abn", "identifier"}

// ParseMatchCSV validates a POST /v1/match body sent as text/csv
// (RFC 4180, UTF-8, an optional byte-order mark): one identifier per line,
// or a header row with a column named acn, abn or identifier
// (case-insensitive; the first such column is read, the others ignored).
// Rows whose cells are all blank are skipped. The filters of this form
// come from the query string (the caller sets Filters); the body is kept
// in Upload, so the CSV answer can give every row back.
// Checks in order: empty_request (no identifier rows), too_many_identifiers
// (counted before any value is looked at), invalid_identifier (a line that
// is not CSV, a row of several cells without a header, a malformed
// identifier: the message names the first one's line, counting from 1 at
// the body's first line, and how many were malformed).
func ParseMatchCSV(body []byte) (MatchRequest, error) {
	var req MatchRequest
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(body) {
		return req, errs.New(errs.InvalidIdentifier, "the CSV body is not UTF-8 (line %d); save the file as CSV UTF-8 and send it again", badUTF8Line(body))
	}
	r := csv.NewReader(bytes.NewReader(body))
	r.FieldsPerRecord = -1
	col, hasHeader := -1, false
	up := &Upload{}
	var values []string
	var lines, rowOf []int
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return req, errs.New(errs.InvalidIdentifier, "the CSV body is malformed on line %d (%v); quote a cell holding commas, quotes or line breaks with double quotes, doubling the quotes inside", pe.StartLine, pe.Err)
			}
			return req, errs.New(errs.InvalidIdentifier, "the CSV body could not be read (%v)", err)
		}
		line, _ := r.FieldPos(0)
		if col < 0 { // the first row decides
			col = HeaderColumn(rec)
			if hasHeader = col >= 0; hasHeader {
				up.header = rec
				continue
			}
			col = 0
		}
		if blank(rec) {
			if len(values) <= ident.MaxIdentifiers {
				up.rows = append(up.rows, uploadRow{cells: rec})
			}
			continue
		}
		if len(values) >= ident.MaxIdentifiers {
			values = append(values, "") // counted only
			continue
		}
		if col >= len(rec) {
			values, lines = append(values, ""), append(lines, line)
			continue
		}
		if len(rec) > 1 && !hasHeader {
			return req, errs.New(errs.InvalidIdentifier, "line %d has %d cells; send one identifier per line, or a header row naming the identifier column acn, abn or identifier", line, len(rec))
		}
		values, lines, rowOf = append(values, rec[col]), append(lines, line), append(rowOf, len(up.rows))
		up.rows = append(up.rows, uploadRow{cells: rec})
	}
	ids, err := req.setCSVIdentifiers(values, lines)
	if err != nil {
		return req, err
	}
	for i, id := range ids {
		up.rows[rowOf[i]].id = id
	}
	req.Upload = up
	return req, nil
}

// setCSVIdentifiers normalises and deduplicates values (whose lines are
// lines) into req.Identifiers, returning each value's normalised form.
func (req *MatchRequest) setCSVIdentifiers(values []string, lines []int) ([]string, error) {
	if len(values) == 0 {
		return nil, errs.New(errs.EmptyRequest, "nothing to screen: the CSV body holds no identifiers; send one ACN or ABN per line, or a header row with a column named acn, abn or identifier")
	}
	if len(values) > ident.MaxIdentifiers {
		return nil, errs.New(errs.TooManyIdentifiers, "%d identifiers were sent; at most %d are allowed per request", len(values), ident.MaxIdentifiers)
	}
	seen := make(map[ident.ID]bool, len(values))
	norm := make([]string, len(values))
	nbad, first := 0, -1
	for i, v := range values {
		id, ok := ident.Normalise(strings.TrimSpace(v))
		if !ok {
			nbad++
			if first < 0 {
				first = i
			}
			continue
		}
		norm[i] = id.Value
		if !seen[id] {
			seen[id] = true
			req.Identifiers = append(req.Identifiers, id)
		}
	}
	if nbad > 0 {
		return nil, errs.New(errs.InvalidIdentifier, "identifier %s on line %d is not a 9-digit ACN or 11-digit ABN (digits; spaces allowed); %d of %d identifiers are malformed",
			errs.Quote(values[first]), lines[first], nbad, len(values))
	}
	return norm, nil
}

// HeaderColumn returns the index of the first cell of rec naming the
// identifier column (acn, abn or identifier, case-insensitive), -1 when
// rec is not a header row: the rule ParseMatchCSV applies to a body's
// first row.
func HeaderColumn(rec []string) int {
	for i, c := range rec {
		c = strings.TrimSpace(c)
		for _, name := range identifierColumns {
			if strings.EqualFold(c, name) {
				return i
			}
		}
	}
	return -1
}

// blank reports whether every cell of rec is empty or spaces (a
// spreadsheet's empty row).
func blank(rec []string) bool {
	for _, c := range rec {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}

// badUTF8Line is the 1-based line of the first byte that is not UTF-8.
func badUTF8Line(b []byte) int {
	line := 1
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			return line
		}
		if b[0] == '\n' {
			line++
		}
		b = b[n:]
	}
	return line
}
