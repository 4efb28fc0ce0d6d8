package sample

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
)

// testNow is a Wednesday, 14:00 in Sydney.
var testNow = time.Date(2026, 3, 18, 3, 0, 0, 0, time.UTC)

func generate(t *testing.T, opts Options) (notices, register []byte, sum Summary) {
	t.Helper()
	var n, r bytes.Buffer
	sum, err := Generate(opts, &n, &r)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", opts, err)
	}
	return n.Bytes(), r.Bytes(), sum
}

// line is a notice line as ingest reads it.
type line struct {
	SourceID        string                     `json:"source_id"`
	SourceURL       *string                    `json:"source_url"`
	PublishedAt     string                     `json:"published_at"`
	ACN             *string                    `json:"acn"`
	ABN             *string                    `json:"abn"`
	CompanyName     string                     `json:"company_name"`
	NoticeType      string                     `json:"notice_type"`
	NoticeCode      string                     `json:"notice_code"`
	NoticePurpose   string                     `json:"notice_purpose"`
	AppointmentType *string                    `json:"appointment_type"`
	State           string                     `json:"state"`
	Status          string                     `json:"status"`
	Text            string                     `json:"text"`
	Practitioners   []notice.Practitioner      `json:"practitioners"`
	Replaces        *string                    `json:"replaces"`
	raw             map[string]json.RawMessage `json:"-"`
	at              time.Time
}

func parseNotices(t *testing.T, data []byte) []line {
	t.Helper()
	var out []line
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %d does not parse: %v\n%s", n, err, sc.Bytes())
		}
		if err := json.Unmarshal(sc.Bytes(), &l.raw); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		at, err := time.Parse(time.RFC3339, l.PublishedAt)
		if err != nil || !strings.HasSuffix(l.PublishedAt, "Z") {
			t.Fatalf("line %d: published_at %q is not an RFC 3339 UTC timestamp: %v", n, l.PublishedAt, err)
		}
		l.at = at
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type row []string

func parseRegister(t *testing.T, data []byte) []row {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if lines[0] != RegisterHeader {
		t.Fatalf("header is %q, want %q", lines[0], RegisterHeader)
	}
	var out []row
	for n, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != 15 {
			t.Fatalf("register row %d has %d fields, want 15: %q", n+2, len(f), l)
		}
		out = append(out, f)
	}
	return out
}

func TestDeterministic(t *testing.T) {
	opts := Options{Notices: 3000, Companies: 12000, Seed: 42, Now: testNow}
	n1, r1, s1 := generate(t, opts)
	n2, r2, s2 := generate(t, opts)
	if !bytes.Equal(n1, n2) || !bytes.Equal(r1, r2) || s1 != s2 {
		t.Fatal("two runs with the same options differ")
	}
	opts.Seed = 43
	n3, r3, _ := generate(t, opts)
	if bytes.Equal(n1, n3) || bytes.Equal(r1, r3) {
		t.Fatal("a different seed gave the same output")
	}
}

func TestHeader(t *testing.T) {
	want := "Company Name\tACN\tType\tClass\tSub Class\tStatus\tDate of Registration\tDate of Deregistration\tPrevious State of Registration\tState Registration number\tModified since last report\tCurrent Name Indicator\tABN\tCurrent Name\tCurrent Name Start Date"
	if RegisterHeader != want {
		t.Fatalf("RegisterHeader = %q", RegisterHeader)
	}
	_, reg, _ := generate(t, Options{Companies: 3, Now: testNow})
	if got, _, _ := strings.Cut(string(reg), "\n"); got != want {
		t.Fatalf("first line %q", got)
	}
}

var shapeOpts = Options{Notices: 5000, Companies: 20000, Seed: 7, Now: testNow}

func TestNoticeShape(t *testing.T) {
	data, _, sum := generate(t, shapeOpts)
	ls := parseNotices(t, data)
	if len(ls) != shapeOpts.Notices || sum.Notices != int64(len(ls)) {
		t.Fatalf("%d lines, summary says %d, want %d", len(ls), sum.Notices, shapeOpts.Notices)
	}
	keys := []string{"source_id", "source_url", "published_at", "acn", "abn", "company_name", "notice_type",
		"notice_code", "notice_purpose", "appointment_type", "state", "status", "text", "practitioners", "replaces"}
	slices.Sort(keys)
	earliest := testNow.AddDate(-DefaultYears, 0, 0)
	seen := map[string]time.Time{}
	codeType := map[string]string{}
	codePurpose := map[string]string{}
	states := map[string]int{}
	var dereg, withACN, badACN, replaced int
	var prev time.Time
	for i, l := range ls {
		got := make([]string, 0, len(l.raw))
		for k := range l.raw {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, keys) {
			t.Fatalf("line %d has fields %v, want %v", i+1, got, keys)
		}
		if l.SourceID == "" || !regexp.MustCompile(`^2[A-Z]\d{7}$`).MatchString(l.SourceID) {
			t.Fatalf("line %d: source_id %q", i+1, l.SourceID)
		}
		if _, dup := seen[l.SourceID]; dup {
			t.Fatalf("line %d: source_id %s repeats", i+1, l.SourceID)
		}
		seen[l.SourceID] = l.at
		if l.SourceURL == nil || !strings.HasPrefix(*l.SourceURL, "https://publishednotices.asic.gov.au/browsesearch-notices/notice-details/") ||
			!strings.HasSuffix(*l.SourceURL, "/"+l.SourceID) {
			t.Fatalf("line %d: source_url %v", i+1, l.SourceURL)
		}
		if l.at.Before(earliest) || l.at.After(testNow) {
			t.Fatalf("line %d: published_at %s outside %s..%s", i+1, l.at, earliest, testNow)
		}
		if l.at.Before(prev) {
			t.Fatalf("line %d: published_at %s before the previous line's %s", i+1, l.at, prev)
		}
		prev = l.at
		syd := l.at.In(notice.Sydney)
		if wd := syd.Weekday(); wd == time.Saturday || wd == time.Sunday || syd.Hour() < 9 || syd.Hour() >= 17 {
			t.Fatalf("line %d: published %s, outside Sydney business hours", i+1, syd)
		}
		if l.ACN == nil && l.ABN == nil && l.CompanyName == "" {
			t.Fatalf("line %d has no acn, abn or company_name", i+1)
		}
		if l.ACN != nil {
			withACN++
			if _, ok := ident.Normalise(*l.ACN); !ok || len(*l.ACN) != 9 {
				t.Fatalf("line %d: acn %q", i+1, *l.ACN)
			}
			if !ident.ValidACN(*l.ACN) {
				badACN++
			}
		}
		if l.ABN != nil && !ident.ValidABN(*l.ABN) {
			t.Fatalf("line %d: abn %q fails its check", i+1, *l.ABN)
		}
		if !strings.Contains(l.Text, l.CompanyName) {
			t.Fatalf("line %d: text does not name the company %q: %s", i+1, l.CompanyName, l.Text)
		}
		if ct, ok := codeType[l.NoticeCode]; ok && ct != l.NoticeType {
			t.Fatalf("notice_code %s has two types: %q and %q", l.NoticeCode, ct, l.NoticeType)
		}
		codeType[l.NoticeCode] = l.NoticeType
		if cp, ok := codePurpose[l.NoticeCode]; ok && cp != l.NoticePurpose {
			t.Fatalf("notice_code %s has two purposes", l.NoticeCode)
		}
		codePurpose[l.NoticeCode] = l.NoticePurpose
		states[l.State]++
		if l.NoticePurpose == notice.DeregistrationPurpose {
			dereg++
			if l.AppointmentType != nil || len(l.Practitioners) != 0 {
				t.Fatalf("line %d: deregistration notice with appointment_type %v and %d practitioners", i+1, l.AppointmentType, len(l.Practitioners))
			}
		} else if l.NoticeCode != "WUA" {
			if l.AppointmentType == nil || len(l.Practitioners) < 1 || len(l.Practitioners) > 2 {
				t.Fatalf("line %d: %s notice with appointment_type %v and %d practitioners", i+1, l.NoticeCode, l.AppointmentType, len(l.Practitioners))
			}
			for _, p := range l.Practitioners {
				if p.Name == "" || p.Firm == "" || p.Role == "" {
					t.Fatalf("line %d: practitioner %+v lacks a name, firm or role", i+1, p)
				}
				if l.NoticePurpose == "Appointment" && !strings.Contains(l.Text, p.Name) {
					t.Fatalf("line %d: appointment notice does not name practitioner %s: %s", i+1, p.Name, l.Text)
				}
			}
		}
		if l.Replaces != nil {
			replaced++
		}
	}
	if sum.BadACNNotices != int64(badACN) {
		t.Errorf("summary says %d bad ACNs, the lines hold %d", sum.BadACNNotices, badACN)
	}
	if share := float64(badACN) / float64(withACN); share < 0.005 || share > 0.018 {
		t.Errorf("bad ACN share %.4f, want about 1%%", share)
	}
	if share := float64(dereg) / float64(len(ls)); share < 0.77 || share > 0.83 {
		t.Errorf("deregistration share %.3f, want 0.80 +- 0.03", share)
	}
	if sum.DeregistrationNotices != int64(dereg) || sum.ReplacementNotices != int64(replaced) {
		t.Errorf("summary %+v disagrees with the lines (%d dereg, %d replacing)", sum, dereg, replaced)
	}
	if replaced == 0 || float64(replaced)/float64(len(ls)) > 0.015 {
		t.Errorf("%d notices replace another; want about 0.5%%", replaced)
	}
	big := states["NSW"] + states["VIC"] + states["QLD"]
	for _, s := range []string{"ACT", "NT", "SA", "TAS", "WA"} {
		if states[s] == 0 || states[s] >= states["QLD"] {
			t.Errorf("state %s has %d notices (QLD %d): want the mix weighted to VIC/NSW/QLD", s, states[s], states["QLD"])
		}
	}
	if float64(big)/float64(len(ls)) < 0.70 {
		t.Errorf("VIC+NSW+QLD share %.2f, want over 0.70", float64(big)/float64(len(ls)))
	}
	for _, want := range []string{"Court Liquidation", "Creditors' Voluntary Liquidation", "Voluntary Administration",
		"Receiver and Manager", "Small Business Restructuring", "Deed of Company Arrangement", "Members' Voluntary Liquidation"} {
		found := false
		for _, l := range ls {
			if l.AppointmentType != nil && *l.AppointmentType == want {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no notice has appointment_type %q", want)
		}
	}
	if len(codeType) < 15 {
		t.Errorf("only %d notice codes: %v", len(codeType), codeType)
	}
}

func TestReplacesAndChains(t *testing.T) {
	data, _, _ := generate(t, shapeOpts)
	ls := parseNotices(t, data)
	byID := map[string]line{}
	perCompany := map[string][]string{}
	for _, l := range ls {
		if l.Replaces != nil {
			old, ok := byID[*l.Replaces]
			if !ok {
				t.Fatalf("%s replaces %s, which is not an earlier notice", l.SourceID, *l.Replaces)
			}
			if old.NoticeCode != l.NoticeCode || old.State != l.State || !strings.HasPrefix(l.Text, "This notice replaces") {
				t.Fatalf("%s replaces %s but is not a corrected copy of it", l.SourceID, old.SourceID)
			}
		}
		byID[notice.IDFor(l.SourceID)] = l
		if l.ACN != nil {
			perCompany[*l.ACN] = append(perCompany[*l.ACN], l.NoticeCode)
		}
	}
	// Insolvent companies collect several notices over time, ending some
	// chains in deregistration.
	var chains, endInDRL int
	for _, codes := range perCompany {
		if len(codes) >= 3 {
			chains++
			if codes[len(codes)-1] == "DRL" {
				endInDRL++
			}
		}
	}
	if chains < 20 || endInDRL == 0 {
		t.Errorf("%d companies have 3 or more notices (%d ending in DRL); want chains of notices", chains, endInDRL)
	}
}

func TestRegisterShape(t *testing.T) {
	notices, reg, sum := generate(t, shapeOpts)
	rows := parseRegister(t, reg)
	if len(rows) != shapeOpts.Companies || sum.RegisterRows != int64(len(rows)) {
		t.Fatalf("%d rows, summary says %d, want %d", len(rows), sum.RegisterRows, shapeOpts.Companies)
	}
	allowed := map[int][]string{
		2:  {"APTY", "APUB"},
		3:  {"LMSH", "LMGT", "UNLM"},
		4:  {"PROP", "PSTC", "HUNT", "ULSN", "NLTD", "ULST", "LIST"},
		5:  {"REGD", "DRGD", "SOFF", "EXAD"},
		10: {"", "Y"},
		11: {"", "Y"},
	}
	date := regexp.MustCompile(`^\d{2}/\d{2}/\d{4}$`)
	current := map[string]row{}
	var order []string
	var groups [][]row
	for i, f := range rows {
		for col, vals := range allowed {
			if !slices.Contains(vals, f[col]) {
				t.Fatalf("row %d: column %d is %q", i+2, col, f[col])
			}
		}
		if !ident.ValidACN(f[1]) {
			t.Fatalf("row %d: ACN %s fails its check", i+2, f[1])
		}
		if f[12] != "" && (!ident.ValidABN(f[12]) || f[12][2:] != f[1]) {
			t.Fatalf("row %d: ABN %s is not derived from ACN %s", i+2, f[12], f[1])
		}
		if !date.MatchString(f[6]) {
			t.Fatalf("row %d: registration date %q", i+2, f[6])
		}
		if (f[5] == "DRGD") != (f[7] != "") || f[7] != "" && !date.MatchString(f[7]) {
			t.Fatalf("row %d: status %s with deregistration date %q", i+2, f[5], f[7])
		}
		if len(order) == 0 || order[len(order)-1] != f[1] {
			if len(order) > 0 && order[len(order)-1] > f[1] {
				t.Fatalf("row %d: ACN %s after %s; want ACN order", i+2, f[1], order[len(order)-1])
			}
			order = append(order, f[1])
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], f)
	}
	if int64(len(groups)) != sum.Companies {
		t.Fatalf("%d distinct ACNs, summary says %d", len(groups), sum.Companies)
	}
	renamed := 0
	for _, g := range groups {
		last := g[len(g)-1]
		if last[11] != "Y" || last[13] != "" || last[14] != "" {
			t.Fatalf("ACN %s: the last row is not the current-name row: %q", last[1], last)
		}
		for _, f := range g[:len(g)-1] {
			if f[11] != "" || f[13] != last[0] || !date.MatchString(f[14]) {
				t.Fatalf("ACN %s: former-name row %q does not point at the current name %q", f[1], f, last[0])
			}
		}
		if len(g) > 1 {
			renamed++
		}
		current[last[1]] = last
	}
	if share := float64(renamed) / float64(len(groups)); share < 0.12 || share > 0.22 {
		t.Errorf("%.3f of companies have former names, want 15-20%%", share)
	}

	// Notices join the register, and the register reflects them.
	var valid, inRegister int
	for _, l := range parseNotices(t, notices) {
		if l.ACN == nil || !ident.ValidACN(*l.ACN) {
			if l.ACN != nil {
				if _, ok := current[*l.ACN]; ok {
					t.Fatalf("bad ACN %s is in the register", *l.ACN)
				}
			}
			continue
		}
		valid++
		r, ok := current[*l.ACN]
		if !ok {
			continue
		}
		inRegister++
		if !strings.HasPrefix(l.CompanyName, r[0]) {
			t.Fatalf("notice %s names %q; the register's current name is %q", l.SourceID, l.CompanyName, r[0])
		}
		if l.NoticeCode == "ADD" && l.at.Before(testNow.AddDate(0, -3, 0)) && r[5] != "DRGD" && r[5] != "EXAD" {
			t.Fatalf("ACN %s had an ASIC deregistration notice on %s but the register says %s", *l.ACN, l.PublishedAt, r[5])
		}
	}
	if share := float64(inRegister) / float64(valid); share < 0.94 || share > 0.995 {
		t.Errorf("%.3f of notices with a valid ACN are in the register; want most, with a few percent outside", share)
	}
}

func TestEdgeSizes(t *testing.T) {
	tests := []struct {
		name              string
		notices, rows     int
		wantCompaniesZero bool
	}{
		{"no register", 300, 0, true},
		{"no notices", 0, 50, false},
		{"one row", 20, 1, false},
		{"nothing", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, r, sum := generate(t, Options{Notices: tt.notices, Companies: tt.rows, Seed: 3, Now: testNow})
			ls := parseNotices(t, n)
			rows := parseRegister(t, r)
			if len(ls) != tt.notices || len(rows) != tt.rows {
				t.Fatalf("%d notices and %d rows, want %d and %d", len(ls), len(rows), tt.notices, tt.rows)
			}
			if (sum.Companies == 0) != tt.wantCompaniesZero {
				t.Fatalf("summary %+v", sum)
			}
			if tt.rows == 0 && sum.UnregisteredNotices != int64(tt.notices) {
				t.Fatalf("with no register every notice should be unregistered: %+v", sum)
			}
		})
	}
}

func TestOptionsErrors(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"no Now", Options{Notices: 1}},
		{"negative notices", Options{Notices: -1, Now: testNow}},
		{"negative rows", Options{Companies: -1, Now: testNow}},
		{"too many years", Options{Years: 51, Now: testNow}},
		{"Now too early", Options{Now: time.Date(1991, 1, 1, 0, 0, 0, 0, time.UTC)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Generate(tt.opts, io.Discard, io.Discard)
			if !errs.Is(err, errs.InvalidParameter) {
				t.Fatalf("Generate: %v, want invalid_parameter", err)
			}
			if _, err := WriteFiles(tt.opts, t.TempDir()); !errs.Is(err, errs.InvalidParameter) {
				t.Fatalf("WriteFiles: %v, want invalid_parameter", err)
			}
		})
	}
}

func TestYearsAndRecentDensity(t *testing.T) {
	data, _, _ := generate(t, Options{Notices: 4000, Companies: 4000, Seed: 9, Now: testNow, Years: 2})
	ls := parseNotices(t, data)
	mid := testNow.AddDate(-1, 0, 0)
	var older int
	for _, l := range ls {
		if l.at.Before(testNow.AddDate(-2, 0, 0)) {
			t.Fatalf("%s published %s, more than 2 years before Now", l.SourceID, l.PublishedAt)
		}
		if l.at.Before(mid) {
			older++
		}
	}
	if older == 0 || older >= len(ls)/2 {
		t.Fatalf("%d of %d notices in the older year; want fewer than in the recent one", older, len(ls))
	}
}

func TestWriteFiles(t *testing.T) {
	opts := Options{Notices: 1500, Companies: 4000, Seed: 11, Now: testNow}
	dir := filepath.Join(t.TempDir(), "data")
	files, err := WriteFiles(opts, dir)
	if err != nil {
		t.Fatal(err)
	}
	if files.Notices != filepath.Join(dir, NoticesFile) || files.Register != filepath.Join(dir, RegisterFile) {
		t.Fatalf("paths %+v", files)
	}
	wantN, wantR, wantSum := generate(t, opts)
	f, err := os.Open(files.Notices)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("notices file is not gzip: %v", err)
	}
	gotN, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	gotR, err := os.ReadFile(files.Register)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotN, wantN) || !bytes.Equal(gotR, wantR) || files.Summary != wantSum {
		t.Fatal("WriteFiles wrote something other than Generate")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("directory holds %d entries, want the two files (no temporaries)", len(entries))
	}
}

func TestWriteFilesUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFiles(Options{Notices: 1, Now: testNow}, filepath.Join(file, "sub")); err == nil {
		t.Fatal("WriteFiles under a regular file succeeded")
	}
}

type failWriter struct{ after int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.after -= len(p); w.after < 0 {
		return 0, io.ErrShortWrite
	}
	return len(p), nil
}

func TestWriteErrors(t *testing.T) {
	opts := Options{Notices: 3000, Companies: 20000, Now: testNow}
	if _, err := Generate(opts, &failWriter{after: 1 << 10}, io.Discard); err == nil || !strings.Contains(err.Error(), "notices") {
		t.Fatalf("failing notices writer: %v", err)
	}
	if _, err := Generate(opts, io.Discard, &failWriter{after: 1 << 10}); err == nil || !strings.Contains(err.Error(), "register") {
		t.Fatalf("failing register writer: %v", err)
	}
}

func BenchmarkGenerate(b *testing.B) {
	opts := Options{Notices: 20000, Companies: 80000, Seed: 1, Now: testNow}
	for b.Loop() {
		if _, err := Generate(opts, io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
