package api

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/sqlite"
	"github.com/noticesd/noticesd/internal/watch"
)

// The HTTP benchmarks measure what a client sees, through a real listener
// and net/http, against a database built by internal/store/sqlite's
// benchmarks (NOTICES_BENCH_DB; `make bench` sets it), each beside its
// floor measured in the same run: the same store call without HTTP, or for
// POST /v1/match decoding the body and looking every id up in a Go map.

type httpBench struct {
	st   *sqlite.Store
	base string
	key  string
	cl   *http.Client
}

func newHTTPBench(b *testing.B) *httpBench {
	b.Helper()
	path := os.Getenv("NOTICES_BENCH_DB")
	if path == "" {
		b.Fatal("NOTICES_BENCH_DB is not set: point it at the database internal/store/sqlite's benchmarks build (make bench does)")
	}
	if _, err := os.Stat(path); err != nil {
		b.Fatalf("NOTICES_BENCH_DB: %v (run the internal/store/sqlite benchmarks first; make bench does)", err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if err := st.WarmCompanyIndex(ctx); err != nil {
		b.Fatal(err)
	}
	acc, err := st.CreateAccount(ctx, "bench", "enterprise")
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	cfg.MaxBodyBytes = 64 << 20
	srv := New(cfg, Deps{Notices: st, Accounts: st, Watches: st})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.App().Shutdown() })
	return &httpBench{st: st, base: "http://" + ln.Addr().String(), key: acc.ReadKey,
		cl: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
}

// do sends one request and reads the whole response.
func (h *httpBench) do(b *testing.B, method, path string, body []byte) {
	req, err := http.NewRequest(method, h.base+path, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set(HeaderAPIKey, h.key)
	resp, err := h.cl.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s %s: HTTP %d", method, path, resp.StatusCode)
	}
}

// p50 runs op n times and returns the median duration.
func p50(n int, op func()) time.Duration {
	d := make([]time.Duration, n)
	for i := range d {
		t0 := time.Now()
		op()
		d[i] = time.Since(t0)
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[n/2]
}

// pairedP50 times a and its floor f on the same inputs under the same
// caches, as the scale read benchmarks do: one untimed call of each for
// inputs 0 to warm-1 (connections, SQLite's page cache, prepared
// statements), then n rounds in which both run on input i, a first in
// even rounds and f first in odd ones. It returns each one's median.
func pairedP50(n, warm int, a, f func(i int)) (aP50, fP50 time.Duration) {
	for i := 0; i < warm; i++ {
		a(i)
		f(i)
	}
	da, df := make([]time.Duration, n), make([]time.Duration, n)
	timed := func(op func(int), i int) time.Duration {
		t0 := time.Now()
		op(i)
		return time.Since(t0)
	}
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			da[i] = timed(a, i)
			df[i] = timed(f, i)
		} else {
			df[i] = timed(f, i)
			da[i] = timed(a, i)
		}
	}
	return median(da), median(df)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// report records the HTTP p50, its floor's p50 and their ratio.
func report(b *testing.B, httpP50, floorP50 time.Duration) {
	b.ReportMetric(ms(httpP50), "p50-ms")
	b.ReportMetric(ms(floorP50), "floor-p50-ms")
	b.ReportMetric(float64(httpP50)/float64(floorP50), "x-floor")
}

// readStrings runs a query of one text column on the bench database.
func readStrings(b *testing.B, db *sql.DB, q string) []string {
	rows, err := db.Query(q)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			b.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func benchDB(b *testing.B) *sql.DB {
	db, err := sql.Open("sqlite3", "file:"+os.Getenv("NOTICES_BENCH_DB")+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkHTTPMatch50k: POST /v1/match with 50,000 identifiers (register
// ACNs and ABNs spread over the file, most with notices or known), against
// decoding the same body and looking each id up in a Go map.
func BenchmarkHTTPMatch50k(b *testing.B) {
	h := newHTTPBench(b)
	db := benchDB(b)
	ids := readStrings(b, db, "SELECT acn FROM register WHERE rowid % 97 = 0 LIMIT 40000")
	ids = append(ids, readStrings(b, db, "SELECT abn FROM register WHERE abn <> '' AND rowid % 89 = 1 LIMIT 10000")...)
	if len(ids) < 50000 { // a small (BENCH_QUICK) database: every company
		ids = readStrings(b, db, "SELECT DISTINCT acn FROM register LIMIT 50000")
	}
	ids = ids[:min(50000, len(ids))]
	body, _ := json.Marshal(map[string]any{"identifiers": ids})
	known := make(map[string]watch.Matched, len(ids))
	for _, id := range ids {
		known[id] = watch.Matched{Identifier: id}
	}
	rounds := max(b.N, 20)
	b.ResetTimer()
	httpP50, floor := pairedP50(rounds, 1, func(int) { h.do(b, http.MethodPost, "/v1/match", body) }, func(int) {
		var req struct {
			Identifiers []string `json:"identifiers"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, id := range req.Identifiers {
			if _, ok := known[id]; ok {
				n++
			}
		}
		if n != len(ids) {
			b.Fatal("map lookup lost ids")
		}
	})
	report(b, httpP50, floor)
	b.ReportMetric(float64(len(ids)), "ids")
}

// BenchmarkHTTPSearchFilterOnly: filter-only GET /v1/notices against the
// same Search called on the store.
func BenchmarkHTTPSearchFilterOnly(b *testing.B) {
	h := newHTTPBench(b)
	queries := []struct {
		params url.Values
		q      notice.SearchQuery
	}{
		{url.Values{"state": {"NSW"}}, notice.SearchQuery{Filter: notice.Filter{State: []string{"NSW"}}}},
		{url.Values{"notice_code": {"APL"}}, notice.SearchQuery{Filter: notice.Filter{NoticeCode: []string{"APL"}}}},
		{url.Values{"appointment_type": {"Court Liquidation"}}, notice.SearchQuery{Filter: notice.Filter{AppointmentType: []string{"Court Liquidation"}}}},
		{url.Values{}, notice.SearchQuery{}},
	}
	for i := range queries {
		queries[i].q.Sort, queries[i].q.Limit, queries[i].q.Page = notice.SortPublishedDesc, 20, 1
	}
	rounds := max(b.N, 50) * len(queries)
	b.ResetTimer()
	httpP50, floor := pairedP50(rounds, len(queries), func(i int) {
		h.do(b, http.MethodGet, "/v1/notices?limit=20&"+queries[i%len(queries)].params.Encode(), nil)
	}, func(i int) {
		if _, err := h.st.Search(context.Background(), queries[i%len(queries)].q); err != nil {
			b.Fatal(err)
		}
	})
	report(b, httpP50, floor)
}

// BenchmarkHTTPCompany: GET /v1/companies/{id} against the same Company
// called on the store.
func BenchmarkHTTPCompany(b *testing.B) {
	h := newHTTPBench(b)
	db := benchDB(b)
	acns := readStrings(b, db, "SELECT acn FROM notices WHERE acn IS NOT NULL AND seq % 4999 = 0 LIMIT 100")
	if len(acns) == 0 {
		b.Fatal("no companies in the bench database")
	}
	rounds := max(b.N, 200)
	b.ResetTimer()
	httpP50, floor := pairedP50(rounds, len(acns), func(i int) {
		h.do(b, http.MethodGet, "/v1/companies/"+acns[i%len(acns)], nil)
	}, func(i int) {
		if _, err := h.st.Company(context.Background(), ident.ID{Value: acns[i%len(acns)], Kind: ident.ACN}); err != nil {
			b.Fatal(err)
		}
	})
	report(b, httpP50, floor)
}
