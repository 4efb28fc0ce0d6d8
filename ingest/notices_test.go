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

func strp(s string) *string { return &s }

func TestParseNoticeLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want notice.Notice
	}{
		{
			name: "full notice, trimmed, state upper-cased, acn spaces removed",
			line: `{"source_id":" 6A1001 ","source_url":"https://example.test/n/1","published_at":"2026-03-02T09:15:00+11:00","acn":"000 000 019","abn":"89000000019","company_name":"  MONAKA PTY LTD ","notice_type":"Appointment of Liquidator","notice_code":"APLQ","notice_purpose":"Appointment","appointment_type":"Creditors' Voluntary Liquidation","state":" nsw","status":"In Liquidation","text":" Body. ","practitioners":[{"name":" Jane Citizen","firm":"Citizen Partners ","role":"Liquidator"}]}`,
			want: notice.Notice{
				ID: notice.IDFor("6A1001"), SourceID: "6A1001", SourceURL: strp("https://example.test/n/1"),
				PublishedAt: "2026-03-01T22:15:00.000Z", PublishedDate: "2026-03-02",
				ACN: strp("000000019"), ABN: strp("89000000019"), CompanyName: "MONAKA PTY LTD",
				NoticeType: "Appointment of Liquidator", NoticeCode: "APLQ", NoticePurpose: "Appointment",
				AppointmentType: strp("Creditors' Voluntary Liquidation"), State: "NSW", Status: "In Liquidation",
				Text: "Body.", Practitioners: []notice.Practitioner{{Name: "Jane Citizen", Firm: "Citizen Partners", Role: "Liquidator"}},
			},
		},
		{
			name: "date means midnight in Sydney (daylight saving, +11:00)",
			line: `{"source_id":"a","published_at":"2026-03-02","acn":"000000028"}`,
			want: notice.Notice{ID: notice.IDFor("a"), SourceID: "a", PublishedAt: "2026-03-01T13:00:00.000Z",
				PublishedDate: "2026-03-02", ACN: strp("000000028"), Practitioners: []notice.Practitioner{}},
		},
		{
			name: "date means midnight in Sydney (standard time, +10:00)",
			line: `{"source_id":"a","published_at":"2026-07-15","company_name":"X"}`,
			want: notice.Notice{ID: notice.IDFor("a"), SourceID: "a", PublishedAt: "2026-07-14T14:00:00.000Z",
				PublishedDate: "2026-07-15", CompanyName: "X", Practitioners: []notice.Practitioner{}},
		},
		{
			name: "published_date is derived in Sydney, input id/seq/collected_at/published_date and unknown fields ignored",
			line: `{"source_id":"b","published_at":"2026-03-01T13:30:00Z","abn":"51 824 753 556","id":"ntc_x","notice_seq":9,"collected_at":"2020-01-01T00:00:00Z","published_date":"1999-01-01","extra":{"a":[1]}}`,
			want: notice.Notice{ID: notice.IDFor("b"), SourceID: "b", PublishedAt: "2026-03-01T13:30:00.000Z",
				PublishedDate: "2026-03-02", ABN: strp("51824753556"), Practitioners: []notice.Practitioner{}},
		},
		{
			name: "fractional seconds kept to milliseconds; null practitioners become []",
			line: `{"source_id":"c","published_at":"2026-02-27T23:59:59.5Z","company_name":"Y","practitioners":null}`,
			want: notice.Notice{ID: notice.IDFor("c"), SourceID: "c", PublishedAt: "2026-02-27T23:59:59.500Z",
				PublishedDate: "2026-02-28", CompanyName: "Y", Practitioners: []notice.Practitioner{}},
		},
		{
			name: "bad check digit kept as is",
			line: `{"source_id":"d","published_at":"2026-04-01","acn":"000000010"}`,
			want: notice.Notice{ID: notice.IDFor("d"), SourceID: "d", PublishedAt: "2026-03-31T13:00:00.000Z",
				PublishedDate: "2026-04-01", ACN: strp("000000010"), Practitioners: []notice.Practitioner{}},
		},
		{
			name: "blank nullable fields become null, empty practitioners dropped",
			line: `{"source_id":"e","published_at":"2026-04-01","acn":" ","abn":null,"company_name":"Z","source_url":"","appointment_type":"  ","replaces":"","practitioners":[{"name":" "},{"name":"P"}]}`,
			want: notice.Notice{ID: notice.IDFor("e"), SourceID: "e", PublishedAt: "2026-03-31T13:00:00.000Z",
				PublishedDate: "2026-04-01", CompanyName: "Z", Practitioners: []notice.Practitioner{{Name: "P"}}},
		},
		{
			name: "replaces: a source id becomes its notice id, a notice id is kept",
			line: `{"source_id":"f","published_at":"2026-04-01","company_name":"Z","replaces":"6A1001"}`,
			want: notice.Notice{ID: notice.IDFor("f"), SourceID: "f", PublishedAt: "2026-03-31T13:00:00.000Z",
				PublishedDate: "2026-04-01", CompanyName: "Z", Practitioners: []notice.Practitioner{}, Replaces: strp(notice.IDFor("6A1001"))},
		},
		{
			name: "replaces: notice id kept",
			line: `{"source_id":"g","published_at":"2026-04-01","company_name":"Z","replaces":"ntc_abcdefghijklmnop"}`,
			want: notice.Notice{ID: notice.IDFor("g"), SourceID: "g", PublishedAt: "2026-03-31T13:00:00.000Z",
				PublishedDate: "2026-04-01", CompanyName: "Z", Practitioners: []notice.Practitioner{}, Replaces: strp("ntc_abcdefghijklmnop")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseNoticeLine([]byte(tt.line))
			if err != nil {
				t.Fatalf("ParseNoticeLine: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if got.Practitioners == nil {
				t.Error("practitioners is nil; it must be [] so it encodes as an array")
			}
		})
	}
}

func TestParseNoticeLineRejects(t *testing.T) {
	tests := []struct {
		name string
		line string
		want string // the whole reason
	}{
		{"not JSON", `this is not json`, `not a JSON object; each line must hold one notice as {...}`},
		{"JSON array", `[1,2]`, `not a JSON object; each line must hold one notice as {...}`},
		{"JSON null", `null`, `not a JSON object; each line must hold one notice as {...}`},
		{"truncated object", `{"source_id":"a"`, `invalid JSON at byte 16: unexpected end of JSON input`},
		{"syntax error", `{"source_id":"a",}`, `invalid JSON at byte 18: invalid character '}' looking for beginning of object key string`},
		{"trailing garbage", `{"source_id":"a"} x`, `invalid JSON at byte 19: invalid character 'x' after top-level value`},
		{"source_id missing", `{"published_at":"2026-04-01","acn":"000000019"}`, `source_id is missing; every notice needs the regulator's notice identifier`},
		{"source_id empty", `{"source_id":"  ","published_at":"2026-04-01","acn":"000000019"}`, `source_id is empty; every notice needs the regulator's notice identifier`},
		{"source_id a number", `{"source_id":17,"published_at":"2026-04-01","acn":"000000019"}`, `source_id is a JSON number; it must be a string (or null where allowed)`},
		{"published_at missing", `{"source_id":"a","acn":"000000019"}`, `published_at is missing; give an RFC 3339 timestamp or a YYYY-MM-DD date`},
		{"published_at bad month", `{"source_id":"a","published_at":"2024-13-01","acn":"000000019"}`, `published_at "2024-13-01" is not an RFC 3339 timestamp or YYYY-MM-DD date`},
		{"published_at without zone", `{"source_id":"a","published_at":"2024-05-01T10:00:00","acn":"000000019"}`, `published_at "2024-05-01T10:00:00" is not an RFC 3339 timestamp or YYYY-MM-DD date`},
		{"published_at DD/MM/YYYY", `{"source_id":"a","published_at":"01/05/2024","acn":"000000019"}`, `published_at "01/05/2024" is not an RFC 3339 timestamp or YYYY-MM-DD date`},
		{"published_at a number", `{"source_id":"a","published_at":20240501,"acn":"000000019"}`, `published_at is a JSON number; it must be a string (or null where allowed)`},
		{"acn too short", `{"source_id":"a","published_at":"2026-04-01","acn":"12345"}`, `acn "12345" is not an ACN: it must be 9 digits (spaces allowed)`},
		{"acn with letters", `{"source_id":"a","published_at":"2026-04-01","acn":"00000001X"}`, `acn "00000001X" is not an ACN: it must be 9 digits (spaces allowed)`},
		{"acn given an ABN", `{"source_id":"a","published_at":"2026-04-01","acn":"89000000019"}`, `acn "89000000019" is not an ACN: it must be 9 digits (spaces allowed)`},
		{"acn a number", `{"source_id":"a","published_at":"2026-04-01","acn":19}`, `acn is a JSON number; it must be a string (or null where allowed)`},
		{"abn wrong length", `{"source_id":"a","published_at":"2026-04-01","abn":"000000019"}`, `abn "000000019" is not an ABN: it must be 11 digits (spaces allowed)`},
		{"no company at all", `{"source_id":"a","published_at":"2026-04-01","company_name":" "}`, `none of acn, abn and company_name is given; a notice needs at least one to name its company`},
		{"practitioners not an array", `{"source_id":"a","published_at":"2026-04-01","company_name":"X","practitioners":"Jane"}`, `practitioners is a JSON string; it must be an array`},
		{"practitioner name a number", `{"source_id":"a","published_at":"2026-04-01","company_name":"X","practitioners":[{"name":1}]}`, `practitioners.name is a JSON number; it must be a string (or null where allowed)`},
		{"state an object", `{"source_id":"a","published_at":"2026-04-01","company_name":"X","state":{}}`, `state is a JSON object; it must be a string (or null where allowed)`},
		{"published_at in year 10000 in Sydney", `{"source_id":"a","published_at":"9999-12-31T23:00:00Z","acn":"000000019"}`, `published_at "9999-12-31T23:00:00Z" falls outside the years 0001-9999 (in UTC or in Sydney time)`},
		{"published_at in year 10000 in UTC", `{"source_id":"a","published_at":"9999-12-31T23:00:00-10:00","acn":"000000019"}`, `published_at "9999-12-31T23:00:00-10:00" falls outside the years 0001-9999 (in UTC or in Sydney time)`},
		{"published_at offset +24:00", `{"source_id":"a","published_at":"2024-05-01T10:00:00+24:00","acn":"000000019"}`, `published_at "2024-05-01T10:00:00+24:00" is not an RFC 3339 timestamp or YYYY-MM-DD date`},
		{"published_at one-digit hour", `{"source_id":"a","published_at":"2024-05-01T5:03:09Z","acn":"000000019"}`, `published_at "2024-05-01T5:03:09Z" is not an RFC 3339 timestamp or YYYY-MM-DD date`},
		{"invalid UTF-8", "{\"source_id\":\"a\",\"published_at\":\"2026-04-01\",\"company_name\":\"CAF\xc9\"}", `not valid UTF-8 at byte 64; notices files must be UTF-8 (convert the file, e.g. with iconv -f latin1 -t utf-8)`},
		{"source_url javascript:", `{"source_id":"a","published_at":"2026-04-01","company_name":"X","source_url":"javascript:alert(4)"}`, `source_url "javascript:alert(4)" is not an http:// or https:// URL; give the notice's web address, or null`},
		{"source_url JavaScript: with blanks", `{"source_id":"a","published_at":"2026-04-01","company_name":"X","source_url":" JavaScript://x/%0aalert(4) "}`, `source_url "JavaScript://x/%0aalert(4)" is not an http:// or https:// URL; give the notice's web address, or null`},
		{"source_url data:", `{"source_id":"a","published_at":"2026-04-01","company_name":"X","source_url":"data:text/html,<script>alert(4)</script>"}`, `source_url "data:text/html,<script>alert(4)</script>" is not an http:// or https:// URL; give the notice's web address, or null`},
		{"source_url relative", `{"source_id":"a","published_at":"2026-04-01","company_name":"X","source_url":"//example.com/n/1"}`, `source_url "//example.com/n/1" is not an http:// or https:// URL; give the notice's web address, or null`},
		{"source_url without host", `{"source_id":"a","published_at":"2026-04-01","company_name":"X","source_url":"https:/n/1"}`, `source_url "https:/n/1" is not an http:// or https:// URL; give the notice's web address, or null`},
		{"status too long", `{"source_id":"a","published_at":"2026-04-01","company_name":"X","status":"` + strings.Repeat("s", 1001) + `"}`, `status is 1001 bytes long; a filter value may have at most 1000`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseNoticeLine([]byte(tt.line))
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a *LineError", err)
			}
			if le.Reason != tt.want {
				t.Errorf("reason\n got  %s\n want %s", le.Reason, tt.want)
			}
		})
	}
}

// readAll reads every notice and rejection from a fixture.
func readAll(t *testing.T, r io.Reader) (ids []string, rejected []string) {
	t.Helper()
	nr, err := NewNoticeReader(r)
	if err != nil {
		t.Fatalf("NewNoticeReader: %v", err)
	}
	for {
		n, err := nr.Next()
		var le *LineError
		switch {
		case err == nil:
			ids = append(ids, n.SourceID)
		case errors.As(err, &le):
			rejected = append(rejected, le.Error())
		case errors.Is(err, io.EOF):
			return ids, rejected
		default:
			t.Fatalf("Next: %v", err)
		}
	}
}

func TestNoticeReader(t *testing.T) {
	all := []string{"6A1001", "6A1002", "6A1003", "6A1004", "6A1005"}
	tests := []struct {
		file     string
		ids      []string
		rejected []string
	}{
		{"notices.jsonl", all, nil},
		{"notices.jsonl.gz", all, nil},
		{"gzipped-without-extension.jsonl", all, nil},
		{"crlf.jsonl", []string{"6A1006", "6A1007"}, nil},
		{"source-urls.jsonl", []string{"6C3001", "6C3002", "6C3004", "6C3007"}, []string{
			`line 3: source_url "javascript:alert(4)" is not an http:// or https:// URL; give the notice's web address, or null`,
			`line 5: source_url "ftp://example.com/n/6C3005" is not an http:// or https:// URL; give the notice's web address, or null`,
			`line 6: source_url "vbscript:msgbox(4)" is not an http:// or https:// URL; give the notice's web address, or null`,
		}},
		{"broken.jsonl", []string{"6B2001", "6B2004", "6B2006"}, []string{
			`line 2: published_at "2024-13-01" is not an RFC 3339 timestamp or YYYY-MM-DD date`,
			`line 3: source_id is empty; every notice needs the regulator's notice identifier`,
			`line 4: not a JSON object; each line must hold one notice as {...}`,
			`line 6: acn "12345" is not an ACN: it must be 9 digits (spaces allowed)`,
			`line 8: none of acn, abn and company_name is given; a notice needs at least one to name its company`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ids, rejected := readAll(t, f)
			if !reflect.DeepEqual(ids, tt.ids) {
				t.Errorf("ids %v, want %v", ids, tt.ids)
			}
			if !reflect.DeepEqual(rejected, tt.rejected) {
				t.Errorf("rejected\n got  %q\n want %q", rejected, tt.rejected)
			}
		})
	}
}

func TestNoticeReaderEdges(t *testing.T) {
	long := `{"source_id":"long","published_at":"2026-04-01","company_name":"X","text":"` + strings.Repeat("a", MaxLineBytes) + `"}`
	tests := []struct {
		name     string
		input    string
		ids      []string
		rejected []string
	}{
		{"empty input", "", nil, nil},
		{"only blank lines", "\n  \n\t\r\n", nil, nil},
		{"last line without newline", `{"source_id":"a","published_at":"2026-04-01","acn":"000000019"}`, []string{"a"}, nil},
		{"byte order mark", "\ufeff" + `{"source_id":"a","published_at":"2026-04-01","acn":"000000019"}` + "\n", []string{"a"}, nil},
		{"line over the limit is rejected, the next one read", long + "\n" + `{"source_id":"b","published_at":"2026-04-01","acn":"000000019"}` + "\n",
			[]string{"b"}, []string{"line 1: line is longer than 8388608 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, rejected := readAll(t, strings.NewReader(tt.input))
			if !reflect.DeepEqual(ids, tt.ids) || !reflect.DeepEqual(rejected, tt.rejected) {
				t.Errorf("got ids %v rejected %q, want %v %q", ids, rejected, tt.ids, tt.rejected)
			}
		})
	}
}

func TestNoticeReaderTruncatedGzipIsAFailure(t *testing.T) {
	data, err := os.ReadFile("testdata/notices.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	nr, err := NewNoticeReader(strings.NewReader(string(data[:len(data)-20])))
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, err := nr.Next()
		var le *LineError
		if errors.As(err, &le) {
			continue
		}
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatal("a truncated gzip file read to a clean end; want a read failure")
		}
		if !strings.Contains(err.Error(), "reading line") {
			t.Errorf("error %q does not say where reading stopped", err)
		}
		return
	}
}
