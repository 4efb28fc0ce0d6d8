// Package csvout writes the CSV answers of the API (docs/api.md, "CSV"):
// RFC 4180, CRLF at the end of each record, a cell's text as the JSON
// answer has it (a line break inside a cell is kept as it is, not made
// CRLF as encoding/csv's UseCRLF does), and text that a spreadsheet would
// run as a formula made inert: a cell beginning with =, +, -, @, a tab or
// a carriage return gets a leading apostrophe, as OWASP's "CSV Injection"
// advises, unless it is a number. The raw form leaves every cell as it is.
package csvout

import (
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Writer writes records to an io.Writer, one Write each.
type Writer struct {
	w    io.Writer
	raw  bool
	line []byte
}

// NewWriter returns a Writer to w; raw leaves formula-like cells as they
// are.
func NewWriter(w io.Writer, raw bool) *Writer { return &Writer{w: w, raw: raw} }

// Write writes one record and its CRLF.
func (w *Writer) Write(rec []string) error {
	b := w.line[:0]
	for i, f := range rec {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCell(b, f, w.raw)
	}
	b = append(b, '\r', '\n')
	w.line = b
	_, err := w.w.Write(b)
	return err
}

// appendCell appends cell f to b, quoted when RFC 4180 needs it (a comma,
// a double quote, a line break, or leading white space, which some
// readers trim) and, unless raw, with the apostrophe of formula.
func appendCell(b []byte, f string, raw bool) []byte {
	escape := !raw && formula(f)
	if !needsQuotes(f) {
		if escape {
			b = append(b, '\'')
		}
		return append(b, f...)
	}
	b = append(b, '"')
	if escape {
		b = append(b, '\'')
	}
	for {
		i := strings.IndexByte(f, '"')
		if i < 0 {
			break
		}
		b = append(b, f[:i+1]...)
		b = append(b, '"')
		f = f[i+1:]
	}
	b = append(b, f...)
	return append(b, '"')
}

// formula reports whether a spreadsheet opening cell f would read it as a
// formula (or, for a tab or a carriage return first, could): f begins
// with =, +, -, @, a tab or a carriage return and is not a number such
// as -12 or +3.5.
func formula(f string) bool {
	if f == "" {
		return false
	}
	switch f[0] {
	case '=', '@', '\t', '\r':
		return true
	case '+', '-':
		return !number(f[1:])
	}
	return false
}

// number reports whether s is decimal digits with at most one point
// between them.
func number(s string) bool {
	digits, point := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !point && digits > 0 && i < len(s)-1:
			point = true
		default:
			return false
		}
	}
	return digits > 0
}

// needsQuotes reports whether f must be quoted (encoding/csv's rule: a
// comma, a quote, a line break, leading white space, or the text \.).
func needsQuotes(f string) bool {
	if f == "" {
		return false
	}
	if f == `\.` || strings.ContainsAny(f, ",\"\r\n") {
		return true
	}
	r, _ := utf8.DecodeRuneInString(f)
	return unicode.IsSpace(r)
}
