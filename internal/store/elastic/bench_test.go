package elastic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esutil"
	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/sample"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/elastic/esdoc"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/mappings"
)

// Benchmarks of the Elasticsearch store, each beside the raw engine doing
// the same work in the same run: ingest through UpsertNotices /
// RegisterLoad against a bare esutil.BulkIndexer loop over the same
// documents, and reads through the store against the same request bodies
// sent straight to Elasticsearch. Dataset: NOTICES_BENCH_NOTICES notices
// and NOTICES_BENCH_REGISTER register rows of `noticesd sample` (seed 1).

func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

var (
	benchOnce  sync.Once
	benchData  sample.Files
	benchErr   error
	benchTmp   string
	benchStore *Store
	benchRdb   redis.UniversalClient
	benchNs    []string
)

func TestMain(m *testing.M) {
	code := m.Run()
	ctx := context.Background()
	if benchStore != nil {
		for _, ns := range benchNs {
			s := *benchStore
			s.cfg.Namespace = ns
			_ = s.Drop(ctx)
			keys, _ := benchRdb.Keys(ctx, ns+":*").Result()
			if len(keys) > 0 {
				benchRdb.Del(ctx, keys...)
			}
		}
	}
	if benchTmp != "" {
		os.RemoveAll(benchTmp)
	}
	os.Exit(code)
}

// benchFiles writes the sample once.
func benchFiles(b testing.TB) sample.Files {
	b.Helper()
	benchOnce.Do(func() {
		benchTmp, benchErr = os.MkdirTemp("", "noticesd-es-bench-")
		if benchErr != nil {
			return
		}
		n, r := benchEnvInt("NOTICES_BENCH_NOTICES", 20000), benchEnvInt("NOTICES_BENCH_REGISTER", 40000)
		// The files internal/store/sqlite's benchmarks keep in
		// NOTICES_BENCH_DIR, when there (make bench), else written here.
		if dir := os.Getenv("NOTICES_BENCH_DIR"); dir != "" {
			sub := filepath.Join(dir, fmt.Sprintf("sample-s1-n%d-r%d", n, r))
			f := sample.Files{Notices: filepath.Join(sub, sample.NoticesFile), Register: filepath.Join(sub, sample.RegisterFile)}
			if _, err := os.Stat(f.Notices); err == nil {
				if _, err := os.Stat(f.Register); err == nil {
					benchData = f
					return
				}
			}
		}
		benchData, benchErr = sample.WriteFiles(sample.Options{Notices: n, Companies: r, Seed: 1,
			Now: time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC)}, filepath.Join(benchTmp, "sample"))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchData
}

// benchOpen opens a store in a fresh bench namespace (dropped at exit).
func benchOpen(b *testing.B) *Store {
	b.Helper()
	return benchOpenIn(b, testservers.Namespace(b))
}

// benchOpenIn opens a store in namespace ns (dropped at exit).
func benchOpenIn(b *testing.B, ns string) *Store {
	b.Helper()
	esURL := testservers.Elasticsearch(b)
	if benchRdb == nil {
		opt, err := redis.ParseURL(testservers.Redis(b))
		if err != nil {
			b.Fatal(err)
		}
		benchRdb = redis.NewClient(opt)
	}
	s, err := Open(context.Background(), Config{URL: esURL, Namespace: ns, Log: publog.New(benchRdb, ns, publog.Options{})})
	if err != nil {
		b.Fatal(err)
	}
	benchNs = append(benchNs, ns)
	if benchStore == nil {
		benchStore = s
	}
	return s
}

// recordReader is ingest's NoticeReader or RegisterReader.
type recordReader[T any] interface{ Next() (T, error) }

// readAll parses a sample file the way ingest does.
func readAll[T any](b testing.TB, path string, open func(io.Reader) (recordReader[T], error)) []T {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	r, err := open(f)
	if err != nil {
		b.Fatal(err)
	}
	var out []T
	for {
		v, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, v)
	}
}

func readNotices(b testing.TB, path string) []notice.Notice {
	return readAll(b, path, func(r io.Reader) (recordReader[notice.Notice], error) { return ingest.NewNoticeReader(r) })
}

func readRegister(b testing.TB, path string) []notice.RegisterRow {
	return readAll(b, path, func(r io.Reader) (recordReader[notice.RegisterRow], error) { return ingest.NewRegisterReader(r) })
}

// serialBatch is BenchmarkESIngestNotices' batch: scale ingest's 20,000
// notices (redisstore.DefaultNoticeBatch; NOTICES_BENCH_NOTICE_BATCH sets
// another). The raw loops that make each batch searchable (RawRefreshed,
// RawWaitFor) use the same batch.
var serialBatch = benchEnvInt("NOTICES_BENCH_NOTICE_BATCH", redisstore.DefaultNoticeBatch)

// BenchmarkESIngestNotices loads the notices as `noticesd ingest` does in
// scale mode (ingest's storeNotices): batch after batch through
// StartNotices, the next batch started before the one before it is
// answered, so two are in flight.
func BenchmarkESIngestNotices(b *testing.B) {
	benchLoads(b, "notices", readNotices(b, benchFiles(b).Notices), warmNotices, storeNotices(b))
}

// storeNotices loads notices as `noticesd ingest` does (BenchmarkESIngestNotices).
func storeNotices(b *testing.B) func(s *Store, ns []notice.Notice) {
	return func(s *Store, ns []notice.Notice) {
		var last func() (store.UpsertResult, error)
		for i := 0; i < len(ns); i += serialBatch {
			wait := s.StartNotices(context.Background(), ns[i:min(i+serialBatch, len(ns))])
			if last != nil {
				if _, err := last(); err != nil {
					_, _ = wait() // not left writing into a namespace being dropped
					b.Fatal(err)
				}
			}
			last = wait
		}
		if _, err := last(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkESIngestNoticesVsRaw alternates, in one run, a load of the
// notices through the store (BenchmarkESIngestNotices) and the same
// documents sent by a bare loop (BenchmarkESIngestNoticesRaw), each into a
// new namespace on a node at rest, for NOTICES_BENCH_ROUNDS rounds (5)
// after a warm-up of each. Each load's figures are printed; it reports the
// store's rows/s over all rounds as a share of the bare loop's (x-raw), and
// the median of the rounds' ratios (x-raw-median; of an even count of
// rounds, the higher of the middle two).
func BenchmarkESIngestNoticesVsRaw(b *testing.B) {
	ns := readNotices(b, benchFiles(b).Notices)
	docs := rawNoticeDocs(ns)
	load := storeNotices(b)
	raw := func(s *Store, docs [][]byte) {
		rawBulk(b, s, s.Alias(mappings.Notices), func(i int) string { return ns[i].ID }, docs, false)
	}
	w := min(len(ns), warmNotices)
	benchWarm(b, fmt.Sprint(w, " notices"), func(s *Store) { load(s, ns[:w]) })
	benchWarm(b, fmt.Sprint(w, " notices, bare"), func(s *Store) { raw(s, docs[:w]) })
	var took [2]time.Duration
	var ratios []float64 // each round's store rows/s over its bare loop's
	for round := 1; round <= benchEnvInt("NOTICES_BENCH_ROUNDS", 5); round++ {
		var pair [2]time.Duration
		for side, run := range []func(*Store){func(s *Store) { load(s, ns) }, func(s *Store) { raw(s, docs) }} {
			s := benchOpen(b)
			benchSettle(b)
			start, cpu := time.Now(), processCPU()
			run(s)
			d := time.Since(start)
			took[side] += d
			pair[side] = d
			load1, _ := os.ReadFile("/proc/loadavg")
			fmt.Fprintf(os.Stderr, "bench: round %d %s: %.0f rows/s, client %.1f cpu-us/row, loadavg %s", round, []string{"store", "bare loop"}[side],
				float64(len(ns))/d.Seconds(), float64((processCPU()-cpu).Microseconds())/float64(len(ns)), load1)
		}
		ratios = append(ratios, pair[1].Seconds()/pair[0].Seconds())
	}
	// On a shared machine one round's load spike swings the sum; the
	// median of the rounds' ratios, each of two loads run back to back,
	// is the figure such a spike moves least.
	slices.Sort(ratios)
	b.ReportMetric(took[1].Seconds()/took[0].Seconds(), "x-raw")
	b.ReportMetric(ratios[len(ratios)/2], "x-raw-median")
}

// BenchmarkESIngestNoticesRaw sends the same documents with a bare
// BulkIndexer into an index of the same mapping, then refreshes.
func BenchmarkESIngestNoticesRaw(b *testing.B) { benchRawNotices(b, rawAtEnd) }

// BenchmarkESIngestNoticesRawRefreshed is BenchmarkESIngestNoticesRaw
// that also makes each serialBatch of documents searchable before it sends
// the next (a bare BulkIndexer closed and a refresh, per batch): what the
// engine alone costs for the store's guarantee that a batch is searchable
// before it is published, without any Redis step.
func BenchmarkESIngestNoticesRawRefreshed(b *testing.B) { benchRawNotices(b, rawRefreshEach) }

// BenchmarkESIngestNoticesRawWaitFor is BenchmarkESIngestNoticesRawRefreshed
// with each batch's bulk requests sent with refresh=wait_for (the index
// refreshed every second, Elasticsearch's default) instead of an explicit
// refresh: a batch is searchable when its requests are answered.
func BenchmarkESIngestNoticesRawWaitFor(b *testing.B) { benchRawNotices(b, rawWaitFor) }

// rawSearchable is when a raw notice load makes its documents searchable.
type rawSearchable int

const (
	rawAtEnd       rawSearchable = iota // one refresh after the last batch
	rawRefreshEach                      // a refresh after each serialBatch
	rawWaitFor                          // refresh=wait_for on each batch's requests
)

// benchRawNotices times the sample's notices, encoded as the store's
// documents before the clock starts, sent by bare BulkIndexers.
func benchRawNotices(b *testing.B, how rawSearchable) {
	ns := readNotices(b, benchFiles(b).Notices)
	docs := rawNoticeDocs(ns)
	benchLoads(b, "notices", docs, warmNotices, func(s *Store, docs [][]byte) {
		index := s.Alias(mappings.Notices)
		if how == rawAtEnd {
			rawBulk(b, s, index, func(i int) string { return ns[i].ID }, docs, false)
			return
		}
		if how == rawWaitFor {
			err := s.do(context.Background(), s.timeout, http.MethodPut, "/"+index+"/_settings", map[string]any{"index": map[string]any{"refresh_interval": "1s"}}, nil)
			if err != nil {
				b.Fatal(err)
			}
		}
		for i := 0; i < len(docs); i += serialBatch {
			id := func(j int) string { return ns[i+j].ID }
			rawBulk(b, s, index, id, docs[i:min(i+serialBatch, len(docs))], how == rawWaitFor)
		}
	})
}

// rawNoticeDocs encodes ns as the store's documents.
func rawNoticeDocs(ns []notice.Notice) [][]byte {
	docs := make([][]byte, len(ns))
	for i, n := range ns {
		n.Seq = int64(i + 1)
		docs[i] = esdoc.AppendNotice(nil, &n, 1)
	}
	return docs
}

// Warm-up loads: how many notices and register rows (at most) benchWarm's
// loads send, the first of the benchmark's own data.
const (
	warmNotices      = 250_000
	warmRegisterRows = 400_000
)

// benchLoads times a load of all of items, b.N times, each into a new
// namespace on a node at rest (benchSettle), after one untimed warm-up load
// of the first warm of them (benchWarm); what names them in the output.
func benchLoads[T any](b *testing.B, what string, items []T, warm int, load func(s *Store, items []T)) {
	w := min(len(items), warm)
	benchWarm(b, fmt.Sprint(w, " ", what), func(s *Store) { load(s, items[:w]) })
	for range b.N {
		s := benchOpen(b)
		benchSettle(b)
		start, cpu := time.Now(), processCPU()
		load(s, items)
		reportIngest(b, len(items), start, cpu)
	}
}

// benchWarm runs load, untimed, into a scratch namespace of its own, then
// deletes that namespace. Elasticsearch's JIT compiler compiles the code of
// each kind of load the first time it runs after the node starts: on the
// development machine its compiler threads took 23 CPU-seconds of a
// 1,000,000-notice bare load on a freshly started node, about 8 during the
// same load after a warm-up of 250,000 notices (docs/benchmarks.md,
// 2026-11-25). A node in service has long compiled it; a benchmark timing the
// first load after a start would time the compiler too.
func benchWarm(b *testing.B, what string, load func(s *Store)) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	ns := testservers.Namespace(b)
	start := time.Now()
	load(benchOpenIn(b, ns))
	testservers.Drop(b, ns)
	fmt.Fprintf(os.Stderr, "bench: warmed Elasticsearch with a load of %s in %.0f s (untimed) before %s\n", what, time.Since(start).Seconds(), b.Name())
}

// benchSettle waits until the node has run no segment merge for 5 s (at
// most 10 minutes): every load is timed on a node at rest, not beside the
// merges of the load before it (a benchmark of this binary or another).
// The wait is printed: it is the earlier load's cost.
func benchSettle(b *testing.B) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	waited, err := testservers.Settle(testservers.Elasticsearch(b), 5*time.Second, 10*time.Minute)
	if err != nil {
		b.Fatalf("settle: %v", err)
	}
	fmt.Fprintf(os.Stderr, "bench: waited %.0f s for Elasticsearch's merges to end before %s\n", waited.Seconds(), b.Name())
}

// processCPU is the CPU time this process has used (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportIngest reports an ingest of n rows begun at start: rows/s, and the
// client's CPU per row (encoding, Redis, HTTP: what the client takes from
// the cores Elasticsearch shares on one machine; a raw loop's documents
// are encoded before it starts). The load average beside them says how
// much else the machine was running.
func reportIngest(b *testing.B, n int, start time.Time, cpu time.Duration) {
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "rows/s")
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(n), "client-cpu-us/row")
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(raw)); len(f) > 0 {
			if l, err := strconv.ParseFloat(f[0], 64); err == nil {
				b.ReportMetric(l, "load1")
			}
		}
	}
}

// rawBulk sends docs with a bare BulkIndexer and refreshes index, or with
// waitFor sends them with refresh=wait_for instead.
func rawBulk(b *testing.B, s *Store, index string, id func(int) string, docs [][]byte, waitFor bool) {
	ctx := context.Background()
	refresh := ""
	if waitFor {
		refresh = "wait_for"
	}
	// The store's worker count, queue and response filter; the flush size of a
	// register load (the notices path sizes each batch's requests to share
	// it among the workers, about the same).
	bi, err := esutil.NewBulkIndexer(esutil.BulkIndexerConfig{Client: s.es, Index: index, NumWorkers: s.bulkWorkers, QueueSizeMultiplier: bulkQueue, FlushBytes: registerFlushBytes, FilterPath: bulkFilterPath, Refresh: refresh})
	if err != nil {
		b.Fatal(err)
	}
	for i, d := range docs {
		if err := bi.Add(ctx, esutil.BulkIndexerItem{Action: "index", DocumentID: id(i), Body: bytesReader(d)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := bi.Close(ctx); err != nil {
		b.Fatal(err)
	}
	if st := bi.Stats(); st.NumFailed > 0 {
		b.Fatalf("%d raw bulk items failed", st.NumFailed)
	}
	if waitFor {
		return
	}
	if err := s.refresh(ctx, index); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkESIngestRegister(b *testing.B) {
	rows := readRegister(b, benchFiles(b).Register)
	ctx := context.Background()
	load := func(s *Store, rows []notice.RegisterRow) {
		l, err := s.BeginRegister(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < len(rows); i += ingest.DefaultRegisterBatch {
			if err := l.Add(ctx, rows[i:min(i+ingest.DefaultRegisterBatch, len(rows))]); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	benchLoads(b, "register rows", rows, warmRegisterRows, load)
}

func BenchmarkESIngestRegisterRaw(b *testing.B) {
	rows := readRegister(b, benchFiles(b).Register)
	// The store's documents: blocks of registerBlockRows rows, as a
	// register load writes them (encoded before the clock starts).
	var docs [][]byte
	for i := 0; i < len(rows); i += registerBlockRows {
		docs = append(docs, appendRegisterBlock(nil, int64(i), rows[i:min(i+registerBlockRows, len(rows))]))
	}
	ix, err := mappings.Load(mappings.Register)
	if err != nil {
		b.Fatal(err)
	}
	// A fresh index with the settings a register load fills its index
	// with (refresh off, async translog), as the store does.
	fresh := func(s *Store) string {
		index := s.indexName(ix, "raw")
		if err := s.createIndex(context.Background(), ix, index, "", loadSettings); err != nil {
			b.Fatal(err)
		}
		return index
	}
	noID := func(int) string { return "" } // ids chosen by Elasticsearch, as the store's
	w := min(len(docs), warmRegisterRows/registerBlockRows)
	benchWarm(b, fmt.Sprint(min(len(rows), w*registerBlockRows), " register rows"), func(s *Store) { rawBulk(b, s, fresh(s), noID, docs[:w], false) })
	for range b.N {
		s := benchOpen(b)
		index := fresh(s)
		benchSettle(b)
		start, cpu := time.Now(), processCPU()
		rawBulk(b, s, index, noID, docs, false)
		reportIngest(b, len(rows), start, cpu)
	}
}

var (
	readOnce  sync.Once
	readStore *Store
	readACNs  []string
)

// readBench is a store loaded with the sample, shared by the read
// benchmarks.
func readBench(b *testing.B) *Store {
	b.Helper()
	files := benchFiles(b)
	readOnce.Do(func() {
		// A namespace of its own: testservers.Namespace's would be
		// dropped at the end of the first run of the first benchmark
		// (-benchtime Nx runs each once with b.N = 1 first), under the
		// later ones. TestMain drops it.
		readStore = benchOpenIn(b, fmt.Sprintf("t-esbench-read-%d", time.Now().UnixNano()))
		ctx := context.Background()
		if _, err := ingest.Notices(ctx, readStore, []string{files.Notices}, ingest.Options{}); err != nil {
			b.Fatal(err)
		}
		if _, err := ingest.Register(ctx, readStore, files.Register, ingest.Options{}); err != nil {
			b.Fatal(err)
		}
		p, err := readStore.Search(ctx, notice.SearchQuery{Filter: notice.Filter{IncludeDeregistration: true}, Limit: 100})
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range p.Notices {
			if n.ACN != nil {
				readACNs = append(readACNs, *n.ACN)
			}
		}
	})
	if readStore == nil {
		b.Fatal("read benchmark store failed to load")
	}
	return readStore
}

type lat []time.Duration

func (l lat) report(b *testing.B, prefix string) float64 {
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	pct := func(p float64) float64 {
		return float64(l[min(len(l)-1, int(p*float64(len(l))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), prefix+"p50-ms")
	b.ReportMetric(pct(0.99), prefix+"p99-ms")
	return pct(0.50)
}

// benchPair times op (through the store) and raw (the same requests sent
// straight to Elasticsearch) alternately, at least 50 times each.
func benchPair(b *testing.B, op, raw func() error) {
	var a, r lat
	for i := 0; i < max(b.N, 50); i++ {
		t := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		a = append(a, time.Since(t))
		t = time.Now()
		if err := raw(); err != nil {
			b.Fatal(err)
		}
		r = append(r, time.Since(t))
	}
	p, rp := a.report(b, ""), r.report(b, "raw-")
	if rp > 0 {
		b.ReportMetric(p/rp, "x-raw")
	}
}

// rawSearch posts body to the notices alias and decodes the answer.
func rawSearch(s *Store, index string, body obj) func() error {
	return func() error {
		return s.searchRead(context.Background(), "/"+index+"/_search", body, new(searchAnswer))
	}
}

func benchSearch(b *testing.B, q string) {
	s := readBench(b)
	ctx := context.Background()
	var f notice.Filter
	if q != "" {
		n, err := query.Parse(q)
		if err != nil {
			b.Fatal(err)
		}
		f.Q = n
	}
	sq := notice.SearchQuery{Filter: f, Sort: notice.SortPublishedDesc, Limit: 20, Page: 1}
	body, err := s.filterQuery(ctx, f)
	if err != nil {
		b.Fatal(err)
	}
	raw := obj{"query": body, "sort": sortPublishedDesc, "track_total_hits": true, "size": 20, "from": 0}
	benchPair(b, func() error { _, err := s.Search(ctx, sq); return err }, rawSearch(s, s.Alias(mappings.Notices), raw))
}

func BenchmarkESSearchFilterOnly(b *testing.B) { benchSearch(b, "") }
func BenchmarkESSearchCreditors(b *testing.B)  { benchSearch(b, "creditors") }
func BenchmarkESSearchQ(b *testing.B) {
	benchSearch(b, `"voluntary administration" OR liquidat* -deed`)
}

func BenchmarkESCompany(b *testing.B) {
	s := readBench(b)
	ctx := context.Background()
	i := 0
	benchPair(b, func() error {
		_, err := s.Company(ctx, ident.ID{Value: readACNs[i%len(readACNs)], Kind: ident.ACN})
		return err
	}, func() error {
		id := ident.ID{Value: readACNs[i%len(readACNs)], Kind: ident.ACN}
		i++
		// The same request: the one _msearch of the register rows and the
		// notices (companySearches), its answer read whole.
		body, err := msearchBody(companySearches(s, id).searches)
		if err != nil {
			return err
		}
		return s.do(ctx, s.timeout, http.MethodPost, "/_msearch", body, nil)
	})
}

// BenchmarkESFilters and BenchmarkESStats time the store's translation of
// the request and of the answer beside the same request sent raw, so the
// store runs without its answer cache (aggCache; the API-level
// BenchmarkScale measures it both ways).
func BenchmarkESFilters(b *testing.B) {
	s := noAggCache(readBench(b))
	ctx := context.Background()
	body, _ := s.filterQuery(ctx, notice.Filter{})
	aggs := obj{}
	for _, fld := range facetFields {
		aggs[fld] = obj{"terms": obj{"field": fld, "size": maxBuckets}}
	}
	benchPair(b, func() error { _, err := s.Filters(ctx, notice.Filter{}); return err },
		rawSearch(s, s.Alias(mappings.Notices), obj{"query": body, "size": 0, "track_total_hits": true, "aggs": aggs}))
}

func BenchmarkESStats(b *testing.B) {
	s := noAggCache(readBench(b))
	ctx := context.Background()
	f := notice.Filter{From: "2025-01-01", To: "2025-12-31"}
	body, _ := s.filterQuery(ctx, f)
	h := obj{"date_histogram": obj{"field": "published_date", "calendar_interval": "month", "format": "yyyy-MM",
		"min_doc_count": 0, "extended_bounds": obj{"min": "2025-01", "max": "2025-12"}}}
	benchPair(b, func() error { _, err := s.Stats(ctx, notice.StatsQuery{Filter: f, GroupBy: "month"}); return err },
		rawSearch(s, s.Alias(mappings.Notices), obj{"query": body, "size": 0, "track_total_hits": true, "aggs": obj{"g": h}}))
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// noAggCache is s without its answer cache.
func noAggCache(s *Store) *Store {
	u := *s
	u.aggs = nil
	return &u
}
