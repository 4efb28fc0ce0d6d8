package api

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

// BenchmarkScale's measures of real noticesd processes on the loaded
// dataset: Redis's memory once a `noticesd worker` has matched every
// arrival, and the RSS of `noticesd serve` with and without the register
// copy of the bulk screen (NOTICES_SCREEN_COPY).

// procEnv is the environment a noticesd process of the bench's namespace
// runs with (scale mode, the bench's servers).
func (sr *scaleRead) procEnv(extra ...string) []string {
	key := base64.StdEncoding.EncodeToString(make([]byte, 32)) // the bench sends no webhook
	return append([]string{
		"NOTICES_BACKEND=scale",
		"NOTICES_ELASTICSEARCH_URL=" + sr.esURL,
		"NOTICES_REDIS_URL=" + sr.cfg.RedisURL,
		"NOTICES_NAMESPACE=" + sr.ns,
		"NOTICES_SECRET_KEY=" + key,
		"NOTICES_LOG_LEVEL=warn",
		// The bench key's plan, never throttled (the measured API's too).
		"NOTICES_PLAN_ENTERPRISE_RPS=1000000", "NOTICES_PLAN_ENTERPRISE_BURST=1000000",
	}, extra...)
}

// redisMemory runs a `noticesd worker` on the loaded namespace until
// arrival matching has reached the publish log's head, stops it, and
// reports Redis's INFO memory: used_memory (used-MiB) and
// used_memory_dataset (dataset-MiB), the whole Redis (the bench's own).
// The publish log still holds every notice loaded (its retention,
// NOTICES_PUBLISH_LOG_RETENTION, is 24 hours): this is Redis on the day
// of a full load.
func (sr *scaleRead) redisMemory(b *testing.B) {
	ctx := context.Background()
	bin := testbin.Build(b)
	start := time.Now()
	_, stop := testbin.Start(b, bin, sr.procEnv(), "worker")
	rdb := sr.st.Client()
	plog := publog.New(rdb, sr.ns, publog.Options{})
	keys := plog.Keys()
	testbin.WaitFor(b, 20*time.Minute, "the worker to match every arrival", func() bool {
		head, err := plog.Head(ctx)
		if err != nil {
			b.Fatal(err)
		}
		at, _ := rdb.Get(ctx, keys.MatchAt).Result()
		return head == "0-0" || at == head
	})
	stop()
	fmt.Fprintf(os.Stderr, "bench scale: a noticesd worker matched the arrivals in %.0f s\n", time.Since(start).Seconds())
	used := testservers.RedisInfoInt(b, rdb, "memory", "used_memory")
	dataset := testservers.RedisInfoInt(b, rdb, "memory", "used_memory_dataset")
	b.ReportMetric(float64(used)/(1<<20), "used-MiB")
	b.ReportMetric(float64(dataset)/(1<<20), "dataset-MiB")
	b.ReportMetric(float64(used)/float64(sr.notices), "bytes-per-notice-all")
}

// serveRSS runs `noticesd serve` on the loaded namespace twice, one after
// the other, from the same binary: with NOTICES_SCREEN_COPY on (the
// default) and off. After the same warm-up (50,000-identifier screens
// until one was answered from the register copy, or three with it off,
// then three more, the company mix and a search mix) and 3 s idle, it
// reads each process's VmRSS (/proc/<pid>/status) and reports both and
// their difference (copy-rss-MiB): what the register copy costs a
// replica. The notice copy is held either way (Redis keeps none).
func (sr *scaleRead) serveRSS(b *testing.B) {
	bin := testbin.Build(b)
	acns, abns := sr.registerIDs(b)
	ids := append(append([]string(nil), acns...), abns...)
	body, _ := json.Marshal(map[string]any{"identifiers": ids[:min(50000, len(ids))]})
	companies := sr.companies(b)
	rss := map[bool]int64{}
	for _, copyOn := range []bool{true, false} {
		setting := "off"
		if copyOn {
			setting = "on"
		}
		addr := testbin.FreeAddr(b)
		pid, stop := testbin.Start(b, bin, sr.procEnv("NOTICES_ADDR="+addr, "NOTICES_SCREEN_COPY="+setting), "serve")
		hb := sr.httpBench
		hb.base = "http://" + addr
		hb.cl = &http.Client{Timeout: 10 * time.Minute}
		testbin.WaitFor(b, 5*time.Minute, "serve to answer /health", func() bool {
			res, err := http.Get(hb.base + "/health")
			if err != nil {
				return false
			}
			res.Body.Close()
			return res.StatusCode == http.StatusOK
		})
		start := time.Now()
		for i := 0; ; i++ {
			hb.do(b, http.MethodPost, "/v1/match", body)
			fromCopy := screensFrom(b, hb.base, "copy")
			if (copyOn && fromCopy > 0) || (!copyOn && i >= 2) {
				break
			}
			if copyOn && time.Since(start) > 10*time.Minute {
				b.Fatalf("serve with NOTICES_SCREEN_COPY=on answered no screen from its copy in 10 minutes")
			}
			time.Sleep(time.Second)
		}
		for range 3 {
			hb.do(b, http.MethodPost, "/v1/match", body)
		}
		for _, p := range companies {
			hb.do(b, http.MethodGet, p, nil)
		}
		for _, p := range sr.requests["search-filter"] {
			hb.do(b, http.MethodGet, p, nil)
		}
		if !copyOn && screensFrom(b, hb.base, "copy") != 0 {
			b.Fatal("serve with NOTICES_SCREEN_COPY=off answered a screen from a register copy")
		}
		time.Sleep(3 * time.Second)
		rss[copyOn] = testbin.RSS(b, pid)
		stop()
		fmt.Fprintf(os.Stderr, "bench scale: noticesd serve, NOTICES_SCREEN_COPY=%s: VmRSS %d MiB after the warm-up (%.0f s)\n",
			setting, rss[copyOn]>>20, time.Since(start).Seconds())
	}
	b.ReportMetric(float64(rss[true])/(1<<20), "rss-copy-on-MiB")
	b.ReportMetric(float64(rss[false])/(1<<20), "rss-copy-off-MiB")
	b.ReportMetric(float64(rss[true]-rss[false])/(1<<20), "copy-rss-MiB")
}

// screensFrom reads serve's count of bulk screens answered from source
// (copy or redis) from its GET /metrics.
func screensFrom(b *testing.B, base, source string) int64 {
	res, err := http.Get(base + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	want := `noticesd_screen_copy_screens_total{source="` + source + `"} `
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				b.Fatalf("/metrics: %q: %v", sc.Text(), err)
			}
			return int64(n)
		}
	}
	return 0
}
