package sqlite

// Benchmarks on the realistic sample (package sample), loaded through the
// real ingest path (ingest.Notices, ingest.Register), sized by environment:
//
//	NOTICES_BENCH_NOTICES   sample notices [20000]
//	NOTICES_BENCH_REGISTER  sample register rows [80000]
//	NOTICES_BENCH_DIR       where the sample files and the read database are
//	                        built and kept for reuse across runs
//	                        [a temporary directory, removed at exit]
//	NOTICES_BENCH_VERBOSE   1 prints each query variant's median to stderr
//
// `make bench` sets 1,000,000 notices and 4,000,000 register rows.
//
// BenchmarkIngestNotices and BenchmarkIngestRegister load the sample end to
// end (file reading, gunzip, parsing, the store) and report rows/s; they
// build the read benchmarks' database, which later runs reuse. Read
// benchmarks run a fixed, seeded mix of queries, cycling through it, and
// report p50/p99 latency in ms over the operations run (use -benchtime Nx
// for a fixed count; every variant runs at least minRounds times). Nothing
// caches results: every operation is a query.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/sample"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchNow is the end of the sample's publication window; date filters of
// the query mixes are relative to it.
var benchNow = time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC)

const benchSeed = 1

var (
	benchOnce  sync.Once
	benchStore *Store
	benchErr   error

	benchDirOnce sync.Once
	benchDirPath string
	benchDirErr  error
	benchTmp     string

	benchFilesOnce sync.Once
	benchFiles     sample.Files
	benchFilesErr  error
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

func benchSizes() (notices, register int) {
	return envInt("NOTICES_BENCH_NOTICES", 20000), envInt("NOTICES_BENCH_REGISTER", 80000)
}

// benchDir is NOTICES_BENCH_DIR, or a temporary directory removed at exit.
func benchDir(b *testing.B) string {
	b.Helper()
	benchDirOnce.Do(func() {
		benchDirPath = os.Getenv("NOTICES_BENCH_DIR")
		if benchDirPath == "" {
			benchTmp, benchDirErr = os.MkdirTemp("", "noticesd-bench-")
			benchDirPath = benchTmp
		}
	})
	if benchDirErr != nil {
		b.Fatal(benchDirErr)
	}
	return benchDirPath
}

// sampleFiles writes (once, and keeps in the bench directory) the sample.
func sampleFiles(b *testing.B) sample.Files {
	b.Helper()
	dir := benchDir(b)
	benchFilesOnce.Do(func() {
		n, r := benchSizes()
		sub := filepath.Join(dir, fmt.Sprintf("sample-s%d-n%d-r%d", benchSeed, n, r))
		files := sample.Files{Notices: filepath.Join(sub, sample.NoticesFile), Register: filepath.Join(sub, sample.RegisterFile)}
		if exists(files.Notices) && exists(files.Register) {
			benchFiles = files
			return
		}
		start := time.Now()
		benchFiles, benchFilesErr = sample.WriteFiles(sample.Options{Notices: n, Companies: r, Seed: benchSeed, Now: benchNow}, sub)
		fmt.Fprintf(os.Stderr, "bench sample: %d notices, %d register rows written in %s\n", n, r, time.Since(start).Round(time.Millisecond))
	})
	if benchFilesErr != nil {
		b.Fatal(benchFilesErr)
	}
	return benchFiles
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// readDBPath is the read benchmarks' database.
func readDBPath(b *testing.B) string {
	n, r := benchSizes()
	return filepath.Join(benchDir(b), fmt.Sprintf("bench-s%d-n%d-r%d.db", benchSeed, n, r))
}

// removeDB deletes a database file with its WAL and shared-memory files.
func removeDB(b *testing.B, path string) {
	b.Helper()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		}
	}
}

// Markers in meta saying which parts of the read database are loaded. The
// register marker holds the register_generation the load produced, so a
// register replaced since (another benchmark) is loaded again.
const (
	markNotices  = "bench_sample_notices"
	markRegister = "bench_sample_register"
)

func (s *Store) metaValue(key string) string {
	var v string
	_ = s.read.QueryRow("SELECT value FROM meta WHERE key = ?", key).Scan(&v)
	return v
}

func (s *Store) setMeta(b *testing.B, key, value string) {
	b.Helper()
	if _, err := s.write.Exec("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", key, value); err != nil {
		b.Fatal(err)
	}
}

// ingestNotices loads the sample's notices into s as `noticesd ingest
// notices` does.
func ingestNotices(b *testing.B, s *Store) ingest.Summary {
	b.Helper()
	sum, err := ingest.Notices(context.Background(), s, []string{sampleFiles(b).Notices}, ingest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if sum.Rejected != 0 || sum.Inserted != sum.Read {
		b.Fatalf("notice ingest: %s", sum)
	}
	s.setMeta(b, markNotices, strconv.Itoa(sum.Inserted))
	return sum
}

// ingestRegister loads the sample's register into s as `noticesd ingest
// register` does.
func ingestRegister(b *testing.B, s *Store) ingest.Summary {
	b.Helper()
	sum, err := ingest.Register(context.Background(), s, sampleFiles(b).Register, ingest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if sum.Rejected != 0 {
		b.Fatalf("register ingest: %s", sum)
	}
	s.setMeta(b, markRegister, s.metaValue("register_generation"))
	return sum
}

// readStore opens (building on first use) the read benchmarks' database:
// the sample ingested as `noticesd ingest` would, then closed and reopened
// (Close runs PRAGMA optimize, as after every real ingest).
func readStore(b *testing.B) *Store {
	b.Helper()
	benchOnce.Do(func() {
		path := readDBPath(b)
		s, err := Open(context.Background(), path)
		if err != nil {
			benchErr = err
			return
		}
		built := false
		if s.metaValue(markNotices) == "" {
			sum := ingestNotices(b, s)
			fmt.Fprintf(os.Stderr, "bench read db: %s\n", sum)
			built = true
		}
		if g := s.metaValue(markRegister); g == "" || g != s.metaValue("register_generation") {
			sum := ingestRegister(b, s)
			fmt.Fprintf(os.Stderr, "bench read db: %s\n", sum)
			built = true
		}
		if built {
			if benchErr = s.Close(); benchErr != nil {
				return
			}
			s, benchErr = Open(context.Background(), path)
		}
		benchStore = s
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchStore
}

// ingestDBPath is where an ingest benchmark loads: the read database (so it
// is built once per run) unless the read benchmarks already hold it open.
func ingestDBPath(b *testing.B) string {
	if benchStore != nil {
		return filepath.Join(b.TempDir(), "ingest.db")
	}
	return readDBPath(b)
}

// BenchmarkIngestNotices loads the sample's notices into a fresh database,
// end to end (Close and its PRAGMA optimize included), and reports rows/s.
// Each iteration is one load of the whole sample (`make bench` runs one).
func BenchmarkIngestNotices(b *testing.B) {
	sampleFiles(b)
	path := ingestDBPath(b)
	var rows int
	var took time.Duration
	for i := 0; i < b.N; i++ {
		removeDB(b, path)
		s, err := Open(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		rows += ingestNotices(b, s).Read
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
	}
	b.ReportMetric(float64(rows)/took.Seconds(), "rows/s")
}

// BenchmarkIngestNoticesAgain re-ingests the whole sample into the loaded
// database: every row is an update in place.
func BenchmarkIngestNoticesAgain(b *testing.B) {
	s := readStore(b)
	b.ResetTimer()
	var rows int
	start := time.Now()
	for i := 0; i < b.N; i++ {
		sum, err := ingest.Notices(context.Background(), s, []string{sampleFiles(b).Notices}, ingest.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if sum.Updated != sum.Read {
			b.Fatalf("re-ingest: %s", sum)
		}
		rows += sum.Read
	}
	b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkIngestRegister loads the sample's register (replacing the one
// there, as every real load does after the first) and reports rows/s,
// index building and the swap included.
func BenchmarkIngestRegister(b *testing.B) {
	sampleFiles(b)
	path := ingestDBPath(b)
	s, err := Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	var rows int
	start := time.Now()
	for i := 0; i < b.N; i++ {
		rows += ingestRegister(b, s).Read
	}
	b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "rows/s")
}

// latencies records per-operation durations and reports percentiles.
type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	return l[min(len(l)-1, int(p*float64(len(l))))]
}

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(l.pct(0.50)), "p50-ms")
	b.ReportMetric(ms(l.pct(0.99)), "p99-ms")
}

// variant is one query of a mix, named for the verbose report.
type variant[T any] struct {
	name string
	v    T
}

// minRounds is how many times a read benchmark runs its whole mix at
// least, whatever b.N is (`make bench` runs -benchtime 1x, for the ingest
// benchmarks), so p50/p99 always come from every variant.
const minRounds = 5

// runLatency runs op max(b.N, minRounds*len(variants)) times, cycling
// through the variants, and reports p50/p99.
func runLatency[T any](b *testing.B, variants []variant[T], op func(T) error) {
	b.Helper()
	n := max(b.N, minRounds*len(variants))
	lat := make(latencies, 0, n)
	per := make([]latencies, len(variants))
	b.ResetTimer()
	for i := 0; i < n; i++ {
		k := i % len(variants)
		t0 := time.Now()
		if err := op(variants[k].v); err != nil {
			b.Fatalf("%s: %v", variants[k].name, err)
		}
		d := time.Since(t0)
		lat = append(lat, d)
		per[k] = append(per[k], d)
	}
	b.StopTimer()
	lat.report(b)
	if os.Getenv("NOTICES_BENCH_VERBOSE") == "1" {
		for k, l := range per {
			if len(l) == 0 {
				continue
			}
			sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
			fmt.Fprintf(os.Stderr, "  %-60s p50 %8.2f ms  max %8.2f ms\n", variants[k].name,
				float64(l.pct(0.5).Microseconds())/1000, float64(l[len(l)-1].Microseconds())/1000)
		}
	}
}

// daysBefore is the date n days before benchNow's Sydney date.
func daysBefore(n int) string {
	return notice.PublishedDate(benchNow.AddDate(0, 0, -n))
}

// filterMix is the filter-only search mix: single filters, combinations,
// date ranges recent and old, rare values, deep pages, both sorts, with and
// without deregistration notices.
func filterMix() []variant[notice.SearchQuery] {
	today := daysBefore(0)
	type f = notice.Filter
	d, a := notice.SortPublishedDesc, notice.SortPublishedAsc
	cases := []struct {
		name string
		f    f
		sort string
		page int
	}{
		{"default", f{}, d, 1},
		{"state NSW", f{State: []string{"NSW"}}, d, 1},
		{"state vic,qld", f{State: []string{"vic", "qld"}}, d, 1},
		{"appointment_type court liquidation", f{AppointmentType: []string{"Court Liquidation"}}, d, 1},
		{"appointment_type CVL + state NSW", f{AppointmentType: []string{"Creditors' Voluntary Liquidation"}, State: []string{"NSW"}}, d, 1},
		{"last 30 days", f{From: daysBefore(30), To: today}, d, 1},
		{"last 365 days + state WA", f{From: daysBefore(365), To: today, State: []string{"WA"}}, d, 1},
		{"notice_code APL", f{NoticeCode: []string{"APL"}}, d, 1},
		{"purpose meeting, last 90 days", f{NoticePurpose: []string{"Meeting"}, From: daysBefore(90)}, d, 1},
		{"status in liquidation + state SA", f{Status: []string{"In Liquidation"}, State: []string{"SA"}}, d, 1},
		{"include_deregistration", f{IncludeDeregistration: true}, d, 1},
		{"include_deregistration + state TAS", f{IncludeDeregistration: true, State: []string{"TAS"}}, d, 1},
		{"deregistration purpose, last 90 days", f{NoticePurpose: []string{"Deregistration"}, IncludeDeregistration: true, From: daysBefore(90)}, d, 1},
		{"notice_code ADD (dereg)", f{NoticeCode: []string{"ADD"}, IncludeDeregistration: true}, d, 1},
		{"default page 5", f{}, d, 5},
		{"default page 50 limit 100 (deep)", f{}, d, -50},
		{"rare: small business restructuring", f{AppointmentType: []string{"Small Business Restructuring"}}, d, 1},
		{"rare: SBR + NT", f{AppointmentType: []string{"Small Business Restructuring"}, State: []string{"NT"}}, d, 1},
		{"year before last, state NT", f{From: daysBefore(730), To: daysBefore(365), State: []string{"NT"}}, d, 1},
		{"codes DIV,DDV", f{NoticeCode: []string{"DIV", "DDV"}}, d, 1},
		{"published_asc", f{}, a, 1},
		{"published_asc + state QLD + dereg", f{State: []string{"QLD"}, IncludeDeregistration: true}, a, 1},
		{"absent value", f{State: []string{"XX"}}, d, 1},
	}
	out := make([]variant[notice.SearchQuery], len(cases))
	for i, c := range cases {
		limit, page := 20, c.page
		if page < 0 {
			limit, page = 100, -page
		}
		out[i] = variant[notice.SearchQuery]{c.name, notice.SearchQuery{Filter: c.f, Sort: c.sort, Limit: limit, Page: page}}
	}
	return out
}

// qMix is the full-text search mix, sorted by relevance (the default with
// q) unless stated: company name words, practitioner surnames, firm names,
// phrases, prefixes, OR/NOT combinations, common words that hit a large
// share of notices, and q mixed with filters.
func qMix(b *testing.B) []variant[notice.SearchQuery] {
	type f = notice.Filter
	r := notice.SortRelevance
	cases := []struct {
		q    string
		f    f
		sort string
	}{
		{"bayside", f{}, r},
		{"kookaburra constructions", f{}, r},
		{"plumbing", f{}, r},
		{"silva", f{}, r},
		{"nguyen", f{}, r},
		{`"ridgeway turnaround"`, f{}, r},
		{"harbourside insolvency", f{}, r},
		{`"deed of company arrangement"`, f{}, r},
		{`"proof of debt"`, f{}, r},
		{"constr*", f{}, r},
		{"liquidat*", f{}, r},
		{"plumbing OR electrical", f{}, r},
		{"liquidator -members", f{}, r},
		{"cafe NOT restaurant", f{}, r},
		{"creditors", f{}, r},
		{"company", f{}, r},
		{"dividend", f{From: daysBefore(365)}, r},
		{"creditors", f{State: []string{"NSW"}}, r},
		{"bayside", f{IncludeDeregistration: true}, r},
		{"holdings", f{IncludeDeregistration: true}, r},
		{"administrator", f{AppointmentType: []string{"Voluntary Administration"}}, r},
		{"meeting", f{}, notice.SortPublishedDesc},
		{"smith", f{IncludeDeregistration: true}, notice.SortPublishedDesc},
		{"-deregistration", f{IncludeDeregistration: true}, r},
	}
	out := make([]variant[notice.SearchQuery], len(cases))
	for i, c := range cases {
		n, err := query.Parse(c.q)
		if err != nil {
			b.Fatalf("parse %q: %v", c.q, err)
		}
		fl := c.f
		fl.Q = n
		name := fmt.Sprintf("%s %+v", c.q, describe(c.f))
		if c.sort != r {
			name += " " + c.sort
		}
		out[i] = variant[notice.SearchQuery]{name, notice.SearchQuery{Filter: fl, Sort: c.sort, Limit: 20, Page: 1}}
	}
	return out
}

// describe names a filter's set fields, for the verbose report.
func describe(f notice.Filter) string {
	s := ""
	add := func(k string, v any) { s += fmt.Sprintf(" %s=%v", k, v) }
	if f.IncludeDeregistration {
		add("dereg", true)
	}
	if len(f.State) > 0 {
		add("state", f.State)
	}
	if len(f.AppointmentType) > 0 {
		add("appt", f.AppointmentType)
	}
	if f.From != "" {
		add("from", f.From)
	}
	return s
}

func BenchmarkSearchFilterOnly(b *testing.B) {
	s := readStore(b)
	runLatency(b, filterMix(), func(q notice.SearchQuery) error {
		_, err := s.Search(context.Background(), q)
		return err
	})
}

func BenchmarkSearchQ(b *testing.B) {
	s := readStore(b)
	// serve loads the company index at start; a q search with filters
	// counts its total from it once it is loaded.
	if err := s.WarmCompanyIndex(context.Background()); err != nil {
		b.Fatal(err)
	}
	runLatency(b, qMix(b), func(q notice.SearchQuery) error {
		_, err := s.Search(context.Background(), q)
		return err
	})
}

// BenchmarkSearchCreditors is q=creditors alone (a word in most notices),
// the common-word row of the scale-mode table (api BenchmarkScale).
func BenchmarkSearchCreditors(b *testing.B) {
	s := readStore(b)
	if err := s.WarmCompanyIndex(context.Background()); err != nil {
		b.Fatal(err)
	}
	var one []variant[notice.SearchQuery]
	for _, v := range qMix(b) {
		if strings.HasPrefix(v.name, "creditors ") && v.v.Filter.State == nil {
			for range 20 { // 100 timings at -benchtime 1x
				one = append(one, v)
			}
		}
	}
	if len(one) == 0 {
		b.Fatal("qMix has no q=creditors without filters")
	}
	runLatency(b, one, func(q notice.SearchQuery) error {
		_, err := s.Search(context.Background(), q)
		return err
	})
}

// benchCompanies picks ids spread over the database: ACNs of notices, ABNs
// of register companies, and register companies without notices.
func benchCompanies(b *testing.B, s *Store) []variant[ident.ID] {
	b.Helper()
	var out []variant[ident.ID]
	add := func(kind ident.Kind, q string) {
		rows, err := s.read.Query(q)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				b.Fatal(err)
			}
			out = append(out, variant[ident.ID]{fmt.Sprintf("%s %s", kind, v), ident.ID{Value: v, Kind: kind}})
		}
	}
	add(ident.ACN, "SELECT acn FROM notices WHERE acn IS NOT NULL AND seq % 4999 = 0 LIMIT 100")
	add(ident.ABN, "SELECT abn FROM notices WHERE abn IS NOT NULL AND seq % 7919 = 0 LIMIT 50")
	add(ident.ABN, "SELECT abn FROM register WHERE abn <> '' AND rowid % 7919 = 0 LIMIT 25")
	add(ident.ACN, "SELECT acn FROM register WHERE rowid % 6007 = 0 LIMIT 25")
	if len(out) == 0 {
		b.Fatal("no companies in the bench database")
	}
	return out
}

func BenchmarkCompany(b *testing.B) {
	s := readStore(b)
	runLatency(b, benchCompanies(b, s), func(id ident.ID) error {
		_, err := s.Company(context.Background(), id)
		return err
	})
}

func BenchmarkFilters(b *testing.B) {
	s := readStore(b)
	// serve loads the company index at start; Filters with a q counts from
	// it once it is loaded.
	if err := s.WarmCompanyIndex(context.Background()); err != nil {
		b.Fatal(err)
	}
	var fs []variant[notice.Filter]
	for _, v := range filterMix() {
		if v.v.Page == 1 && v.v.Sort == notice.SortPublishedDesc {
			fs = append(fs, variant[notice.Filter]{v.name, v.v.Filter})
		}
	}
	for _, v := range qMix(b)[:6] {
		fs = append(fs, variant[notice.Filter]{v.name, v.v.Filter})
	}
	for _, v := range qMix(b)[14:16] {
		fs = append(fs, variant[notice.Filter]{v.name, v.v.Filter})
	}
	runLatency(b, fs, func(f notice.Filter) error {
		_, err := s.Filters(context.Background(), f)
		return err
	})
}

func BenchmarkStats(b *testing.B) {
	s := readStore(b)
	from, to := daysBefore(365), daysBefore(0)
	creditors, err := query.Parse("creditors")
	if err != nil {
		b.Fatal(err)
	}
	type f = notice.Filter
	var qs []variant[notice.StatsQuery]
	for _, c := range []struct {
		name string
		q    notice.StatsQuery
	}{
		{"month", notice.StatsQuery{GroupBy: "month"}},
		{"state", notice.StatsQuery{GroupBy: "state"}},
		{"appointment_type last year", notice.StatsQuery{GroupBy: "appointment_type", Filter: f{From: from, To: to}}},
		{"month state NSW", notice.StatsQuery{GroupBy: "month", Filter: f{State: []string{"NSW"}}}},
		{"notice_code", notice.StatsQuery{GroupBy: "notice_code"}},
		{"notice_purpose", notice.StatsQuery{GroupBy: "notice_purpose"}},
		{"month include_deregistration", notice.StatsQuery{GroupBy: "month", Filter: f{IncludeDeregistration: true}}},
		{"state include_deregistration", notice.StatsQuery{GroupBy: "state", Filter: f{IncludeDeregistration: true}}},
		{"notice_code include_deregistration last year", notice.StatsQuery{GroupBy: "notice_code", Filter: f{IncludeDeregistration: true, From: from, To: to}}},
		{"appointment_type state VIC", notice.StatsQuery{GroupBy: "appointment_type", Filter: f{State: []string{"VIC"}}}},
		{"month q creditors", notice.StatsQuery{GroupBy: "month", Filter: f{Q: creditors}}},
	} {
		qs = append(qs, variant[notice.StatsQuery]{c.name, c.q})
	}
	runLatency(b, qs, func(q notice.StatsQuery) error {
		_, err := s.Stats(context.Background(), q)
		return err
	})
}
