// Package load measures the built noticesd binary as a separate process
// under concurrent load over loopback: what a client sees (latency) and
// what the server costs (RSS from /proc). Run by `make bench`; on its own:
//
//	NOTICES_BENCH_NOTICES=200000 NOTICES_BENCH_REGISTER=800000 \
//	  go test -tags sqlite_fts5 -run '^$' -bench . -benchtime 1x ./test/load
//
// Sizes and the data directory follow the other benchmarks:
// NOTICES_BENCH_NOTICES [20000], NOTICES_BENCH_REGISTER [80000],
// NOTICES_BENCH_DIR [a temporary directory]. The dataset is written with
// `noticesd sample` and loaded with `noticesd ingest`, once per size.
package load

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noticesd/noticesd/test/testbin"
)

// The load of BenchmarkCompanyUnderScreenLoad.
const (
	screenConns     = 32               // connections screening at once, one key
	screenSize      = 50_000           // identifiers per screen
	lookupsAlone    = 3000             // company lookups measured without load
	loadDuration    = 20 * time.Second // how long the screens run
	rssSampleEvery  = 100 * time.Millisecond
	companyTargets  = 500 // distinct companies the lookups cycle through
	screenKeyPlan   = "standard"
	lookupKeyPlan   = "enterprise"
	lookupRateLimit = "1000000" // the lookup key's plan rate, raised so the loop is never throttled
)

// BenchmarkCompanyUnderScreenLoad runs `noticesd serve` on the sample and
// measures GET /v1/companies/{acn} p50/p99 from one connection, first
// alone, then while 32 connections of one (standard-plan) key send
// 50,000-identifier screens back to back without backing off. It reports
// both latencies, their ratio (goal: at most 2x), the server's peak RSS
// under the load and the screens answered and refused per second.
func BenchmarkCompanyUnderScreenLoad(b *testing.B) {
	bin := testbin.Build(b)
	data := dataset(b, bin)
	env := []string{
		"NOTICES_DATA_DIR=" + data.dir, "NOTICES_SOURCE=none", "NOTICES_LOG_LEVEL=error",
		// No webhooks here: serve refuses webhooks without NOTICES_SECRET_KEY.
		"NOTICES_WEBHOOKS=off",
		"NOTICES_PLAN_" + strings.ToUpper(lookupKeyPlan) + "_RPS=" + lookupRateLimit,
		"NOTICES_PLAN_" + strings.ToUpper(lookupKeyPlan) + "_BURST=" + lookupRateLimit,
	}
	screenKey := createKey(b, bin, env, screenKeyPlan)
	lookupKey := createKey(b, bin, env, lookupKeyPlan)
	srv := startServe(b, bin, env)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: screenConns + 4}, Timeout: time.Minute}
	lookup := func(i int) time.Duration {
		start := time.Now()
		req, _ := http.NewRequest(http.MethodGet, srv.base+"/v1/companies/"+data.companies[i%len(data.companies)], nil)
		req.Header.Set("X-API-Key", lookupKey)
		res, err := client.Do(req)
		if err != nil {
			b.Fatalf("company lookup: %v", err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("company lookup: HTTP %d", res.StatusCode)
		}
		return time.Since(start)
	}
	for i := range 200 { // warm up: connections, statement caches, pages
		lookup(i)
	}
	// One screen first: serve loads the in-memory company index in the
	// background at start (seconds on millions of register rows), and the
	// load is meant to measure screens, not that.
	warm, _ := http.NewRequest(http.MethodPost, srv.base+"/v1/match", bytes.NewReader(data.screenBody))
	warm.Header.Set("X-API-Key", screenKey)
	warmClient := &http.Client{Timeout: 5 * time.Minute}
	res, err := warmClient.Do(warm)
	if err != nil {
		b.Fatalf("warm-up screen: %v", err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b.Fatalf("warm-up screen: HTTP %d", res.StatusCode)
	}
	b.ResetTimer()
	for range b.N {
		alone := make([]time.Duration, 0, lookupsAlone)
		for i := range lookupsAlone {
			alone = append(alone, lookup(i))
		}
		rssIdle := testbin.RSS(b, srv.pid)

		var answered, refused, failed atomic.Int64
		ctx, cancel := context.WithTimeout(context.Background(), loadDuration)
		var wg sync.WaitGroup
		for range screenConns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				screenClient := &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.base+"/v1/match", bytes.NewReader(data.screenBody))
					req.Header.Set("X-API-Key", screenKey)
					req.Header.Set("Content-Type", "application/json")
					res, err := screenClient.Do(req)
					if err != nil {
						if ctx.Err() == nil {
							failed.Add(1) // the server refused and closed before the body was sent
						}
						continue
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					switch res.StatusCode {
					case http.StatusOK:
						answered.Add(1)
					case http.StatusTooManyRequests:
						refused.Add(1)
					default:
						b.Errorf("screen: HTTP %d", res.StatusCode)
					}
				}
			}()
		}
		var peak atomic.Int64
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(rssSampleEvery)
			defer t.Stop()
			for ctx.Err() == nil {
				if r := testbin.RSS(b, srv.pid); r > peak.Load() {
					peak.Store(r)
				}
				<-t.C
			}
		}()
		time.Sleep(time.Second) // let the screens start
		var loaded []time.Duration
		for i := 0; ctx.Err() == nil; i++ {
			loaded = append(loaded, lookup(i))
		}
		wg.Wait()
		cancel()

		b.ReportMetric(ms(percentile(alone, 50)), "alone-p50-ms")
		b.ReportMetric(ms(percentile(alone, 99)), "alone-p99-ms")
		b.ReportMetric(ms(percentile(loaded, 50)), "loaded-p50-ms")
		b.ReportMetric(ms(percentile(loaded, 99)), "loaded-p99-ms")
		b.ReportMetric(float64(percentile(loaded, 50))/float64(percentile(alone, 50)), "loaded/alone-p50")
		b.ReportMetric(float64(rssIdle>>20), "rss-idle-MiB")
		b.ReportMetric(float64(peak.Load()>>20), "rss-loaded-MiB")
		secs := (loadDuration - time.Second).Seconds()
		b.ReportMetric(float64(answered.Load())/secs, "screens/s")
		b.ReportMetric(float64(refused.Load()+failed.Load())/secs, "screens-refused/s")
		b.ReportMetric(float64(len(loaded))/secs, "lookups-loaded/s")
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, len(s)*p/100)]
}

// data is the benchmark's dataset: a data directory with the sample
// ingested, companies that have notices, and a 50,000-identifier screen
// body of register ACNs.
type data struct {
	dir        string
	companies  []string
	screenBody []byte
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// dataset writes the sample and ingests it with the binary, once per size
// in NOTICES_BENCH_DIR (or a temporary directory).
func dataset(b *testing.B, bin string) data {
	b.Helper()
	n, r := envInt("NOTICES_BENCH_NOTICES", 20000), envInt("NOTICES_BENCH_REGISTER", 80000)
	root := os.Getenv("NOTICES_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	}
	dir := filepath.Join(root, fmt.Sprintf("serve-s1-n%d-r%d", n, r))
	sampleDir := filepath.Join(dir, "sample")
	ready := filepath.Join(dir, "ready")
	if _, err := os.Stat(ready); err != nil {
		_ = os.RemoveAll(dir)
		start := time.Now()
		env := []string{"NOTICES_DATA_DIR=" + dir}
		testbin.Run(b, bin, env, "sample", "--notices", strconv.Itoa(n), "--companies", strconv.Itoa(r), "--out", sampleDir, "--seed", "1", "--now", "2026-11-20")
		testbin.Run(b, bin, env, "ingest", "register", filepath.Join(sampleDir, "company_register.tsv"))
		testbin.Run(b, bin, env, "ingest", "notices", filepath.Join(sampleDir, "notices.jsonl.gz"))
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "load bench dataset: %d notices, %d register rows in %s\n", n, r, time.Since(start).Round(time.Second))
	}
	d := data{dir: dir, companies: noticeACNs(b, filepath.Join(sampleDir, "notices.jsonl.gz"), companyTargets)}
	ids := registerACNs(b, filepath.Join(sampleDir, "company_register.tsv"), screenSize)
	body, err := json.Marshal(map[string][]string{"identifiers": ids})
	if err != nil {
		b.Fatal(err)
	}
	d.screenBody = body
	return d
}

// noticeACNs returns up to max distinct ACNs that notices carry.
func noticeACNs(b *testing.B, path string, max int) []string {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(gz)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() && len(out) < max {
		var n struct {
			ACN *string `json:"acn"`
		}
		if json.Unmarshal(sc.Bytes(), &n) == nil && n.ACN != nil && *n.ACN != "" && !seen[*n.ACN] {
			seen[*n.ACN] = true
			out = append(out, *n.ACN)
		}
	}
	if len(out) == 0 {
		b.Fatal("no notice carries an ACN")
	}
	return out
}

// registerACNs returns n identifiers: the register's distinct ACNs, spread
// over the file, repeated if it has fewer.
func registerACNs(b *testing.B, path string, n int) []string {
	b.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	seen := map[string]bool{}
	var all []string
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) > 1 && f[1] != "" && !seen[f[1]] {
			seen[f[1]] = true
			all = append(all, f[1])
		}
	}
	out := make([]string, 0, n)
	step := max(1, len(all)/n)
	for i := 0; len(out) < n; i += step {
		out = append(out, all[i%len(all)])
	}
	return out
}

func createKey(b *testing.B, bin string, env []string, plan string) string {
	b.Helper()
	var keys struct {
		ReadKey string `json:"read_key"`
	}
	if err := json.Unmarshal(testbin.Run(b, bin, env, "accounts", "create", "--name", "Load "+plan, "--plan", plan), &keys); err != nil {
		b.Fatal(err)
	}
	return keys.ReadKey
}

type server struct {
	base string
	pid  int
}

// startServe runs `noticesd serve` on a free loopback port until the
// benchmark ends and waits for /health.
func startServe(b *testing.B, bin string, env []string) server {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	pid, _ := testbin.Start(b, bin, append(slices.Clip(env), "NOTICES_ADDR="+addr), "serve")
	s := server{base: "http://" + addr, pid: pid}
	deadline := time.Now().Add(2 * time.Minute) // the company index loads at start
	for {
		res, err := http.Get(s.base + "/health")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("serve did not answer /health within 2 minutes: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
