package sqlite

// Benchmarks on a synthetic corpus (see synth_test.go), sized by environment:
//
//	NOTICES_BENCH_NOTICES   notices in the read benchmarks' database [20000]
//	NOTICES_BENCH_REGISTER  rows loaded by BenchmarkRegisterLoad [100000]
//	NOTICES_BENCH_DIR       where the read database is built and kept for
//	                        reuse across runs [a temporary directory]
//
// `make bench` sets 1,000,000 notices and 4,000,000 register rows. Read
// benchmarks report p50/p99 latency (ms) over the operations run; write
// benchmarks report throughput.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"noticesd/ident"
	"noticesd/notice"
	"noticesd/query"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

var (
	benchOnce  sync.Once
	benchStore *Store
	benchErr   error
	benchTmp   string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchStore != nil {
		benchStore.Close()
	}
	if benchTmp != "" {
		os.RemoveAll(benchTmp)
	}
	os.Exit(code)
}

// readStore opens (building on first use) the read benchmarks' database.
func readStore(b *testing.B) *Store {
	b.Helper()
	benchOnce.Do(func() {
		n := envInt("NOTICES_BENCH_NOTICES", 20000)
		dir := os.Getenv("NOTICES_BENCH_DIR")
		if dir == "" {
			benchTmp, benchErr = os.MkdirTemp("", "noticesd-bench-")
			dir = benchTmp
		}
		if benchErr != nil {
			return
		}
		path := filepath.Join(dir, fmt.Sprintf("bench-%d.db", n))
		benchStore, benchErr = Open(context.Background(), path)
		if benchErr != nil {
			return
		}
		benchErr = ensureCorpus(benchStore, n)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchStore
}

// ensureCorpus fills s with n synthetic notices and their register, unless a
// previous run already did.
func ensureCorpus(s *Store, n int) error {
	ctx := context.Background()
	var done string
	_ = s.read.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'bench_corpus'").Scan(&done)
	if done == strconv.Itoa(n) {
		return nil
	}
	start := time.Now()
	g := newSynth(1, n)
	batch := make([]notice.Notice, 0, 2000)
	for i := 0; i < n; i++ {
		batch = append(batch, g.notice(i))
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.UpsertNotices(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	l, err := s.beginRegister(ctx)
	if err != nil {
		return err
	}
	rows := g.register()
	for i := 0; i < len(rows); i += 10000 {
		if err := l.Add(ctx, rows[i:min(i+10000, len(rows))]); err != nil {
			return err
		}
	}
	if err := l.Commit(ctx); err != nil {
		return err
	}
	if err := s.Analyze(ctx); err != nil {
		return err
	}
	_, err = s.write.ExecContext(ctx, "INSERT OR REPLACE INTO meta (key, value) VALUES ('bench_corpus', ?)", strconv.Itoa(n))
	fmt.Fprintf(os.Stderr, "bench corpus: %d notices, %d register rows built in %s\n", n, len(rows), time.Since(start).Round(time.Millisecond))
	return err
}

// latencies records per-operation durations and reports percentiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	pct := func(p float64) float64 {
		return float64(l[min(len(l)-1, int(p*float64(len(l))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// runLatency runs op b.N times, cycling through variants, and reports p50/p99.
func runLatency[T any](b *testing.B, variants []T, op func(T) error) {
	b.Helper()
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := op(variants[i%len(variants)]); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.report(b)
}

func BenchmarkUpsertNotices(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "upsert.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const batchSize = 1000
	g := newSynth(2, 100000)
	batches := make([][]notice.Notice, b.N)
	for i := range batches {
		batches[i] = make([]notice.Notice, batchSize)
		for j := range batches[i] {
			batches[i][j] = g.notice(i*batchSize + j)
		}
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		res, err := s.UpsertNotices(context.Background(), batches[i])
		if err != nil {
			b.Fatal(err)
		}
		if res.Inserted != batchSize {
			b.Fatalf("inserted %d of %d", res.Inserted, batchSize)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*batchSize)/time.Since(start).Seconds(), "notices/s")
}

func BenchmarkRegisterLoad(b *testing.B) {
	n := envInt("NOTICES_BENCH_REGISTER", 100000)
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "register.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	g := newSynth(3, n)
	rows := g.registerRows(n)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		l, err := s.BeginRegister(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < len(rows); j += 10000 {
			if err := l.Add(ctx, rows[j:min(j+10000, len(rows))]); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*len(rows))/time.Since(start).Seconds(), "rows/s")
}

func lastDays(days int) (string, string) {
	to := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	return to.AddDate(0, 0, -days).Format(notice.DateLayout), to.Format(notice.DateLayout)
}

func filterVariants() []notice.SearchQuery {
	from90, to := lastDays(90)
	from365, _ := lastDays(365)
	q := func(f notice.Filter, sort string, page int) notice.SearchQuery {
		return notice.SearchQuery{Filter: f, Sort: sort, Limit: 20, Page: page}
	}
	d := notice.SortPublishedDesc
	return []notice.SearchQuery{
		q(notice.Filter{}, d, 1),
		q(notice.Filter{State: []string{"NSW"}}, d, 1),
		q(notice.Filter{AppointmentType: []string{"Court Liquidation"}}, d, 1),
		q(notice.Filter{From: from90, To: to}, d, 1),
		q(notice.Filter{State: []string{"VIC", "qld"}, NoticePurpose: []string{"appointment"}}, d, 1),
		q(notice.Filter{NoticeCode: []string{"PD"}, From: from365}, d, 1),
		q(notice.Filter{}, d, 5),
		q(notice.Filter{}, notice.SortPublishedAsc, 1),
		q(notice.Filter{IncludeDeregistration: true}, d, 1),
		q(notice.Filter{Status: []string{"Under Administration"}, State: []string{"WA"}}, d, 1),
	}
}

func BenchmarkSearchFilterOnly(b *testing.B) {
	s := readStore(b)
	runLatency(b, filterVariants(), func(q notice.SearchQuery) error {
		_, err := s.Search(context.Background(), q)
		return err
	})
}

func qVariants(b *testing.B) []notice.SearchQuery {
	var out []notice.SearchQuery
	from, to := lastDays(365)
	for _, c := range []struct {
		q string
		f notice.Filter
	}{
		{"creditors", notice.Filter{}},
		{"liquidator meeting", notice.Filter{}},
		{`"voluntary administration"`, notice.Filter{}},
		{"insolv*", notice.Filter{}},
		{"harbour", notice.Filter{}},
		{"pacific OR coastal", notice.Filter{}},
		{"creditors -dividend", notice.Filter{}},
		{"proof debt", notice.Filter{State: []string{"NSW"}}},
		{"smith", notice.Filter{From: from, To: to}},
		{"mining", notice.Filter{IncludeDeregistration: true}},
	} {
		n, err := query.Parse(c.q)
		if err != nil {
			b.Fatalf("parse %q: %v", c.q, err)
		}
		f := c.f
		f.Q = n
		out = append(out, notice.SearchQuery{Filter: f, Sort: notice.SortRelevance, Limit: 20, Page: 1})
	}
	return out
}

func BenchmarkSearchQ(b *testing.B) {
	s := readStore(b)
	runLatency(b, qVariants(b), func(q notice.SearchQuery) error {
		_, err := s.Search(context.Background(), q)
		return err
	})
}

func BenchmarkCompany(b *testing.B) {
	s := readStore(b)
	g := newSynth(1, envInt("NOTICES_BENCH_NOTICES", 20000))
	var ids []ident.ID
	for i := 0; i < 200; i++ {
		acn := g.companyACN(i * 7919 % g.companies)
		if i%3 == 0 {
			ids = append(ids, ident.ID{Value: ident.ABNFromACN(acn), Kind: ident.ABN})
		} else {
			ids = append(ids, ident.ID{Value: acn, Kind: ident.ACN})
		}
	}
	runLatency(b, ids, func(id ident.ID) error {
		_, err := s.Company(context.Background(), id)
		return err
	})
}

func BenchmarkFilters(b *testing.B) {
	s := readStore(b)
	var fs []notice.Filter
	for _, q := range filterVariants() {
		fs = append(fs, q.Filter)
	}
	creditors, _ := query.Parse("creditors")
	fs = append(fs, notice.Filter{Q: creditors})
	runLatency(b, fs, func(f notice.Filter) error {
		_, err := s.Filters(context.Background(), f)
		return err
	})
}

func BenchmarkStats(b *testing.B) {
	s := readStore(b)
	from, to := lastDays(365)
	qs := []notice.StatsQuery{
		{GroupBy: "month"},
		{GroupBy: "state"},
		{GroupBy: "appointment_type", Filter: notice.Filter{From: from, To: to}},
		{GroupBy: "month", Filter: notice.Filter{State: []string{"NSW"}}},
		{GroupBy: "notice_code"},
		{GroupBy: "month", Filter: notice.Filter{IncludeDeregistration: true}},
	}
	runLatency(b, qs, func(q notice.StatsQuery) error {
		_, err := s.Stats(context.Background(), q)
		return err
	})
}
