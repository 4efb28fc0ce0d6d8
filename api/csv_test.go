package api

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// sendCSV sends a request with Accept and, for a body, Content-Type.
func (f *fixture) sendCSV(t *testing.T, method, target, accept, contentType string, body []byte) response {
	t.Helper()
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.Header.Set(HeaderAPIKey, f.read)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return f.roundTrip(t, req)
}

// readCSV parses a CSV answer, requiring its content type.
func readCSV(t *testing.T, res response) [][]string {
	t.Helper()
	if res.status != http.StatusOK {
		t.Fatalf("status %d, want 200; body %s", res.status, res.body)
	}
	if ct := res.header.Get("Content-Type"); ct != contentTypeCSV {
		t.Fatalf("Content-Type %q, want %q", ct, contentTypeCSV)
	}
	if !bytes.HasSuffix(res.body, []byte("\r\n")) || bytes.HasPrefix(res.body, []byte("\xef\xbb\xbf")) {
		t.Errorf("body must end with CRLF and carry no byte-order mark: %q", clip(res.body))
	}
	r := csv.NewReader(bytes.NewReader(res.body))
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatalf("answer is not CSV: %v; body %s", err, clip(res.body))
	}
	return recs
}

// allPages reads every notice of a search as JSON pages of 100.
func (f *fixture) allPages(t *testing.T, query string) []notice.Notice {
	t.Helper()
	var out []notice.Notice
	for page := 1; ; page++ {
		var p searchResult
		f.get(t, fmt.Sprintf("/v1/notices?%slimit=100&page=%d", query, page), &p)
		out = append(out, p.Data...)
		if !p.HasMore {
			return out
		}
	}
}

// TestNoticesCSVExport: Accept: text/csv gives every matching notice in
// the search's order, with the header row and the documented headers;
// limit and page are ignored.
func TestNoticesCSVExport(t *testing.T) {
	f := newFixture(t)
	for _, query := range []string{"", "include_deregistration=true&", "include_deregistration=true&sort=published_asc&",
		"state=NSW&", "q=liquidator&", "q=liquidator&sort=published_asc&", "from=2026-03-01&to=2026-03-31&include_deregistration=true&"} {
		t.Run(query, func(t *testing.T) {
			want := f.allPages(t, query)
			res := f.sendCSV(t, http.MethodGet, "/v1/notices?"+query+"limit=1&page=3", "text/csv", "", nil)
			recs := readCSV(t, res)
			if !slices.Equal(recs[0], notice.CSVColumns) {
				t.Fatalf("header %v, want %v", recs[0], notice.CSVColumns)
			}
			if len(recs)-1 != len(want) || len(want) == 0 && query == "" {
				t.Fatalf("%d rows, want %d (every match, limit and page ignored)", len(recs)-1, len(want))
			}
			for i, n := range want {
				if got := recs[i+1]; !slices.Equal(got, n.CSVRecord(nil)) {
					t.Errorf("row %d %v, want %v", i+1, got, n.CSVRecord(nil))
				}
			}
			if got := res.header.Get("X-Total-Count"); got != fmt.Sprint(len(want)) {
				t.Errorf("X-Total-Count %q, want %d", got, len(want))
			}
			if cd := res.header.Get("Content-Disposition"); cd != `attachment; filename="notices-20260403T000000Z.csv"` {
				t.Errorf("Content-Disposition %q", cd)
			}
		})
	}
}

// TestCSVNegotiation: text/csv only when Accept prefers it to JSON.
func TestCSVNegotiation(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		accept string
		csv    bool
	}{
		{"", false}, {"*/*", false}, {"application/json", false}, {"text/html", false},
		{"text/csv", true}, {"text/*", true}, {"Text/CSV; charset=utf-8", true},
		{"text/csv;q=0.5, application/json", false}, {"application/json;q=0.2, text/csv", true},
		{"text/csv, application/json", false}, {"text/csv;q=0, */*", false}, {"*/*;q=0.1, text/csv", true},
	} {
		t.Run(c.accept, func(t *testing.T) {
			res := f.sendCSV(t, http.MethodGet, "/v1/notices", c.accept, "", nil)
			gotCSV := strings.HasPrefix(res.header.Get("Content-Type"), "text/csv")
			if res.status != http.StatusOK || gotCSV != c.csv {
				t.Errorf("Accept %q: status %d, Content-Type %q; want CSV %v", c.accept, res.status, res.header.Get("Content-Type"), c.csv)
			}
		})
	}
	t.Run("errors stay JSON", func(t *testing.T) {
		wantError(t, f.sendCSV(t, http.MethodGet, "/v1/notices?sort=sideways", "text/csv", "", nil), http.StatusBadRequest, "invalid_parameter")
		wantError(t, f.sendCSV(t, http.MethodGet, "/v1/notices?q=%22open", "text/csv", "", nil), http.StatusBadRequest, "invalid_query")
		res := f.sendCSV(t, http.MethodPost, "/v1/match", "text/csv", "text/csv", []byte("12345\n"))
		wantError(t, res, http.StatusBadRequest, "invalid_identifier")
	})
}

// TestNoticesCSVExportTooLarge: more matches than the export limit is 400
// export_too_large naming the count, before anything is sent.
func TestNoticesCSVExportTooLarge(t *testing.T) {
	f := newFixture(t)
	var p searchResult
	f.get(t, "/v1/notices?include_deregistration=true", &p)
	f.srv.exportMax = int(p.Total) - 1
	res := f.sendCSV(t, http.MethodGet, "/v1/notices?include_deregistration=true", "text/csv", "", nil)
	wantError(t, res, http.StatusBadRequest, "export_too_large")
	if m := errorMessage(t, res); !strings.Contains(m, fmt.Sprintf("%d notices match", p.Total)) || !strings.Contains(m, "narrow the filters") {
		t.Errorf("message %q must give the count and suggest narrowing the filters", m)
	}
	f.srv.exportMax = int(p.Total)
	if recs := readCSV(t, f.sendCSV(t, http.MethodGet, "/v1/notices?include_deregistration=true", "text/csv", "", nil)); len(recs)-1 != int(p.Total) {
		t.Errorf("at the limit: %d rows, want %d", len(recs)-1, p.Total)
	}
	if MaxExport != 100000 {
		t.Errorf("MaxExport %d, want 100,000", MaxExport)
	}
}

// TestNoticesCSVQuoting: a company name with commas, quotes and a line
// break comes back whole, quoted as RFC 4180 says, its line feed a line
// feed as in the JSON answer; a cell starting with = gets an apostrophe
// (a spreadsheet would run it as a formula) unless raw=true.
func TestNoticesCSVQuoting(t *testing.T) {
	f := newFixture(t)
	ns := loadNotices(t)
	n := ns[0]
	n.SourceID, n.ID = "csv-quoting", notice.IDFor("csv-quoting")
	n.CompanyName = "=Smith, \"Jones\"\nand Partners Pty Ltd"
	if _, err := f.store.UpsertNotices(context.Background(), []notice.Notice{n}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query, quoted, cell string
	}{
		{"", `"'=Smith, ""Jones""` + "\nand Partners Pty Ltd\"", "'" + n.CompanyName},
		{"&raw=false", `"'=Smith, ""Jones""` + "\nand Partners Pty Ltd\"", "'" + n.CompanyName},
		{"&raw=true", `"=Smith, ""Jones""` + "\nand Partners Pty Ltd\"", n.CompanyName},
	} {
		t.Run("raw"+c.query, func(t *testing.T) {
			res := f.sendCSV(t, http.MethodGet, "/v1/notices?include_deregistration=true"+c.query, "text/csv", "", nil)
			if !bytes.Contains(res.body, []byte(c.quoted)) {
				t.Errorf("the name is not written %q: %s", c.quoted, clip(res.body))
			}
			found := false
			for _, rec := range readCSV(t, res) {
				if rec[0] == n.ID {
					found = rec[5] == c.cell
				}
			}
			if !found {
				t.Errorf("notice %s with company name %q not read back as %q", n.ID, n.CompanyName, c.cell)
			}
		})
	}
	t.Run("raw=1", func(t *testing.T) {
		res := f.sendCSV(t, http.MethodGet, "/v1/notices?raw=1", "text/csv", "", nil)
		wantError(t, res, http.StatusBadRequest, "invalid_parameter")
	})
}

// TestNoticesExportSnapshot: an export reads one view of the notices:
// notices stored while it runs are neither added nor repeated.
func TestNoticesExportSnapshot(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	q := notice.SearchQuery{Filter: notice.Filter{IncludeDeregistration: true}, Sort: notice.SortPublishedDesc}
	exp, err := f.store.ExportNotices(ctx, q, MaxExport)
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Close()
	total := exp.Total()
	ns := loadNotices(t)
	var added []notice.Notice
	for i := range 3 {
		n := ns[i]
		n.SourceID = fmt.Sprintf("snapshot-%d", i)
		n.ID = notice.IDFor(n.SourceID)
		n.PublishedDate, n.PublishedAt = "2030-01-0"+fmt.Sprint(i+1), fmt.Sprintf("2030-01-0%dT00:00:00.000Z", i+1)
		added = append(added, n)
	}
	if _, err := f.store.UpsertNotices(ctx, added); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for {
		batch, err := exp.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 {
			break
		}
		for _, n := range batch {
			if seen[n.ID] || strings.HasPrefix(n.SourceID, "snapshot-") {
				t.Errorf("notice %s repeated or added during the export", n.ID)
			}
			seen[n.ID] = true
		}
	}
	if int64(len(seen)) != total {
		t.Errorf("read %d notices, the export said %d", len(seen), total)
	}
}

// TestScreenCSV: POST /v1/match with CSV in and out. A JSON body's CSV
// answer is one row per distinct identifier in submission order, the
// same answer as JSON; a CSV body's (the header-row forms, one identifier
// per line, a byte-order mark, blank rows) is the upload given back, every
// row in order, duplicates included, with the result columns appended.
func TestScreenCSV(t *testing.T) {
	f := newWatchFixture(t, nil)
	ids := []string{"123 456 780", "333333332", "444444446", "123456789", "11123456780", "123456780", "222222228", "12345678901"}
	resultHeader := []string{"identifier", "result", "acn", "company_name", "notice_count", "latest_notice_id", "latest_published_date", "latest_notice_purpose", "insolvency", "latest_insolvency_notice_id", "latest_insolvency_published_date", "latest_insolvency_notice_purpose", "notice_purposes"}
	js, _ := json.Marshal(map[string]any{"identifiers": ids})
	s, _ := f.screenOK(t, string(js))
	cells := screenCells(s)
	want := [][]string{resultHeader}
	seen := map[string]bool{}
	for _, id := range ids {
		id = strings.ReplaceAll(id, " ", "")
		if !seen[id] {
			seen[id] = true
			want = append(want, cells(id))
		}
	}
	// upload is the answer to a CSV body: header, then each row's cells
	// and the results of its identifier (cell col).
	upload := func(header []string, rows [][]string, col int) [][]string {
		out := [][]string{header}
		for _, r := range rows {
			if strings.TrimSpace(strings.Join(r, "")) == "" {
				out = append(out, append(slices.Clone(r), make([]string, len(resultHeader))...))
				continue
			}
			out = append(out, append(slices.Clone(r), cells(strings.ReplaceAll(r[col], " ", ""))...))
		}
		return out
	}
	var one, named [][]string
	for i, id := range ids {
		one = append(one, []string{id})
		named = append(named, []string{fmt.Sprintf("Co, %d", i), id, `say "hi"`})
	}
	named = append(named, []string{"", "", ""})
	lines := strings.Join(ids, "\n")
	for _, c := range []struct {
		name, contentType, body string
		want                    [][]string
	}{
		{"JSON body", "application/json", string(js), want},
		{"one per line", "text/csv", lines + "\n", upload(append([]string{"submitted"}, resultHeader...), one, 0)},
		{"CRLF, BOM, empty lines", "text/csv; charset=utf-8", "\xef\xbb\xbf" + strings.Join(ids[:4], "\r\n") + "\r\n\r\n" + strings.Join(ids[4:], "\r\n"),
			upload(append([]string{"submitted"}, resultHeader...), one, 0)},
		{"header acn", "text/csv", "ACN\n" + lines, upload([]string{"ACN", "identifier", "result", "screen_acn", "company_name", "notice_count", "latest_notice_id", "latest_published_date", "latest_notice_purpose", "insolvency", "latest_insolvency_notice_id", "latest_insolvency_published_date", "latest_insolvency_notice_purpose", "notice_purposes"}, one, 0)},
		{"header identifier in a later column", "text/csv", "name,Identifier,notes\n" + strings.Join(func() []string {
			var rows []string
			for i, id := range ids {
				rows = append(rows, fmt.Sprintf("\"Co, %d\",%s,\"say \"\"hi\"\"\"", i, id))
			}
			rows = append(rows, ",,")
			return rows
		}(), "\r\n"), upload([]string{"name", "Identifier", "notes", "screen_identifier", "result", "acn", "company_name", "notice_count", "latest_notice_id", "latest_published_date", "latest_notice_purpose", "insolvency", "latest_insolvency_notice_id", "latest_insolvency_published_date", "latest_insolvency_notice_purpose", "notice_purposes"}, named, 1)},
		{"header abn", "text/csv", "abn\n" + lines, upload(append([]string{"abn"}, resultHeader...), one, 0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := f.sendCSV(t, http.MethodPost, "/v1/match", "text/csv", c.contentType, []byte(c.body))
			got := readCSV(t, res)
			if !slices.EqualFunc(got, c.want, slices.Equal) {
				t.Errorf("answer\n%q\nwant\n%q", got, c.want)
			}
			if cd := res.header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="screen-`) {
				t.Errorf("Content-Disposition %q", cd)
			}
		})
	}
	t.Run("CSV body, JSON answer", func(t *testing.T) {
		res := f.sendCSV(t, http.MethodPost, "/v1/match", "", "text/csv", []byte(lines))
		var got screenJSON
		decodeBody(t, res, &got)
		if got.Counts.Submitted != 7 || got.Counts.Matched != s.Counts.Matched {
			t.Errorf("counts %+v, want those of the JSON body %+v", got.Counts, s.Counts)
		}
	})
}

// screenCells returns the result cells of the CSV answer for a normalised
// identifier, from the JSON answer s.
func screenCells(s screenJSON) func(id string) []string {
	return func(id string) []string {
		switch {
		case slices.Contains(s.Unmatched, id):
			for _, u := range s.UnmatchedCompanies {
				if u.Identifier == id {
					acn, name := "", ""
					if u.ACN != nil {
						acn = *u.ACN
					}
					if u.CompanyName != nil {
						name = *u.CompanyName
					}
					return []string{id, "unmatched", acn, name, "0", "", "", "", "false", "", "", "", ""}
				}
			}
			return []string{id, "unmatched without unmatched_companies"}
		case slices.Contains(s.Unresolved, id):
			return []string{id, "unresolved", "", "", "", "", "", "", "", "", "", "", ""}
		}
		for _, m := range s.Matched {
			if m.Identifier == id {
				ins := []string{"false", "", "", ""}
				if li := m.LatestInsolvencyNotice; li != nil {
					ins = []string{"true", li.ID, li.PublishedDate, li.NoticePurpose}
				}
				return append([]string{id, "matched", *m.ACN, *m.CompanyName, fmt.Sprint(m.NoticeCount), m.LatestNotice.ID, m.LatestNotice.PublishedDate, m.LatestNotice.NoticePurpose},
					append(ins, strings.Join(m.NoticePurposes, "; "))...)
			}
		}
		return []string{id, "not in the JSON answer"}
	}
}

// TestScreenCSVValidation: errors of a CSV body, in the JSON error shape,
// naming the line.
func TestScreenCSVValidation(t *testing.T) {
	f := newWatchFixture(t, nil)
	many := strings.Repeat("123456780\n", 50001)
	for _, c := range []struct{ name, body, code, inMessage string }{
		{"empty", "", "empty_request", "no identifiers"},
		{"blank lines only", "\r\n\r\n", "empty_request", "no identifiers"},
		{"header only", "acn\n", "empty_request", "no identifiers"},
		{"malformed on line 3", "123456780\n333333332\n12-34\n99\n", "invalid_identifier", `"12-34" on line 3`},
		{"malformed after header", "name,acn\nA,123456780\nB,\n", "invalid_identifier", `"" on line 3`},
		{"missing column", "name,acn\nA,123456780\nB\n", "invalid_identifier", "on line 3"},
		{"several cells without header", "123456780\n333333332,x\n", "invalid_identifier", "line 2 has 2 cells"},
		{"unknown header", "company number\n123456780\n", "invalid_identifier", "line 1"},
		{"bare quote", "123456780\n12\"3\n", "invalid_identifier", "malformed on line 2"},
		{"not UTF-8", "123456780\n\xff\xfe\n", "invalid_identifier", "not UTF-8 (line 2)"},
		{"too many", many, "too_many_identifiers", "50001 identifiers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := f.sendCSV(t, http.MethodPost, "/v1/match", "text/csv", "text/csv", []byte(c.body))
			wantError(t, res, http.StatusBadRequest, c.code)
			if m := errorMessage(t, res); !strings.Contains(m, c.inMessage) {
				t.Errorf("message %q lacks %q", m, c.inMessage)
			}
		})
	}
	t.Run("charset other than UTF-8", func(t *testing.T) {
		res := f.sendCSV(t, http.MethodPost, "/v1/match", "", "text/csv; charset=latin1", []byte("123456780\n"))
		wantError(t, res, http.StatusBadRequest, "invalid_identifier")
	})
}

// closedExports opens every export of its store and closes it before
// handing it over: the export's first read fails for real (its read
// transaction is gone).
type closedExports struct{ store.Notices }

func (c closedExports) ExportNotices(ctx context.Context, q notice.SearchQuery, max int) (store.NoticeExport, error) {
	exp, err := c.Notices.ExportNotices(ctx, q, max)
	if err == nil {
		err = exp.Close()
	}
	return exp, err
}

// TestExportFailureIsAnError: an export is produced whole before its
// answer begins, so a store failure while reading it is a JSON error
// (500 server_error), never a 200 cut short; the failure is logged and
// the heavy slot is given back (the key's one slot serves the next
// export).
func TestExportFailureIsAnError(t *testing.T) {
	f := newLimitFixture(t, limit.NewLocal(1, func() time.Time { return fixedNow }), 100)
	healthy := f.srv.deps.Notices
	f.srv.deps.Notices = closedExports{healthy}
	res := f.sendCSV(t, http.MethodGet, "/v1/notices", "text/csv", "", nil)
	wantError(t, res, http.StatusInternalServerError, "server_error")
	if !strings.Contains(f.logs.String(), "CSV export failed") {
		t.Errorf("failure not logged: %s", f.logs.String())
	}
	f.srv.deps.Notices = healthy
	if res := f.sendCSV(t, http.MethodGet, "/v1/notices", "text/csv", "", nil); res.status != http.StatusOK {
		t.Errorf("the next export: HTTP %d %s, want 200 (the failed one gave its slot back)", res.status, res.body)
	}
}

// TestExportIsHeavy: a CSV export takes a heavy slot of its key (429 while
// the key's one slot is held, JSON search still passes) and gives it back
// once its body is sent, also for HEAD.
func TestExportIsHeavy(t *testing.T) {
	ctx := context.Background()
	for name, newLimiter := range limiters() {
		t.Run(name, func(t *testing.T) {
			l := newLimiter(t)
			f := newLimitFixture(t, l, 100)
			p, err := f.store.Authenticate(ctx, f.read)
			if err != nil {
				t.Fatal(err)
			}
			release, d, err := l.Acquire(ctx, heavyKey(p), 1)
			if err != nil || !d.Allowed {
				t.Fatalf("acquire: %+v %v", d, err)
			}
			res := f.sendCSV(t, http.MethodGet, "/v1/notices", "text/csv", "", nil)
			wantError(t, res, http.StatusTooManyRequests, "rate_limited")
			if !strings.Contains(errorMessage(t, res), "CSV exports") {
				t.Errorf("message %q should name CSV exports among heavy requests", errorMessage(t, res))
			}
			if res := f.do(t, http.MethodGet, "/v1/notices", f.read); res.status != http.StatusOK {
				t.Errorf("a JSON search is light: HTTP %d", res.status)
			}
			release()
			for i := range 3 { // each must find the slot the one before gave back
				method := http.MethodGet
				if i == 1 {
					method = http.MethodHead
				}
				if res := f.sendCSV(t, method, "/v1/notices", "text/csv", "", nil); res.status != http.StatusOK ||
					res.header.Get("Content-Type") != contentTypeCSV {
					t.Fatalf("%s export %d: HTTP %d %s", method, i, res.status, res.body)
				}
			}
		})
	}
}

// TestExportAtTheRealLimit: MaxExport notices export whole; one more is
// export_too_large (SQLite, 100,001 notices stored).
func TestExportAtTheRealLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 100,001 notices")
	}
	f := newFixture(t)
	ctx := context.Background()
	var p searchResult
	f.get(t, "/v1/notices?include_deregistration=true", &p)
	base := loadNotices(t)
	var batch []notice.Notice
	for i := int(p.Total); i < MaxExport; i++ {
		n := base[i%len(base)]
		n.SourceID = fmt.Sprintf("limit-%d", i)
		n.ID = notice.IDFor(n.SourceID)
		batch = append(batch, n)
		if len(batch) == 5000 || i == MaxExport-1 {
			if _, err := f.store.UpsertNotices(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	res := f.sendCSV(t, http.MethodGet, "/v1/notices?include_deregistration=true", "text/csv", "", nil)
	if n := bytes.Count(res.body, []byte("\r\n")) - 1; res.status != http.StatusOK || n != MaxExport {
		t.Fatalf("at the limit: HTTP %d, %d rows, want %d", res.status, n, MaxExport)
	}
	extra := base[0]
	extra.SourceID = "limit-extra"
	extra.ID = notice.IDFor(extra.SourceID)
	if _, err := f.store.UpsertNotices(ctx, []notice.Notice{extra}); err != nil {
		t.Fatal(err)
	}
	res = f.sendCSV(t, http.MethodGet, "/v1/notices?include_deregistration=true", "text/csv", "", nil)
	wantError(t, res, http.StatusBadRequest, "export_too_large")
	if m := errorMessage(t, res); !strings.Contains(m, "100001 notices match") {
		t.Errorf("message %q", m)
	}
}
