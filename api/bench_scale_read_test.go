package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/sample"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/store/scale"
	"github.com/noticesd/noticesd/internal/testservers"
)

// BenchmarkScale is the scale-mode table of `make bench`: the dataset of
// the embedded table (NOTICES_BENCH_NOTICES notices and
// NOTICES_BENCH_REGISTER register rows of `noticesd sample`, seed 1, the
// files in NOTICES_BENCH_DIR reused when present) loaded into
// Elasticsearch and Redis through `noticesd ingest`'s scale-mode path,
// then the read mixes of the embedded benchmarks sent through the API (a
// real listener wired as `noticesd serve` wires scale mode; client-measured
// p50 and p99), each beside the same Elasticsearch requests sent raw in the
// same run, alternately. The raw requests are the API's own: a second
// server, used only to record them, reaches Elasticsearch through a
// recording proxy, and every request it made for one API request is
// replayed byte for byte to Elasticsearch by a plain HTTP client. POST
// /v1/match (50,000 identifiers) stands beside the same Redis lookups as
// raw go-redis pipelines. The bare esutil.BulkIndexer ingest figures are
// internal/store/elastic's BenchmarkESIngest*Raw on the same files. The
// reads start once Elasticsearch has finished merging what the load
// wrote, and the register load once the notice load's merges have ended
// (settle).
//
// NOTICES_BENCH_SCALE_NS names a namespace to keep after the run: when it
// already holds the dataset, the load is skipped (for repeated read runs
// while profiling).
func BenchmarkScale(b *testing.B) {
	sb := newScaleRead(b)
	b.Run("IngestNotices", func(b *testing.B) {
		sb.warm(b)
		sb.settle(b, "the notice load")
		sb.ingest(b, "notices", true)
	})
	b.Run("IngestRegister", func(b *testing.B) {
		sb.settle(b, "the register load")
		sb.ingest(b, "register", true)
	})
	// RedisMemory: Redis's INFO memory with the whole dataset loaded and
	// a `noticesd worker` having matched every arrival (the bench's own
	// Redis; issue goal: under 350 MB at 1M notices / 4M rows).
	b.Run("RedisMemory", func(b *testing.B) {
		sb.load(b)
		sb.redisMemory(b)
	})
	for _, g := range []struct{ name, group string }{
		{"SearchFilterOnly", "search-filter"},
		{"SearchQ", "search-q"},
		{"SearchCreditors", "search-creditors"},
		{"Company", "company"},
		{"Filters", "filters"},
		{"Stats", "stats"},
		{"FiltersNoCache", "filters"},
		{"StatsNoCache", "stats"},
		{"CompanyWhileLimited", "company"},
	} {
		b.Run(g.name, func(b *testing.B) {
			sb.load(b)
			sb.settle(b, "the reads")
			base := sb.base
			if strings.HasSuffix(g.name, "NoCache") {
				base = sb.noCache
			}
			if g.name == "CompanyWhileLimited" {
				sb.whileLimited(b)
				return
			}
			sb.readPairs(b, g.group, base)
		})
	}
	b.Run("Match50k", func(b *testing.B) {
		sb.load(b)
		sb.settle(b, "the screens")
		sb.match(b)
	})
	// ServeRSS: `noticesd serve`'s RSS with the register copy and without
	// (NOTICES_SCREEN_COPY on and off; issue goal: the copy under 300 MiB).
	b.Run("ServeRSS", func(b *testing.B) {
		sb.load(b)
		sb.serveRSS(b)
	})
}

// scaleRead is BenchmarkScale's state: the scale store the measured API
// serves from, the recording server and the loaded dataset.
type scaleRead struct {
	httpBench
	cfg      config.Config // the measured API's
	st       *scale.Store
	esURL    string
	ns       string
	files    sample.Files
	notices  int
	register int
	loaded   map[string]bool // "notices", "register"
	// unsettled: this run (or what ran before it on the node) loaded
	// data, and Elasticsearch may still be merging its segments (settle
	// waits for it before the next load or read mix).
	unsettled bool

	rec     *recorder
	recBase string // the recording API server
	// noCache is a third API server, as the measured one but with
	// NOTICES_AGG_CACHE=0: filters and stats read Elasticsearch every time.
	noCache string

	requests map[string][]string // group: API paths with query

	// before, with NOTICES_BENCH_COMPARE=1, is another API server, as the
	// measured one but as it was before the Gate (serveScaleWith): timed
	// beside it; beforeNoCache the same beside noCache.
	before, beforeNoCache string
	// cmds counts the commands the measured server's Redis client sends.
	cmds *cmdCounter
	// limitedKey is an account key on the throttled plan
	// (CompanyWhileLimited).
	limitedKey string
}

// benchClock is the sample's "now", as in internal/store/sqlite's
// benchmarks (their date placeholders count back from it).
var benchClock = time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC)

func benchSize(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func newScaleRead(b *testing.B) *scaleRead {
	b.Helper()
	ctx := context.Background()
	sr := &scaleRead{esURL: testservers.Elasticsearch(b), loaded: map[string]bool{}, unsettled: true,
		notices: benchSize("NOTICES_BENCH_NOTICES", 20000), register: benchSize("NOTICES_BENCH_REGISTER", 80000)}
	redisURL := testservers.Redis(b)
	sr.ns = os.Getenv("NOTICES_BENCH_SCALE_NS")
	if sr.ns == "" {
		sr.ns = testservers.Namespace(b)
	}
	sr.files = scaleSample(b, sr.notices, sr.register)

	cfg := config.Default()
	cfg.Backend, cfg.ElasticsearchURL, cfg.RedisURL, cfg.Namespace = "scale", sr.esURL, redisURL, sr.ns
	cfg.MaxBodyBytes = 64 << 20
	// The bench key must not be throttled: the figures are latencies.
	cfg.Plans = account.DefaultPlans()
	p := cfg.Plans["enterprise"]
	p.RequestsPerSecond, p.Burst = 1_000_000, 1_000_000
	cfg.Plans["enterprise"] = p
	// The free plan is the one a key is hammered into 429s on
	// (CompanyWhileLimited): one request a second.
	p = cfg.Plans["free"]
	p.RequestsPerSecond, p.Burst = 1, 1
	cfg.Plans["free"] = p
	// As serve runs it (NOTICES_SCREEN_COPY on); match waits for the copy
	// to load (loadScreenCopy), so the timed screens are its steady state.
	st, err := scale.Open(ctx, cfg, redisstore.Options{ScreenCopy: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	sr.st, sr.cfg = st, cfg
	sr.cmds = &cmdCounter{}
	st.Client().AddHook(sr.cmds)
	base := serveScale(b, cfg, st)

	// The recording server: the same wiring, its Elasticsearch client
	// pointed at the recording proxy.
	sr.rec = newRecorder(b, sr.esURL)
	rcfg := cfg
	rcfg.ElasticsearchURL = sr.rec.url
	// Every request it serves must reach Elasticsearch, to be recorded.
	rcfg.AggCache = 0
	sr.recBase = openAndServeScale(b, rcfg)
	ncfg := cfg
	ncfg.AggCache = 0
	sr.noCache = openAndServeScale(b, ncfg)
	if os.Getenv("NOTICES_BENCH_COMPARE") == "1" {
		sr.before = serveScaleWith(b, cfg, st, false)
		sr.beforeNoCache = openAndServeScaleWith(b, ncfg, false)
	}

	acc, err := st.Redis.CreateAccount(ctx, "bench-scale", "enterprise")
	if err != nil {
		b.Fatal(err)
	}
	limited, err := st.Redis.CreateAccount(ctx, "bench-limited", "free")
	if err != nil {
		b.Fatal(err)
	}
	sr.limitedKey = limited.ReadKey
	sr.httpBench = httpBench{base: base, key: acc.AccountKey,
		cl: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	if n, _ := sr.count(ctx, "notices"); n == sr.notices {
		sr.loaded["notices"] = true
	}
	if n, _ := sr.count(ctx, "register"); n == sr.register {
		sr.loaded["register"] = true
	}
	sr.requests = readBenchRequests(b)
	return sr
}

// openAndServeScale opens a scale store of its own with cfg and serves
// the API from it (serveScale), returning its base URL.
func openAndServeScale(b *testing.B, cfg config.Config) string {
	return openAndServeScaleWith(b, cfg, true)
}

// openAndServeScaleWith is openAndServeScale, without the Gate unless gate.
func openAndServeScaleWith(b *testing.B, cfg config.Config, gate bool) string {
	b.Helper()
	st, err := scale.Open(context.Background(), cfg, redisstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return serveScaleWith(b, cfg, st, gate)
}

// serveScale serves the API on a loopback listener wired as `noticesd
// serve` wires scale mode (cmd/noticesd wireScale): reads from
// Elasticsearch, accounts, watches and the screen from Redis, the request
// limiter shared through Redis.
func serveScale(b *testing.B, cfg config.Config, st *scale.Store) string {
	return serveScaleWith(b, cfg, st, true)
}

// serveScaleWith is serveScale, or unless gate the server as it was
// before the Gate: the key check and the rate token as two Redis calls,
// and a key held after a 429 checked and limited in Redis again.
func serveScaleWith(b *testing.B, cfg config.Config, st *scale.Store, gate bool) string {
	b.Helper()
	deps := Deps{
		Notices:  st.Elastic,
		Accounts: st.Redis,
		Watches:  st.Redis,
		Limiter:  limit.NewRedis(st.Client(), cfg.Namespace, cfg.HeavyConcurrency, limit.DefaultLease),
	}
	if gate {
		deps.Gate = st.Redis.AuthenticateAndAllow
	}
	srv := New(cfg, deps)
	srv.askHeld = !gate // before: no gate, no refusal by the replica alone
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.App().Shutdown() })
	return "http://" + ln.Addr().String()
}

// scaleSample returns the sample files of internal/store/sqlite's
// benchmarks (NOTICES_BENCH_DIR/sample-s1-n<N>-r<R>), writing them when
// missing.
func scaleSample(b *testing.B, n, r int) sample.Files {
	b.Helper()
	dir := os.Getenv("NOTICES_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	sub := filepath.Join(dir, fmt.Sprintf("sample-s1-n%d-r%d", n, r))
	files := sample.Files{Notices: filepath.Join(sub, sample.NoticesFile), Register: filepath.Join(sub, sample.RegisterFile)}
	if _, err := os.Stat(files.Register); err == nil {
		if _, err := os.Stat(files.Notices); err == nil {
			return files
		}
	}
	files, err := sample.WriteFiles(sample.Options{Notices: n, Companies: r, Seed: 1, Now: benchClock}, sub)
	if err != nil {
		b.Fatal(err)
	}
	return files
}

// count is the number of documents behind an alias ("notices",
// "register").
func (sr *scaleRead) count(ctx context.Context, kind string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, sr.esURL+"/"+sr.ns+"-"+kind+"/_count", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var c struct {
		Count int `json:"count"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return 0, err
	}
	return c.Count, nil
}

// load ingests whatever of the sample is not loaded yet.
func (sr *scaleRead) load(b *testing.B) {
	sr.ingest(b, "notices", false)
	sr.ingest(b, "register", false)
}

// ingest loads one file of the sample ("notices" or "register") through
// the scale-mode ingest path of `noticesd ingest` (Elasticsearch, then
// Redis's identifier sets and register) unless it is loaded already, and
// with report set reports its rate. A run that found the dataset loaded
// (NOTICES_BENCH_SCALE_NS) reports no rate.
func (sr *scaleRead) ingest(b *testing.B, kind string, report bool) {
	if sr.loaded[kind] {
		if report {
			b.Logf("%s already loaded in namespace %s: not measured", kind, sr.ns)
		}
		return
	}
	ctx := context.Background()
	w := sr.st.Writer()
	var sum ingest.Summary
	var err error
	start := time.Now()
	if kind == "notices" {
		sum, err = ingest.Notices(ctx, w, []string{sr.files.Notices}, ingest.Options{})
	} else {
		sum, err = ingest.Register(ctx, w, sr.files.Register, ingest.Options{})
	}
	if err != nil {
		b.Fatalf("ingest %s: %v", kind, err)
	}
	el := time.Since(start)
	sr.loaded[kind] = true
	sr.unsettled = true
	fmt.Fprintf(os.Stderr, "bench scale load: %s\n", sum)
	if report {
		b.ReportMetric(float64(sum.Read)/el.Seconds(), "rows/s")
	}
}

// Warm-up loads (warm): the first warmNotices notices and warmRegisterRows
// register rows of the sample (or all of a smaller one).
const (
	warmNotices      = 250_000
	warmRegisterRows = 400_000
)

// warm loads the first of the sample's notices and register rows, untimed,
// through the same ingest path into a scratch namespace, then deletes that
// namespace, unless this run measures no load: as internal/store/elastic's
// ingest benchmarks warm the node before theirs, so that store and bare
// loop are timed alike. Elasticsearch's JIT compiler compiles the code of
// each kind of load the first time it runs after the node starts; the
// warm-up does not remove all of it from the store's load: on the
// development machine the compiler threads still took about 13
// CPU-seconds of the timed 1,000,000-notice load, as without a warm-up,
// most of them in its last 25 seconds, whether the warm-up sent the
// first or the last 250,000 notices of the file (docs/benchmarks.md,
// 2026-11-25).
func (sr *scaleRead) warm(b *testing.B) {
	if sr.loaded["notices"] && sr.loaded["register"] {
		return
	}
	b.StopTimer()
	defer b.StartTimer()
	start := time.Now()
	dir := b.TempDir()
	notices := filepath.Join(dir, "warm-notices.jsonl")
	register := filepath.Join(dir, "warm-register.tsv")
	nn := copyLines(b, sr.files.Notices, notices, warmNotices)
	nr := copyLines(b, sr.files.Register, register, warmRegisterRows+1) - 1 // and the header
	cfg := sr.cfg
	cfg.Namespace = testservers.Namespace(b)
	st, err := scale.Open(context.Background(), cfg, redisstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := ingest.Notices(ctx, st.Writer(), []string{notices}, ingest.Options{}); err != nil {
		b.Fatalf("warm-up notice load: %v", err)
	}
	if _, err := ingest.Register(ctx, st.Writer(), register, ingest.Options{}); err != nil {
		b.Fatalf("warm-up register load: %v", err)
	}
	st.Close()
	testservers.Drop(b, cfg.Namespace)
	sr.unsettled = true
	fmt.Fprintf(os.Stderr, "bench scale load: warmed Elasticsearch with %d notices and %d register rows in %.0f s (untimed, a scratch namespace since deleted)\n",
		nn, nr, time.Since(start).Seconds())
}

// copyLines copies the first n lines of src (plain or gzip) to dst, plain,
// and returns how many it copied.
func copyLines(b *testing.B, src, dst string, n int) int {
	b.Helper()
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	r, err := ingest.Decompress(in)
	if err != nil {
		b.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(out, 1<<20)
	lr := bufio.NewReaderSize(r, 1<<20)
	copied := 0
	for ; copied < n; copied++ {
		line, err := lr.ReadSlice('\n')
		if len(line) > 0 {
			w.Write(line)
		}
		if errors.Is(err, io.EOF) {
			if len(line) > 0 {
				copied++
			}
			break
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	return copied
}

// settle waits, after a load in this run, until Elasticsearch has no
// segment merge running for 5 s in a row (at most 10 minutes): the merges
// that follow a bulk load keep both processors busy (8-18 s after the
// 1,000,000-notice load on the development machine), and the next load
// and the reads are to be timed on a node at rest, as they would be in
// service. The wait is printed: it is the load's cost too.
func (sr *scaleRead) settle(b *testing.B, before string) {
	if !sr.unsettled {
		return
	}
	sr.unsettled = false
	b.StopTimer()
	defer b.StartTimer()
	waited, err := testservers.Settle(sr.esURL, 5*time.Second, 10*time.Minute)
	if err != nil {
		b.Fatalf("settle: %v", err)
	}
	fmt.Fprintf(os.Stderr, "bench scale load: waited %.0f s for Elasticsearch's merges to end before %s\n", waited.Seconds(), before)
}

// readBenchRequests reads testdata/bench-scale-requests.tsv into API
// paths, by group.
func readBenchRequests(b *testing.B) map[string][]string {
	b.Helper()
	f, err := os.Open("testdata/bench-scale-requests.tsv")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Split(line, "\t")
		if len(fs) != 3 {
			b.Fatalf("bench-scale-requests.tsv: %q is not group, path, parameters", line)
		}
		v := url.Values{}
		for _, kv := range strings.Split(fs[2], "&") {
			if kv == "" {
				continue
			}
			k, val, _ := strings.Cut(kv, "=")
			for _, d := range []int{0, 30, 90, 365, 730} {
				val = strings.ReplaceAll(val, fmt.Sprintf("{d%d}", d), notice.PublishedDate(benchClock.AddDate(0, 0, -d)))
			}
			v.Add(k, val)
		}
		p := fs[1]
		if len(v) > 0 {
			p += "?" + v.Encode()
		}
		out[fs[0]] = append(out[fs[0]], p)
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// recorded is one request the store sent to Elasticsearch.
type recorded struct {
	method, uri, contentType string
	body                     []byte
}

// recorder is a reverse proxy to Elasticsearch that keeps every request
// passing through it.
type recorder struct {
	url, target string
	mu          sync.Mutex
	reqs        []recorded
}

func newRecorder(b *testing.B, target string) *recorder {
	r := &recorder{target: strings.TrimRight(target, "/")}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		rc := recorded{method: req.Method, uri: req.URL.RequestURI(), contentType: req.Header.Get("Content-Type"), body: body}
		r.mu.Lock()
		r.reqs = append(r.reqs, rc)
		r.mu.Unlock()
		resp, err := r.send(http.DefaultClient, rc)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	b.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// send sends one recorded request to Elasticsearch.
func (r *recorder) send(cl *http.Client, rc recorded) (*http.Response, error) {
	req, err := http.NewRequest(rc.method, r.target+rc.uri, bytes.NewReader(rc.body))
	if err != nil {
		return nil, err
	}
	if rc.contentType != "" {
		req.Header.Set("Content-Type", rc.contentType)
	}
	return cl.Do(req)
}

// take returns the requests recorded since the last take.
func (r *recorder) take() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs = nil
	return out
}

// replay sends recorded requests to Elasticsearch one after another and
// reads every answer whole: the raw engine doing the API request's work.
func (r *recorder) replay(cl *http.Client, reqs []recorded) error {
	for _, rc := range reqs {
		resp, err := r.send(cl, rc)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode >= 300 {
			return fmt.Errorf("raw %s %s: HTTP %d", rc.method, rc.uri, resp.StatusCode)
		}
	}
	return nil
}

// record sends path once to the recording server and returns what its
// store asked Elasticsearch.
func (sr *scaleRead) record(b *testing.B, path string) []recorded {
	sr.rec.take()
	rb := sr.httpBench
	rb.base = sr.recBase
	rb.do(b, http.MethodGet, path, nil)
	reqs := sr.rec.take()
	if len(reqs) == 0 {
		b.Fatalf("%s made no Elasticsearch request", path)
	}
	return reqs
}

// readPairs times each request of a group through the API server at base
// and its recorded Elasticsearch requests raw, alternately, every request at least
// minScaleRounds times, and reports p50/p99 of both and their p50 ratio.
func (sr *scaleRead) readPairs(b *testing.B, group, base string) {
	hb := sr.httpBench
	hb.base = base
	paths := sr.requests[group]
	if group == "company" {
		paths = sr.companies(b)
	}
	if len(paths) == 0 {
		b.Fatalf("no requests in group %s", group)
	}
	recs := make([][]recorded, len(paths))
	for i, p := range paths {
		recs[i] = sr.record(b, p)
	}
	// As the store's client: no gzip asked for (Elasticsearch answers
	// uncompressed), so the raw requests are the store's, headers too.
	raw := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	// One untimed round each way (connections, caches).
	for i, p := range paths {
		hb.do(b, http.MethodGet, p, nil)
		if err := sr.rec.replay(raw, recs[i]); err != nil {
			b.Fatal(err)
		}
	}
	n := max(b.N, minScaleRounds*len(paths))
	api, direct := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	perAPI, perRaw := make([][]time.Duration, len(paths)), make([][]time.Duration, len(paths))
	var before, hop []time.Duration
	bb := hb
	bb.base = sr.before
	if base == sr.noCache {
		bb.base = sr.beforeNoCache
	}
	b.ResetTimer()
	for i := 0; i < n; i++ {
		k := i % len(paths)
		if bb.base != "" {
			t0 := time.Now()
			bb.do(b, http.MethodGet, paths[k], nil)
			before = append(before, time.Since(t0))
		}
		hop = append(hop, sr.hop(b, base+paths[k]))
		t0 := time.Now()
		hb.do(b, http.MethodGet, paths[k], nil)
		d := time.Since(t0)
		api, perAPI[k] = append(api, d), append(perAPI[k], d)
		t0 = time.Now()
		if err := sr.rec.replay(raw, recs[k]); err != nil {
			b.Fatal(err)
		}
		d = time.Since(t0)
		direct, perRaw[k] = append(direct, d), append(perRaw[k], d)
	}
	b.StopTimer()
	reportPair(b, api, direct)
	b.ReportMetric(ms(median(hop)), "hop-p50-ms")
	b.ReportMetric(float64(median(direct)+median(hop))/float64(median(direct)), "floor-x-raw")
	if len(before) > 0 {
		b.ReportMetric(ms(median(before)), "before-p50-ms")
		b.ReportMetric(float64(median(before))/float64(median(direct)), "before-x-raw")
	}
	if base == sr.base {
		sr.countCommands(b, paths)
	}
	if os.Getenv("NOTICES_BENCH_VERBOSE") == "1" {
		for k, p := range paths {
			fmt.Fprintf(os.Stderr, "  %-90s api p50 %8.2f ms  raw p50 %8.2f ms  (%d ES requests)\n",
				p, ms(median(perAPI[k])), ms(median(perRaw[k])), len(recs[k]))
		}
	}
}

// minScaleRounds is how many times a scale read benchmark sends each
// request of its mix at least, whatever b.N is.
const minScaleRounds = 30

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// reportPair reports the API's and the raw engine's p50 and p99 and the
// ratio of the p50s.
func reportPair(b *testing.B, api, raw []time.Duration) {
	pct := func(l []time.Duration, p float64) time.Duration {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		return l[min(len(l)-1, int(p*float64(len(l))))]
	}
	a50, r50 := pct(api, 0.5), pct(raw, 0.5)
	b.ReportMetric(ms(a50), "p50-ms")
	b.ReportMetric(ms(pct(api, 0.99)), "p99-ms")
	b.ReportMetric(ms(r50), "raw-p50-ms")
	b.ReportMetric(ms(pct(raw, 0.99)), "raw-p99-ms")
	b.ReportMetric(float64(a50)/float64(r50), "x-raw")
}

// companies are the company-view requests: as internal/store/sqlite's
// BenchmarkCompany, ACNs and ABNs of notices and register companies with
// and without notices, spread over the data.
func (sr *scaleRead) companies(b *testing.B) []string {
	ctx := context.Background()
	var out []string
	seen := map[string]bool{}
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, "/v1/companies/"+id)
		}
	}
	for _, sortBy := range []string{notice.SortPublishedDesc, notice.SortPublishedAsc} {
		for page := 1; page <= 100 && len(out) < 150; page += 20 {
			p, err := sr.st.Elastic.Search(ctx, notice.SearchQuery{Filter: notice.Filter{IncludeDeregistration: true},
				Sort: sortBy, Limit: 100, Page: page})
			if err != nil {
				b.Fatal(err)
			}
			for i, n := range p.Notices {
				switch {
				case i%7 == 0 && n.ACN != nil:
					add(*n.ACN)
				case i%11 == 0 && n.ABN != nil:
					add(*n.ABN)
				}
			}
		}
	}
	acns, abns := sr.registerIDs(b)
	for i := 0; i < len(acns) && i < 25*1000; i += 1000 {
		add(acns[i])
	}
	for i := 0; i < len(abns) && i < 25*400; i += 400 {
		add(abns[i])
	}
	return out
}

// registerIDs reads the register file's ACNs (every 97th row) and ABNs
// (every 89th row that has one), as BenchmarkHTTPMatch50k picks them.
func (sr *scaleRead) registerIDs(b *testing.B) (acns, abns []string) {
	f, err := os.Open(sr.files.Register)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	rr, err := ingest.NewRegisterReader(f)
	if err != nil {
		b.Fatal(err)
	}
	var all []string
	for row := 1; ; row++ {
		r, err := rr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if len(all) < 50000 {
			all = append(all, r.ACN)
		}
		if row%97 == 0 && len(acns) < 40000 {
			acns = append(acns, r.ACN)
		}
		if r.ABN != "" && row%89 == 1 && len(abns) < 10000 {
			abns = append(abns, r.ABN)
		}
	}
	if len(acns)+len(abns) < 50000 { // a small (BENCH_QUICK) register: its first companies
		acns, abns = all, nil
	}
	return acns, abns
}

// match times POST /v1/match with 50,000 register identifiers through the
// API, answered from the replica's in-memory copy as serve does, beside the
// the Redis lookups of a screen without the register copy as raw go-redis
// pipelines (and a bare Go map): the register, then the resolved ABNs'
// names, their inputs worked out once before the timing (the notices
// come from the in-memory copy: Redis holds none).
func (sr *scaleRead) match(b *testing.B) {
	ctx := context.Background()
	acns, abns := sr.registerIDs(b)
	ids := append(append([]string(nil), acns...), abns...)
	ids = ids[:min(50000, len(ids))]
	body, _ := json.Marshal(map[string]any{"identifiers": ids})
	rdb := sr.st.Client()
	pre := keyspace.Prefix(sr.ns)
	v, err := rdb.Get(ctx, pre+"reg:v").Result()
	if err != nil {
		b.Fatal(err)
	}
	reg := pre + "reg:" + v + ":"
	var acnIDs, abnIDs []string
	for _, id := range ids {
		if len(id) == 9 {
			acnIDs = append(acnIDs, id)
		} else {
			abnIDs = append(abnIDs, id)
		}
	}
	hmget := func(p redis.Pipeliner, key string, fields []string) []*redis.SliceCmd {
		var cmds []*redis.SliceCmd
		for i := 0; i < len(fields); i += 10000 {
			cmds = append(cmds, p.HMGet(ctx, key, fields[i:min(i+10000, len(fields))]...))
		}
		return cmds
	}
	vals := func(cmds []*redis.SliceCmd) []string {
		var out []string
		for _, c := range cmds {
			for _, x := range c.Val() {
				s, _ := x.(string)
				out = append(out, s)
			}
		}
		return out
	}
	var c1 [3][]*redis.SliceCmd
	rt1 := func() error {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			c1 = [3][]*redis.SliceCmd{hmget(p, reg+"name", acnIDs), hmget(p, reg+"acnabn", acnIDs), hmget(p, reg+"abn", abnIDs)}
			return nil
		})
		return err
	}
	// Work out round trip 2's inputs once.
	if err := rt1(); err != nil {
		b.Fatal(err)
	}
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	var resolved []string
	for _, s := range vals(c1[2]) {
		if l := split(s); len(l) > 0 {
			resolved = append(resolved, l[0])
		}
	}
	rt2 := func() error {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			hmget(p, reg+"name", resolved)
			return nil
		})
		return err
	}
	rounds := max(b.N, 20)
	api, raw := make([]time.Duration, 0, rounds), make([]time.Duration, 0, rounds)
	t0 := time.Now()
	// Untimed: connections, and the replica's copy loads.
	warmRedis := loadScreenCopy(b, sr.st.Redis.ScreenCopy(), func() { sr.do(b, http.MethodPost, "/v1/match", body) })
	load := time.Since(t0)
	// The bare Go map beside it: 50,000 lookups in a map of the same ids.
	idMap := make(map[string]bool, len(ids))
	for _, id := range ids {
		idMap[id] = true
	}
	b.ResetTimer()
	for range rounds {
		t0 := time.Now()
		sr.do(b, http.MethodPost, "/v1/match", body)
		api = append(api, time.Since(t0))
		t0 = time.Now()
		for _, rt := range []func() error{rt1, rt2} {
			if err := rt(); err != nil {
				b.Fatal(err)
			}
		}
		raw = append(raw, time.Since(t0))
	}
	b.StopTimer()
	if fromCopy, fromRedis := sr.st.Redis.ScreenCopy().Counts(); fromRedis != warmRedis || fromCopy == 0 {
		b.Fatalf("screens from the copy %d, from Redis %d: the copy was not used", fromCopy, fromRedis)
	}
	var hits int
	mapP50 := p50(rounds, func() {
		hits = 0
		for _, id := range ids {
			if idMap[id] {
				hits++
			}
		}
	})
	if hits != len(ids) {
		b.Fatalf("map found %d of %d", hits, len(ids))
	}
	reportPair(b, api, raw)
	b.ReportMetric(float64(mapP50.Microseconds())/1000, "map-p50-ms")
	b.ReportMetric(load.Seconds(), "first-screen-with-copy-load-s")
	b.ReportMetric(float64(len(ids)), "ids")
}
