package ingest

import (
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
)

func TestRegisterDate(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"08/01/1990", "1990-01-08", true},
		{"9/10/1989", "1989-10-09", true},
		{"1/2/2003", "2003-02-01", true},
		{"29/02/2000", "2000-02-29", true},
		{"29/02/2024", "2024-02-29", true},
		{"31/12/1899", "1899-12-31", true},
		{"29/02/1900", "", false},
		{"29/02/2023", "", false},
		{"31/02/1990", "", false},
		{"31/04/1990", "", false},
		{"00/01/1990", "", false},
		{"01/13/1990", "", false},
		{"01/00/1990", "", false},
		{"1990-01-08", "", false},
		{"08/01/90", "", false},
		{"08/01/19900", "", false},
		{"008/01/1990", "", false},
		{"08-01-1990", "", false},
		{"/01/1990", "", false},
		{"08//1990", "", false},
		{"08/01/", "", false},
		{"aa/01/1990", "", false},
		{"08/01/199x", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := registerDate("Date of Registration", tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("registerDate(%q) = %q, %v; want %q ok=%v", tt.in, got, err, tt.want, tt.ok)
			}
			if err != nil && err.Reason != `Date of Registration "`+tt.in+`" is not a DD/MM/YYYY date` {
				t.Errorf("reason %q", err.Reason)
			}
		})
	}
}

func TestParseRegisterLine(t *testing.T) {
	row := func(fields ...string) []byte { return []byte(strings.Join(fields, "\t")) }
	tests := []struct {
		name   string
		line   []byte
		want   notice.RegisterRow
		reason string
	}{
		{
			name: "former name row",
			line: row("LOVINI HOLDINGS PTY LTD", "000000019", "APTY", "LMSH", "PROP", "REGD", "08/01/1990", "", "NSW", "46869041", "", "", "89000000019", "MONAKA PTY LTD", "28/01/2016"),
			want: notice.RegisterRow{CompanyName: "LOVINI HOLDINGS PTY LTD", ACN: "000000019", Type: "APTY", Class: "LMSH", SubClass: "PROP",
				Status: "REGD", RegisteredOn: "1990-01-08", PreviousState: "NSW", StateRegistrationNumber: "46869041",
				ABN: "89000000019", CurrentName: "MONAKA PTY LTD", CurrentNameStart: "2016-01-28"},
		},
		{
			name: "current name row, deregistered, stray quotes and spaces kept/trimmed",
			line: row(` DHATA "HOLDINGS" PTY. LTD. `, "000 000 046", "APTY", "LMSH", "PSTC", "DRGD", "17/03/1988", "01/07/2025", "NSW", "41493048", "Y", "Y", "", "", ""),
			want: notice.RegisterRow{CompanyName: `DHATA "HOLDINGS" PTY. LTD.`, ACN: "000000046", Type: "APTY", Class: "LMSH", SubClass: "PSTC",
				Status: "DRGD", RegisteredOn: "1988-03-17", DeregisteredOn: "2025-07-01", PreviousState: "NSW", StateRegistrationNumber: "41493048",
				ModifiedSinceLastReport: "Y", CurrentNameIndicator: "Y"},
		},
		{
			name: "Latin-1 bytes decoded, not replaced",
			line: row("CAF\xc9 PTY LTD", "000000082", "", "", "", "", "", "", "", "", "", "Y", "", "", ""),
			want: notice.RegisterRow{CompanyName: "CAFÉ PTY LTD", ACN: "000000082", CurrentNameIndicator: "Y"},
		},
		{
			name: "UTF-8 kept",
			line: row("CAFÉ PTY LTD", "000000082", "", "", "", "", "", "", "", "", "", "Y", "", "", ""),
			want: notice.RegisterRow{CompanyName: "CAFÉ PTY LTD", ACN: "000000082", CurrentNameIndicator: "Y"},
		},
		{
			name: "ABN 0 means none, as the dataset's help file says",
			line: row("NO ABN PTY LTD", "000000082", "", "", "", "", "", "", "", "", "", "Y", "0", "", ""),
			want: notice.RegisterRow{CompanyName: "NO ABN PTY LTD", ACN: "000000082", CurrentNameIndicator: "Y"},
		},
		{
			name:   "too few fields",
			line:   row("SHORT ROW PTY LTD", "000000082", "APTY"),
			reason: "has 3 tab-separated fields, expected 15",
		},
		{
			name:   "too many fields",
			line:   row("A", "000000082", "", "", "", "", "", "", "", "", "", "", "", "", "", ""),
			reason: "has 16 tab-separated fields, expected 15",
		},
		{
			name:   "comma-separated line",
			line:   []byte("A,000000082,APTY,LMSH,PROP,REGD,,,,,,,,,"),
			reason: "has 1 tab-separated fields, expected 15",
		},
		{
			name:   "blank name",
			line:   row(" ", "000000082", "", "", "", "", "", "", "", "", "", "", "", "", ""),
			reason: "Company Name is blank",
		},
		{
			name:   "short ACN",
			line:   row("A", "12345", "", "", "", "", "", "", "", "", "", "", "", "", ""),
			reason: `ACN "12345" is not 9 digits`,
		},
		{
			name:   "blank ACN",
			line:   row("A", "", "", "", "", "", "", "", "", "", "", "", "", "", ""),
			reason: `ACN "" is not 9 digits`,
		},
		{
			name:   "bad ABN",
			line:   row("A", "000000082", "", "", "", "", "", "", "", "", "", "", "8900", "", ""),
			reason: `ABN "8900" is not 11 digits (or blank)`,
		},
		{
			name:   "bad registration date",
			line:   row("A", "000000082", "", "", "", "", "31/02/1990", "", "", "", "", "", "", "", ""),
			reason: `Date of Registration "31/02/1990" is not a DD/MM/YYYY date`,
		},
		{
			name:   "bad deregistration date",
			line:   row("A", "000000082", "", "", "", "", "", "2025-07-01", "", "", "", "", "", "", ""),
			reason: `Date of Deregistration "2025-07-01" is not a DD/MM/YYYY date`,
		},
		{
			name:   "bad current name start date",
			line:   row("A", "000000082", "", "", "", "", "", "", "", "", "", "", "", "", "x"),
			reason: `Current Name Start Date "x" is not a DD/MM/YYYY date`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRegisterLine(tt.line)
			if tt.reason != "" {
				var le *LineError
				if !errors.As(err, &le) || le.Reason != tt.reason {
					t.Fatalf("got %v, want rejection %q", err, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRegisterLine: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestRegisterReader(t *testing.T) {
	tests := []struct {
		file     string
		acns     []string
		rejected []string
	}{
		{"register.tsv", []string{"000000019", "000000019", "000000028", "000000028", "000000046", "000000055"}, nil},
		{"register.tsv.gz", []string{"000000019", "000000019", "000000028", "000000028", "000000046", "000000055"}, nil},
		{"register-bom-crlf.tsv", []string{"000000019", "000000019", "000000028"}, nil},
		{"register-broken.tsv", []string{"000000019", "000000028"}, []string{
			"line 3: has 3 tab-separated fields, expected 15",
			`line 4: ACN "12345" is not 9 digits`,
			`line 5: Date of Registration "31/02/1990" is not a DD/MM/YYYY date`,
			`line 7: Date of Registration "1990-01-08" is not a DD/MM/YYYY date`,
			`line 8: ABN "8900" is not 11 digits (or blank)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := NewRegisterReader(f)
			if err != nil {
				t.Fatalf("NewRegisterReader: %v", err)
			}
			var acns, rejected []string
			var rows []notice.RegisterRow
			for {
				row, err := r.Next()
				var le *LineError
				if errors.Is(err, io.EOF) {
					break
				} else if errors.As(err, &le) {
					rejected = append(rejected, le.Error())
				} else if err != nil {
					t.Fatalf("Next: %v", err)
				} else {
					acns = append(acns, row.ACN)
					rows = append(rows, row)
				}
			}
			if !reflect.DeepEqual(acns, tt.acns) || !reflect.DeepEqual(rejected, tt.rejected) {
				t.Errorf("got %v rejected %q\nwant %v rejected %q", acns, rejected, tt.acns, tt.rejected)
			}
			// The last column must come through without a stray \r.
			for _, row := range rows {
				if strings.ContainsAny(row.CurrentNameStart+row.CompanyName, "\r\ufeff") {
					t.Errorf("row %+v keeps a \\r or BOM", row)
				}
			}
			if rows[0].CompanyName != "LOVINI HOLDINGS PTY LTD" && rows[0].CompanyName != "MONAKA PTY LTD" {
				t.Errorf("first company name %q", rows[0].CompanyName)
			}
		})
	}
}

func TestRegisterReaderHeader(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string // all must appear in the error
	}{
		{"renamed column", mustRead(t, "testdata/register-wrong-header.tsv"),
			[]string{`column 7 is "Registration Date", expected "Date of Registration"`, `expected 15 tab-separated columns: "Company Name", "ACN"`, `found    15: "Company Name"`}},
		{"comma-separated", mustRead(t, "testdata/register-csv.csv"),
			[]string{`column 1 is "Company Name,ACN,Type`, `expected "Company Name"`, "found    1:"}},
		{"missing columns", strings.Join(RegisterColumns[:13], "\t") + "\n",
			[]string{`column 14 is nothing, expected "Current Name"`}},
		{"extra column", strings.Join(append(append([]string{}, RegisterColumns...), "Extra"), "\t") + "\n",
			[]string{`it has 16 columns, expected 15; extra: "Extra"`}},
		{"empty file", "", []string{"the register file is empty"}},
		{"data row without header", "MONAKA PTY LTD\t000000019\tAPTY\n", []string{`column 1 is "MONAKA PTY LTD", expected "Company Name"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRegisterReader(strings.NewReader(tt.input))
			if err == nil {
				t.Fatal("accepted a wrong header")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
