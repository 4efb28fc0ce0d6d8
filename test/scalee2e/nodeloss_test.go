package scalee2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

// readTally counts the answers of the readers of TestElasticsearchNodeLoss.
type readTally struct {
	mu       sync.Mutex
	ok       int
	busy     int      // 503 backend_unavailable: documented, counted, bounded
	failures []string // anything else
	byRoute  map[string]int
}

func (r *readTally) add(route string, status int, body []byte, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byRoute[route]++
	switch {
	case err != nil:
		r.failures = append(r.failures, fmt.Sprintf("%s: %v", route, err))
	case status == http.StatusOK:
		r.ok++
	case status == http.StatusServiceUnavailable && strings.Contains(string(body), `"backend_unavailable"`):
		r.busy++
	default:
		r.failures = append(r.failures, fmt.Sprintf("%s: %d %.300s", route, status, body))
	}
}

func (r *readTally) counts() (ok, busy int, failures []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok, r.busy, slices.Clone(r.failures)
}

// TestElasticsearchNodeLoss runs the scale backend on a cluster of two
// Elasticsearch nodes with NOTICES_ELASTICSEARCH_REPLICAS=1 and kills one
// of them (kill -9) while eight readers and a `noticesd ingest` of new
// notices run against it. The layout is docs/operating.md's ("Several
// Elasticsearch nodes"): node a is master-eligible and holds data, node b
// holds data only, so that losing b leaves the cluster its master (with
// two master-eligible nodes, losing either loses the quorum). No read may
// fail but with a documented 503 backend_unavailable (counted and bounded),
// the ingest must complete, and once b is back every notice is there once,
// on both nodes, with a notice_seq of its own under the arrival watermark.
func TestElasticsearchNodeLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a two-node Elasticsearch cluster and kills a node")
	}
	began := time.Now()
	bin := testbin.Build(t)
	redisURL, ns := testservers.Redis(t), testservers.Namespace(t)
	cluster := testservers.StartCluster(t,
		testservers.NodeSpec{Name: "a", Roles: []string{"master", "data"}},
		testservers.NodeSpec{Name: "b", Roles: []string{"data"}})
	a, b := cluster.Nodes[0], cluster.Nodes[1]
	t.Logf("cluster of 2 nodes (%s) up %.0f s into the test", strings.Join(cluster.URLs(), ", "), time.Since(began).Seconds())
	esURLs := strings.Join(cluster.URLs(), ",")
	dir := t.TempDir()
	env := []string{
		"NOTICES_BACKEND=scale",
		"NOTICES_ELASTICSEARCH_URL=" + esURLs,
		"NOTICES_ELASTICSEARCH_REPLICAS=1",
		"NOTICES_REDIS_URL=" + redisURL,
		"NOTICES_NAMESPACE=" + ns,
		"NOTICES_SECRET_KEY=" + config.DevelopmentSecretKey,
		"NOTICES_DATA_DIR=" + filepath.Join(dir, "data"),
		"NOTICES_AGG_CACHE=0", // every filters and stats read asks Elasticsearch
		"NOTICES_LOG_LEVEL=warn",
	}

	// ---- data before the loss: the register and 2,000 notices
	const sampleNotices = 2000
	sampleDir := filepath.Join(dir, "sample")
	testbin.Run(t, bin, env, "sample", "--notices", fmt.Sprint(sampleNotices), "--companies", "3000", "--now", "2026-11-20", "--out", sampleDir)
	testbin.Run(t, bin, env, "ingest", "register", filepath.Join(sampleDir, "company_register.tsv"))
	testbin.Run(t, bin, env, "ingest", "notices", filepath.Join(sampleDir, "notices.jsonl.gz"))
	var acct struct {
		ReadKey string `json:"read_key"`
	}
	if err := json.Unmarshal(testbin.Run(t, bin, env, "accounts", "create", "--name", "nodeloss", "--plan", "enterprise"), &acct); err != nil || acct.ReadKey == "" {
		t.Fatalf("accounts create: %v", err)
	}
	// Every index noticesd made has one replica, and both copies are
	// assigned (green).
	var indices []struct {
		Index string `json:"index"`
		Rep   string `json:"rep"`
	}
	esGet(t, a.URL()+"/_cat/indices/"+ns+"-*?format=json&h=index,rep", &indices)
	if len(indices) < 2 {
		t.Fatalf("indices of %s: %v; want the notices and register indices", ns, indices)
	}
	for _, ix := range indices {
		if ix.Rep != "1" {
			t.Errorf("index %s has %s replicas; NOTICES_ELASTICSEARCH_REPLICAS=1 wants 1", ix.Index, ix.Rep)
		}
	}
	if err := cluster.WaitStatus("green", 60*time.Second); err != nil {
		t.Fatal(err)
	}

	serve := start(t, bin, "serve", env, "serve")
	health := func() (status string, nodes map[string]bool) {
		t.Helper()
		res, err := http.Get(serve.base + "/health")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var h struct {
			Status      string `json:"status"`
			SearchNodes []struct {
				Node      string `json:"node"`
				Reachable bool   `json:"reachable"`
			} `json:"search_nodes"`
		}
		if err := json.NewDecoder(res.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		nodes = map[string]bool{}
		for _, n := range h.SearchNodes {
			nodes[n.Node] = n.Reachable
		}
		return h.Status, nodes
	}
	hostA, hostB := strings.TrimPrefix(a.URL(), "http://"), strings.TrimPrefix(b.URL(), "http://")
	if st, nodes := health(); st != "ok" || len(nodes) != 2 || !nodes[hostA] || !nodes[hostB] {
		t.Fatalf("/health before the loss: %s, search_nodes %v; want ok, both reachable", st, nodes)
	}

	// ---- eight readers: search, company, filters and stats
	tally := &readTally{byRoute: map[string]int{}}
	routes := []string{
		"/v1/notices?limit=20&sort=published_desc",
		"/v1/notices?q=liquidator&limit=20",
		"/v1/companies/" + someACN(t, serve.base, acct.ReadKey),
		"/v1/filters",
		"/v1/stats?group_by=state",
		"/v1/stats",
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	hc := &http.Client{Timeout: 30 * time.Second}
	for i := range 8 {
		readers.Go(func() {
			for j := i; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				route := routes[j%len(routes)]
				req, _ := http.NewRequest(http.MethodGet, serve.base+route, nil)
				req.Header.Set("X-API-Key", acct.ReadKey)
				res, err := hc.Do(req)
				var body []byte
				status := 0
				if err == nil {
					body, _ = io.ReadAll(res.Body)
					res.Body.Close()
					status = res.StatusCode
				}
				tally.add(strings.SplitN(route, "?", 2)[0], status, body, err)
				// At most 20 reads a second each: 160 in all, under the
				// enterprise plan's 200 a second.
				time.Sleep(readPause)
			}
		})
	}
	stopReaders := sync.OnceFunc(func() { close(stop); readers.Wait() })
	t.Cleanup(stopReaders)

	// ---- an ingest of new notices; node b killed mid-way
	const fresh = 20000
	acns := make([]string, fresh)
	for i := range acns {
		acns[i] = acn(70000000 + i)
	}
	file := filepath.Join(dir, "nodeloss.jsonl")
	if err := os.WriteFile(file, noticeLines("nodeloss", acns), 0o644); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(mustRedisOptions(t, redisURL))
	t.Cleanup(func() { _ = rdb.Close() })
	arrivals := publog.New(rdb, ns, publog.Options{})
	ctx := context.Background()
	base, err := arrivals.Published(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Batches of 2,000: the load is ten write calls, each announced once
	// searchable, so the kill falls between the first and the last.
	ingest := exec.Command(bin, "ingest", "notices", "--batch", "2000", file)
	ingest.Env = append(os.Environ(), env...)
	var ingestOut, ingestErr testbin.LockedBuffer
	ingest.Stdout, ingest.Stderr = &ingestOut, &ingestErr
	ingestStart := time.Now()
	if err := ingest.Start(); err != nil {
		t.Fatal(err)
	}
	ingestDone := make(chan error, 1)
	go func() { ingestDone <- ingest.Wait() }()
	// Mid-way: some of the new notices announced, not all.
	testbin.WaitFor(t, 120*time.Second, "the ingest to announce its first notices", func() bool {
		w, err := arrivals.Published(ctx)
		return err == nil && w > base
	})
	okBefore, busyBefore, _ := tally.counts()
	w, _ := arrivals.Published(ctx)
	select {
	case err := <-ingestDone:
		t.Fatalf("the ingest ended (%v) before node b was killed (watermark %d of %d): it must be killed mid-way; load more notices", err, w-base, fresh)
	default:
	}
	if w-base >= fresh {
		t.Fatalf("all %d new notices were announced before node b was killed: it must be killed mid-way", fresh)
	}
	killedAt := time.Now()
	b.Kill(t)
	t.Logf("node b killed %.1f s into the ingest, %d of %d new notices announced", killedAt.Sub(ingestStart).Seconds(), w-base, fresh)

	// /health and /ready while b is down: degraded with b not answering,
	// ready all the same.
	testbin.WaitFor(t, 20*time.Second, "/health to report node b unreachable", func() bool {
		st, nodes := health()
		return st == "degraded" && nodes[hostA] && !nodes[hostB]
	})
	res, err := http.Get(serve.base + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	readyBody, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(readyBody), `{"node":"`+hostB+`","reachable":false}`) {
		t.Errorf("/ready with node b down = %d %s; want 200 naming %s unreachable", res.StatusCode, readyBody, hostB)
	}

	var ingestErrV error
	select {
	case ingestErrV = <-ingestDone:
	case <-time.After(3 * time.Minute):
		_ = ingest.Process.Kill()
		t.Fatalf("the ingest did not end within 3 min of node b's loss; stderr:\n%s", tail(ingestErr.String(), 4096))
	}
	ingestTook := time.Since(ingestStart)
	if ingestErrV != nil {
		t.Errorf("the ingest failed after node b's loss (%v); it must complete on node a:\n%s", ingestErrV, tail(ingestErr.String(), 4096))
	}
	if want := fmt.Sprintf("read %d inserted %d updated 0 rejected 0", fresh, fresh); !strings.Contains(ingestOut.String(), want) {
		t.Errorf("ingest summary %q, want %q", ingestOut.String(), want)
	}
	// Reads go on a little while b is down, then b comes back.
	time.Sleep(2 * time.Second)
	okDown, busyDown, _ := tally.counts()
	restartAt := time.Now()
	b.Start(t)
	rejoined := time.Since(restartAt)
	if err := cluster.WaitStatus("green", 120*time.Second); err != nil {
		t.Fatal(err)
	}
	green := time.Since(restartAt)
	stopReaders()
	ok, busy, failures := tally.counts()
	t.Logf("reads: %d answered 200 (%d before the kill, %d while b was down), %d 503 backend_unavailable (%d before the kill, %d while b was down), %d other failures; by route %v",
		ok, okBefore, okDown-okBefore, busy, busyBefore, busyDown-busyBefore, len(failures), tally.byRoute)
	t.Logf("ingest of %d notices took %.1f s with node b killed %.1f s in; b rejoined %.1f s after its restart, cluster green after %.1f s",
		fresh, ingestTook.Seconds(), killedAt.Sub(ingestStart).Seconds(), rejoined.Seconds(), green.Seconds())
	if len(failures) > 0 {
		t.Errorf("%d reads failed otherwise than 503 backend_unavailable, first: %s", len(failures), strings.Join(failures[:min(5, len(failures))], "\n"))
	}
	// A request in flight on b when it dies is retried on a; the 503s the
	// docs allow are reads that found no copy of a shard while a promoted
	// its replica: two at most.
	if busy > maxNodeLoss503 {
		t.Errorf("%d reads answered 503 backend_unavailable; at most %d allowed", busy, maxNodeLoss503)
	}
	if ok == okDown || okDown == okBefore {
		t.Errorf("reads answered: %d before the kill, %d by b's restart, %d at the end; readers must have run throughout", okBefore, okDown, ok)
	}

	// ---- totals once b is back: every notice once, on both nodes
	if st, nodes := health(); st != "ok" || !nodes[hostA] || !nodes[hostB] {
		t.Errorf("/health after b's return: %s, search_nodes %v; want ok, both reachable", st, nodes)
	}
	want := int64(sampleNotices + fresh)
	esDo(t, http.MethodPost, a.URL()+"/"+ns+"-notices/_refresh", nil)
	for _, n := range cluster.Nodes {
		// Each node counts its own copy of the shard.
		var c struct {
			Count int64 `json:"count"`
		}
		esGet(t, n.URL()+"/"+ns+"-notices/_count?preference=_only_local", &c)
		if c.Count != want {
			t.Errorf("node %s holds %d notices, want %d", n.Name, c.Count, want)
		}
	}
	var agg struct {
		Aggregations struct {
			Dup struct {
				Buckets []struct {
					Key   int64 `json:"key"`
					Count int64 `json:"doc_count"`
				} `json:"buckets"`
			} `json:"dup"`
			Max struct {
				Value float64 `json:"value"`
			} `json:"max"`
		} `json:"aggregations"`
	}
	esDo(t, http.MethodPost, a.URL()+"/"+ns+"-notices/_search", map[string]any{
		"size": 0,
		"aggs": map[string]any{
			"dup": map[string]any{"terms": map[string]any{"field": "notice_seq", "min_doc_count": 2, "size": 10}},
			"max": map[string]any{"max": map[string]any{"field": "notice_seq"}},
		},
	}, &agg)
	if d := agg.Aggregations.Dup.Buckets; len(d) > 0 {
		t.Errorf("notice_seq shared by several notices: %v", d)
	}
	w, err = arrivals.Published(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if maxSeq := int64(agg.Aggregations.Max.Value); w < maxSeq {
		t.Errorf("published seq %d below the highest notice_seq %d: stored notices are not published", w, maxSeq)
	}
	var page struct {
		Total int64 `json:"total"`
	}
	status, body := getWithKey(t, serve.base+"/v1/notices?q=nodeloss&limit=1", acct.ReadKey)
	if status != http.StatusOK || json.Unmarshal(body, &page) != nil || page.Total != fresh {
		t.Errorf("GET /v1/notices?q=nodeloss = %d %s; want total %d", status, body, fresh)
	}

	// ---- the documented commands, against this cluster and serve
	blocks := testbin.ShellBlocks(t, "docs/operating.md", "### Several Elasticsearch nodes")
	if len(blocks) != 3 {
		t.Fatalf(`docs/operating.md's "Several Elasticsearch nodes" has %d shell blocks; this test runs its three (check, replicas, wait)`, len(blocks))
	}
	re := regexp.MustCompile(`(?m)^ES=\S+ BASE_URL=\S+$`)
	if n := len(re.FindAllString(blocks[0], -1)); n != 1 {
		t.Fatalf("docs/operating.md's node commands: %d lines set ES and BASE_URL, want 1:\n%s", n, blocks[0])
	}
	script := "NOTICES_NAMESPACE=" + ns + "\n" + re.ReplaceAllLiteralString(blocks[0], "ES="+a.URL()+" BASE_URL="+serve.base) +
		"\n" + blocks[1] + "\n" + blocks[2] + "\n"
	out, ran := testbin.RunShell(t, script)
	if want := testbin.CurlCalls(blocks); ran < want {
		t.Errorf("the node commands ran %d curl calls, fewer than the %d written", ran, want)
	}
	for _, want := range []string{`{"node":"` + hostA + `","reachable":true}`, `{"node":"` + hostB + `","reachable":true}`, `"status" : "green"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the node commands' output lacks %s:\n%s", want, out)
		}
	}
	if started := regexp.MustCompile(`(?m)^`+ns+`-notices-\S+ +0 +[pr] +STARTED +[ab]\s*$`).FindAllString(out, -1); len(started) != 2 {
		t.Errorf("the notices index has %d started copies in the commands' output, want 2 (a primary and a replica):\n%s", len(started), out)
	}

	// ---- /metrics counted node b's failures and the retries they cost
	_, body = getWithKey(t, serve.base+"/metrics", "")
	failed := metricValue(string(body), `noticesd_elasticsearch_node_failures_total{node="`+hostB+`"}`)
	retries := metricValue(string(body), "noticesd_elasticsearch_retries_total")
	t.Logf("serve's /metrics: %v failures on node b, %v retries", failed, retries)
	if failed < 1 || retries < 1 {
		t.Errorf("serve's /metrics: %v failures on node b and %v retries; want both counted", failed, retries)
	}
	t.Logf("whole test: %.0f s", time.Since(began).Seconds())
}

// readPause is each reader's pause between two reads.
const readPause = 50 * time.Millisecond

// maxNodeLoss503 bounds the 503 backend_unavailable reads of a node loss:
// measured 0 in every run; without the client's retry on another node,
// 5 in a run.
const maxNodeLoss503 = 2

// someACN is the ACN of the newest notice that has one.
func someACN(t *testing.T, base, key string) string {
	t.Helper()
	status, body := getWithKey(t, base+"/v1/notices?limit=100&sort=published_desc", key)
	var page struct {
		Data []struct {
			ACN *string `json:"acn"`
		} `json:"data"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &page) != nil {
		t.Fatalf("GET /v1/notices = %d %s", status, body)
	}
	for _, n := range page.Data {
		if n.ACN != nil {
			return *n.ACN
		}
	}
	t.Fatal("no notice with an ACN in the first 100")
	return ""
}

func mustRedisOptions(t *testing.T, url string) *redis.Options {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// esDo sends one JSON request to Elasticsearch and decodes the answer into
// out (when given); anything but 2xx fails t.
func esDo(t *testing.T, method, url string, body any, out ...any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		t.Fatalf("%s %s = %d %s", method, url, res.StatusCode, data)
	}
	if len(out) > 0 {
		if err := json.Unmarshal(data, out[0]); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, data)
		}
	}
}

func esGet(t *testing.T, url string, out any) { t.Helper(); esDo(t, http.MethodGet, url, nil, out) }

// getWithKey GETs url with an API key (none when "").
func getWithKey(t *testing.T, url, key string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

// metricValue is the value of a sample line of a Prometheus text answer
// (-1 when absent).
func metricValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}
