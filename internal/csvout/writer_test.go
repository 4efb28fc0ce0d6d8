package csvout

import (
	"bytes"
	"encoding/csv"
	"testing"
)

// TestWrite: cells a spreadsheet would run as formulas get an apostrophe
// unless raw, numbers and dates do not; quoting is RFC 4180's, and a line
// break inside a cell is written as the cell has it.
func TestWrite(t *testing.T) {
	for _, c := range []struct {
		name, cell, want, raw string
	}{
		{"plain", "Acme Pty Ltd", "Acme Pty Ltd", "Acme Pty Ltd"},
		{"empty", "", "", ""},
		{"equals", "=HYPERLINK(\"http://x\",\"y\")", `"'=HYPERLINK(""http://x"",""y"")"`, `"=HYPERLINK(""http://x"",""y"")"`},
		{"plus", "+61 2 9999", "'+61 2 9999", "+61 2 9999"},
		{"minus", "-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0"},
		{"at", "@SUM(A1)", "'@SUM(A1)", "@SUM(A1)"},
		{"tab", "\t=1", "\"'\t=1\"", "\"\t=1\""},
		{"carriage return", "\r=1", "\"'\r=1\"", "\"\r=1\""},
		{"negative number", "-12", "-12", "-12"},
		{"signed decimal", "+3.5", "+3.5", "+3.5"},
		{"date", "2026-03-01", "2026-03-01", "2026-03-01"},
		{"minus alone", "-", "'-", "-"},
		{"minus point", "-1.", "'-1.", "-1."},
		{"equals inside", "a=1", "a=1", "a=1"},
		{"line feed kept", "a\nb", "\"a\nb\"", "\"a\nb\""},
		{"CRLF kept", "a\r\nb", "\"a\r\nb\"", "\"a\r\nb\""},
		{"comma", "Smith, Jones", `"Smith, Jones"`, `"Smith, Jones"`},
		{"leading space", " x", `" x"`, `" x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, raw := range []bool{false, true} {
				want := c.want
				if raw {
					want = c.raw
				}
				var b bytes.Buffer
				if err := NewWriter(&b, raw).Write([]string{"1", c.cell}); err != nil {
					t.Fatal(err)
				}
				if got, w := b.String(), "1,"+want+"\r\n"; got != w {
					t.Errorf("raw %v: wrote %q, want %q", raw, got, w)
				}
				// Read back, a raw cell is the text written.
				rec, err := csv.NewReader(&b).Read()
				if err != nil {
					t.Fatalf("raw %v: read back: %v", raw, err)
				}
				if raw && c.name != "CRLF kept" && rec[1] != c.cell { // encoding/csv reads a quoted CRLF as LF
					t.Errorf("raw: read back %q, want %q", rec[1], c.cell)
				}
			}
		})
	}
}
