// Package scalee2e runs the whole API in scale mode (NOTICES_BACKEND=scale)
// through the built binary, as operators run it: Elasticsearch and Redis from
// internal/testservers under a namespace of the test's own, `noticesd ingest`
// and `noticesd accounts` as separate processes, two `serve` processes that
// requests alternate between, two `worker` processes, a real TLS webhook
// receiver that checks every signature, and the collector reading a
// directory on one serve. Then one worker and one serve are SIGKILLed
// mid-run: nothing may be lost and the surviving serve may answer no 5xx.
package scalee2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

func TestMain(m *testing.M) { testservers.Main(m) }

// proc is one running noticesd process (serve or worker).
type proc struct {
	name   string
	cmd    *exec.Cmd
	stderr *testbin.LockedBuffer
	base   string        // serve only: http://127.0.0.1:PORT
	done   chan struct{} // closed when the process has exited (err is then set)
	err    error
}

// start runs `noticesd args...` with env; serve waits for /ready.
func start(t *testing.T, bin, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, stderr: &testbin.LockedBuffer{}}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	if args[0] == "serve" {
		addr := testbin.FreeAddr(t)
		p.base = "http://" + addr
		p.cmd.Env = append(p.cmd.Env, "NOTICES_ADDR="+addr)
	}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.done = make(chan struct{})
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s stderr (last 4 KB):\n%s", p.name, tail(p.stderr.String(), 4096))
		}
	})
	if p.base == "" {
		return p
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if res, err := http.Get(p.base + "/ready"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) before it was ready; stderr:\n%s", name, p.err, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer /ready 200 within 60 s; stderr:\n%s", name, p.stderr)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// stop sends SIGTERM and wants a clean exit within 30 s.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("%s exited with %v after SIGTERM\n%s", p.name, p.err, tail(p.stderr.String(), 4096))
		}
	case <-time.After(30 * time.Second):
		t.Errorf("%s did not stop within 30 s of SIGTERM", p.name)
	}
}

// kill sends SIGKILL and reaps the process.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// client sends requests to the serve processes in turn and fails the test on
// any 5xx.
type client struct {
	t     *testing.T
	key   string
	mu    sync.Mutex
	bases []string
	next  int
}

func (c *client) base() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.bases[c.next%len(c.bases)]
	c.next++
	return b
}

// do makes one request to base (or the next serve when base is "") and
// returns the status and body.
func (c *client) do(base, method, path string, body any) (int, []byte) {
	c.t.Helper()
	if base == "" {
		base = c.base()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("X-API-Key", c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s%s: %v", method, base, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 500 {
		c.t.Errorf("%s %s%s = %d %s", method, base, path, res.StatusCode, data)
	}
	return res.StatusCode, data
}

// call is do with an expected status, decoding the answer into out.
func (c *client) call(method, path string, body any, want int, out any) {
	c.t.Helper()
	status, data := c.do("", method, path, body)
	if status != want {
		c.t.Fatalf("%s %s = %d %s; want %d", method, path, status, data, want)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// same sends one GET to every serve and wants the same 200 answer from each.
func (c *client) same(path string, out any) {
	c.t.Helper()
	var first []byte
	for _, b := range c.bases {
		status, data := c.do(b, "GET", path, nil)
		if status != http.StatusOK {
			c.t.Fatalf("GET %s%s = %d %s", b, path, status, data)
		}
		if first == nil {
			first = data
		} else if !bytes.Equal(canonical(c.t, first), canonical(c.t, data)) {
			c.t.Fatalf("GET %s: the serve processes disagree:\n%s\n%s", path, first, data)
		}
	}
	if out != nil {
		if err := json.Unmarshal(first, out); err != nil {
			c.t.Fatal(err)
		}
	}
}

func canonical(t *testing.T, b []byte) []byte {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	out, _ := json.Marshal(v)
	return out
}

// acn returns a valid ACN made from n (8 digits and the check digit).
func acn(n int) string {
	first8 := fmt.Sprintf("%08d", n)
	return fmt.Sprintf("%s%d", first8, ident.ACNCheckDigit(first8))
}

// noticeLines writes JSON Lines notices for the given ACNs, published now.
func noticeLines(prefix string, acns []string) []byte {
	var b bytes.Buffer
	now := time.Now().UTC()
	for i, a := range acns {
		line, _ := json.Marshal(map[string]any{
			"source_id": fmt.Sprintf("%s%05d", prefix, i), "published_at": now.Add(-time.Duration(i) * time.Second).Format(time.RFC3339),
			"acn": a, "company_name": "SCALE STACK TEST PTY LTD", "notice_type": "Appointment of liquidator",
			"notice_code": "APP", "notice_purpose": "Appointment", "state": "VIC", "status": "In Liquidation",
			"text": "scale stack end to end " + prefix,
		})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// searchIDs returns the ids of the notices whose text has word.
func searchIDs(c *client, word string, want int) []string {
	c.t.Helper()
	var ids []string
	for page := 1; ; page++ {
		var res struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			HasMore bool `json:"has_more"`
		}
		c.call("GET", fmt.Sprintf("/v1/notices?q=%s&limit=100&page=%d&sort=published_desc", word, page), nil, http.StatusOK, &res)
		for _, n := range res.Data {
			ids = append(ids, n.ID)
		}
		if !res.HasMore {
			break
		}
	}
	if len(ids) != want {
		c.t.Fatalf("search q=%s: %d notices, want %d", word, len(ids), want)
	}
	return ids
}

// TestScaleStack runs the stack of the package doc on a single Redis
// (NOTICES_REDIS_URL). It runs in parallel with TestScaleStackRedisCluster (each on a namespace
// and ports of its own): most of either is waiting (asynq's recoverer,
// the retry schedule), so the pair costs make test little more than one.
func TestScaleStack(t *testing.T) {
	t.Parallel()
	scaleStack(t, "NOTICES_REDIS_URL="+testservers.Redis(t))
}

// TestScaleStackRedisCluster is TestScaleStack with Redis a Redis Cluster
// of 3 masters with a replica each (NOTICES_REDIS_CLUSTER_URL): the
// namespace's keys are in one hash slot, asynq's queues in theirs.
func TestScaleStackRedisCluster(t *testing.T) {
	t.Parallel()
	scaleStack(t, "NOTICES_REDIS_CLUSTER_URL="+testservers.RedisCluster(t))
}

// checkRedisBlock checks the redis block of /health and /ready: the
// primary named, and on a cluster its three masters, each answering, the
// primary one of them.
func checkRedisBlock(t *testing.T, c *client, base string, cluster bool) {
	t.Helper()
	for _, path := range []string{"/health", "/ready"} {
		var body struct {
			Redis struct {
				Primary string `json:"primary"`
				Masters []struct {
					Node      string `json:"node"`
					Reachable bool   `json:"reachable"`
				} `json:"masters"`
			} `json:"redis"`
		}
		status, b := c.do(base, http.MethodGet, path, nil)
		if err := json.Unmarshal(b, &body); status != http.StatusOK || err != nil || body.Redis.Primary == "" {
			t.Fatalf("GET %s = %d %s (%v); want 200 naming the Redis primary", path, status, b, err)
		}
		if !cluster {
			if body.Redis.Masters != nil {
				t.Errorf("GET %s lists masters on a single Redis: %s", path, b)
			}
			continue
		}
		primaryListed := false
		for _, m := range body.Redis.Masters {
			primaryListed = primaryListed || m.Node == body.Redis.Primary
			if !m.Reachable {
				t.Errorf("GET %s: master %s does not answer: %s", path, m.Node, b)
			}
		}
		if len(body.Redis.Masters) != 3 || !primaryListed {
			t.Errorf("GET %s: want the cluster's 3 masters, the primary among them: %s", path, b)
		}
	}
}

// scaleStack runs the stack with redis, the setting naming its Redis.
func scaleStack(t *testing.T, redis string) {
	if testing.Short() {
		t.Skip("builds the binary and runs the whole scale stack")
	}
	bin := testbin.Build(t)
	// The binary must be able to run the scale backend and the worker.
	if out := testbin.Run(t, bin, nil, "version"); bytes.Contains(out, []byte("scale unavailable")) {
		t.Fatalf("this binary cannot run NOTICES_BACKEND=scale:\n%s", out)
	}
	if out := testbin.Run(t, bin, nil, "--help"); !bytes.Contains(out, []byte("\n  worker ")) {
		t.Fatalf("this binary has no `noticesd worker` command:\n%s", out)
	}
	esURL, ns := testservers.Elasticsearch(t), testservers.Namespace(t)
	dir := t.TempDir()

	rcv := testbin.NewReceiver(t)
	caFile := filepath.Join(dir, "receiver-ca.pem")
	rcv.WriteCA(t, caFile, 0o600)
	common := []string{
		"NOTICES_BACKEND=scale",
		"NOTICES_ELASTICSEARCH_URL=" + esURL,
		redis,
		"NOTICES_NAMESPACE=" + ns,
		"NOTICES_SECRET_KEY=" + config.DevelopmentSecretKey,
		"NOTICES_WEBHOOK_ALLOW_PRIVATE=true",
		"NOTICES_WEBHOOK_CA_FILE=" + caFile,
		"NOTICES_DELIVERY_RETRY_UNIT=1s",
		"NOTICES_DELIVERY_TIMEOUT=5s",
		"NOTICES_LOG_LEVEL=warn",
		"NOTICES_SOURCE=none", // serve A alone gets a directory (envFor appends it; the last value wins)
	}
	envFor := func(name string, extra ...string) []string {
		return append(append(slices.Clone(common), "NOTICES_DATA_DIR="+filepath.Join(dir, name)), extra...)
	}

	// ---- data and an account, by separate processes
	const sampleNotices, sampleCompanies = 2000, 4000
	sampleDir := filepath.Join(dir, "sample")
	testbin.Run(t, bin, envFor("cli"), "sample", "--notices", fmt.Sprint(sampleNotices), "--companies", fmt.Sprint(sampleCompanies), "--now", "2026-11-20", "--out", sampleDir)
	testbin.Run(t, bin, envFor("cli"), "ingest", "register", filepath.Join(sampleDir, "company_register.tsv"))
	testbin.Run(t, bin, envFor("cli"), "ingest", "notices", filepath.Join(sampleDir, "notices.jsonl.gz"))
	var acct struct {
		AccountKey string `json:"account_key"`
		ReadKey    string `json:"read_key"`
	}
	if err := json.Unmarshal(testbin.Run(t, bin, envFor("cli"), "accounts", "create", "--name", "scale-e2e", "--plan", "enterprise"), &acct); err != nil || acct.AccountKey == "" {
		t.Fatalf("accounts create: %v", err)
	}

	// ---- two serve processes (the collector on A only) and two workers
	source := filepath.Join(dir, "drop")
	if err := os.MkdirAll(source, 0o755); err != nil {
		t.Fatal(err)
	}
	serveA := start(t, bin, "serve A", envFor("serveA", "NOTICES_SOURCE="+source, "NOTICES_COLLECT_INTERVAL=1s"), "serve")
	serveB := start(t, bin, "serve B", envFor("serveB"), "serve")
	worker1 := start(t, bin, "worker 1", envFor("worker1"), "worker", "--concurrency", "2")
	worker2 := start(t, bin, "worker 2", envFor("worker2"), "worker", "--concurrency", "2")
	c := &client{t: t, key: acct.AccountKey, bases: []string{serveA.base, serveB.base}}
	checkRedisBlock(t, c, serveA.base, strings.HasPrefix(redis, "NOTICES_REDIS_CLUSTER_URL="))

	// ---- read routes: both serve processes give the same answers
	var all struct {
		Data []struct {
			ID  string  `json:"id"`
			ACN *string `json:"acn"`
		} `json:"data"`
		Total int `json:"total"`
	}
	c.same("/v1/notices?include_deregistration=true&limit=100&sort=published_desc", &all)
	if all.Total != sampleNotices {
		t.Fatalf("search total %d, want the %d sample notices", all.Total, sampleNotices)
	}
	var withACN string
	for _, n := range all.Data {
		if n.ACN != nil && ident.ValidACN(*n.ACN) {
			withACN = *n.ACN
			break
		}
	}
	if withACN == "" {
		t.Fatal("no notice with a valid ACN among the 100 newest")
	}
	var one struct {
		ID string `json:"id"`
	}
	c.same("/v1/notices/"+all.Data[0].ID, &one)
	if one.ID != all.Data[0].ID {
		t.Fatalf("GET /v1/notices/%s answered %s", all.Data[0].ID, one.ID)
	}
	var company struct {
		ACN         string `json:"acn"`
		NoticeCount int    `json:"notice_count"`
	}
	c.same("/v1/companies/"+withACN, &company)
	if company.ACN != withACN || company.NoticeCount < 1 {
		t.Fatalf("company %s: %+v", withACN, company)
	}
	var filters struct {
		Total int `json:"total"`
	}
	c.same("/v1/filters?include_deregistration=true", &filters)
	if filters.Total != sampleNotices {
		t.Fatalf("filters total %d, want %d", filters.Total, sampleNotices)
	}
	var stats struct {
		Total int `json:"total"`
		Data  []struct {
			Count int `json:"count"`
		} `json:"data"`
	}
	c.same("/v1/stats?group_by=state&include_deregistration=true", &stats)
	sum := 0
	for _, b := range stats.Data {
		sum += b.Count
	}
	if stats.Total != sampleNotices || sum != sampleNotices {
		t.Fatalf("stats by state: total %d, buckets sum %d, want %d", stats.Total, sum, sampleNotices)
	}
	for _, b := range c.bases {
		status, body := c.do(b, "GET", "/v1/notices?limit=0", nil)
		if status != http.StatusBadRequest || !bytes.Contains(body, []byte(`"invalid_parameter"`)) {
			t.Fatalf("limit=0 on %s: %d %s, want 400 invalid_parameter", b, status, body)
		}
	}

	// ---- the bulk screen: 5,000 identifiers, every one in exactly one list
	ids := []string{withACN, "123456780"}
	for i := 0; len(ids) < 5000; i++ {
		ids = append(ids, acn(70000000+i))
	}
	var screen struct {
		Matched []struct {
			Identifier string `json:"identifier"`
		} `json:"matched"`
		Unmatched  []any `json:"unmatched"`
		Unresolved []any `json:"unresolved"`
		Counts     struct {
			Submitted, Matched, Unmatched, Unresolved int
		} `json:"counts"`
	}
	c.call("POST", "/v1/match", map[string]any{"identifiers": ids}, http.StatusOK, &screen)
	if n := screen.Counts; n.Submitted != len(ids) || n.Matched+n.Unmatched+n.Unresolved != len(ids) ||
		len(screen.Matched) != n.Matched || len(screen.Unmatched) != n.Unmatched || len(screen.Unresolved) != n.Unresolved {
		t.Fatalf("screen counts %+v with lists %d/%d/%d for %d identifiers", n, len(screen.Matched), len(screen.Unmatched), len(screen.Unresolved), len(ids))
	}
	if !slices.ContainsFunc(screen.Matched, func(m struct {
		Identifier string `json:"identifier"`
	}) bool {
		return m.Identifier == withACN
	}) {
		t.Fatalf("screen: %s has notices but is not matched", withACN)
	}

	// ---- a watch with a webhook (created on one serve, registered on the other)
	watched := []string{acn(91000001), acn(91000002), acn(91000003)}
	var w struct {
		ID string `json:"id"`
	}
	c.call("POST", "/v1/watches", map[string]any{"identifiers": watched, "name": "scale e2e"}, http.StatusCreated, &w)
	var reg struct {
		Secret string `json:"secret"`
	}
	c.call("POST", "/v1/watches/"+w.ID+"/webhook", map[string]string{"url": rcv.Server.URL + "/hook"}, http.StatusCreated, &reg)
	rcv.SetSecret(reg.Secret)
	var got struct {
		ID         string `json:"id"`
		WebhookURL string `json:"webhook_url"`
	}
	c.same("/v1/watches/"+w.ID, &got)
	if got.WebhookURL != rcv.Server.URL+"/hook" {
		t.Fatalf("watch webhook_url %q", got.WebhookURL)
	}

	// ---- notices arriving by `noticesd ingest` while everything runs
	ingested := append(slices.Repeat(watched, 5), acn(92000001), acn(92000002)) // 15 watched, 2 not
	file := filepath.Join(dir, "arrivals.jsonl")
	if err := os.WriteFile(file, noticeLines("SCALEINGEST", ingested), 0o600); err != nil {
		t.Fatal(err)
	}
	testbin.Run(t, bin, envFor("cli"), "ingest", "notices", file)
	searchIDs(c, "SCALEINGEST", len(ingested))

	// ---- and by the collector: a file dropped into serve A's source directory
	drop := noticeLines("SCALEDROP", slices.Repeat(watched[:2], 5)) // 10 watched
	if err := os.WriteFile(filepath.Join(source, "batch-1.jsonl.part"), drop, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(source, "batch-1.jsonl.part"), filepath.Join(source, "batch-1.jsonl")); err != nil {
		t.Fatal(err)
	}
	testbin.WaitFor(t, 60*time.Second, "the collector to take the dropped file (moved to done/)", func() bool {
		_, err := os.Stat(filepath.Join(source, "done", "batch-1.jsonl"))
		return err == nil
	})
	searchIDs(c, "SCALEDROP", 10)

	// ---- matches: polled page by page over both serve processes, each once
	wantMatched := 15 + 10
	matchIDs := func() []string {
		var out []string
		since := 0
		for {
			var page struct {
				Data []struct {
					ID string `json:"id"`
				} `json:"data"`
				NextSince int  `json:"next_since"`
				HasMore   bool `json:"has_more"`
			}
			c.call("GET", fmt.Sprintf("/v1/watches/%s/matches?since=%d&limit=7", w.ID, since), nil, http.StatusOK, &page)
			for _, n := range page.Data {
				out = append(out, n.ID)
			}
			since = page.NextSince
			if !page.HasMore {
				return out
			}
		}
	}
	testbin.WaitFor(t, 30*time.Second, "every watched notice among the watch's matches", func() bool { return len(matchIDs()) >= wantMatched })
	matched := matchIDs()
	if len(matched) != wantMatched || len(slices.Compact(slices.Sorted(slices.Values(matched)))) != wantMatched {
		t.Fatalf("matches: %d ids (%d distinct), want %d", len(matched), len(slices.Compact(slices.Sorted(slices.Values(matched)))), wantMatched)
	}

	// ---- webhooks: every match delivered once, signed
	testbin.WaitFor(t, 60*time.Second, "every match delivered to the TLS receiver", func() bool {
		n, _ := rcv.Delivered(matched)
		return n == wantMatched
	})
	if _, dup := rcv.Delivered(matched); len(dup) > 0 {
		t.Fatalf("notices delivered under more than one delivery id: %v", dup)
	}

	// ---- the crash: SIGKILL one worker and one serve while deliveries are in
	// flight and requests keep coming; the survivors finish everything. Each
	// worker runs two attempts at a time (--concurrency 2) and the receiver
	// takes 500 ms per request, so the 42 deliveries of the batch take
	// several seconds and some are in flight at the kill.
	rcv.SetDelay(500 * time.Millisecond)
	var survivorCalls, survivor5xx atomic.Int64
	stopLoad := make(chan struct{})
	var loadWG sync.WaitGroup
	loadWG.Add(1)
	go func() {
		defer loadWG.Done()
		paths := []string{"/v1/notices?q=liquidator&limit=5", "/v1/companies/" + withACN, "/v1/filters", "/v1/stats", "/v1/watches/" + w.ID + "/matches?limit=5"}
		for i := 0; ; i++ {
			select {
			case <-stopLoad:
				return
			case <-time.After(50 * time.Millisecond):
			}
			req, _ := http.NewRequest("GET", serveB.base+paths[i%len(paths)], nil)
			req.Header.Set("X-API-Key", acct.AccountKey)
			res, err := http.DefaultClient.Do(req)
			survivorCalls.Add(1)
			if err != nil {
				survivor5xx.Add(1)
				continue
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode >= 500 {
				survivor5xx.Add(1)
			}
		}
	}()
	crash := slices.Repeat(watched, 14) // 42 more watched notices
	crashFile := filepath.Join(dir, "crash.jsonl")
	if err := os.WriteFile(crashFile, noticeLines("SCALECRASH", crash), 0o600); err != nil {
		t.Fatal(err)
	}
	testbin.Run(t, bin, envFor("cli"), "ingest", "notices", crashFile)
	crashIDs := searchIDs(&client{t: t, key: acct.AccountKey, bases: []string{serveB.base}}, "SCALECRASH", len(crash))
	testbin.WaitFor(t, 60*time.Second, "deliveries of the crash batch under way", func() bool {
		n, _ := rcv.Delivered(crashIDs)
		return n >= 3
	})
	before, _ := rcv.Delivered(crashIDs)
	worker1.kill(t)
	serveA.kill(t)
	if before == len(crashIDs) {
		t.Fatalf("all %d delivered before the kill: the test caught nothing in flight", before)
	}
	t.Logf("killed worker 1 and serve A with %d of %d of the crash batch delivered", before, len(crashIDs))
	c.bases = []string{serveB.base}

	// Nothing lost: every notice of the batch is delivered (once per notice),
	// and the delivery records agree. The attempts the killed worker had in
	// flight come back through asynq's recoverer, which runs once a minute
	// on tasks whose 30 s lease has run out: up to about two minutes.
	testbin.WaitFor(t, 240*time.Second, "every crash-batch notice delivered by the surviving worker", func() bool {
		n, _ := rcv.Delivered(crashIDs)
		return n == len(crashIDs)
	})
	if _, dup := rcv.Delivered(crashIDs); len(dup) > 0 {
		t.Fatalf("notices delivered under more than one delivery id: %v", dup)
	}
	total := wantMatched + len(crashIDs)
	// A notice the killed worker posted before it could record the outcome
	// is at the receiver already, but its record stays pending until the
	// recoverer hands the attempt to the survivor (the same two minutes as
	// above), which posts it again under the same delivery id and records it.
	testbin.WaitFor(t, 240*time.Second, "every delivery record delivered", func() bool {
		var list struct {
			Data []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"data"`
		}
		// 67 records; the list shows 100 at most, newest first.
		c.call("GET", "/v1/watches/"+w.ID+"/deliveries?limit=100", nil, http.StatusOK, &list)
		if len(list.Data) > total {
			t.Fatalf("%d delivery records, want %d", len(list.Data), total)
		}
		if len(list.Data) < total {
			return false
		}
		for _, d := range list.Data {
			if d.Status != "delivered" {
				return false
			}
		}
		return true
	})
	if got := matchIDs(); len(got) != total {
		t.Fatalf("after the crash the watch has %d matches, want %d", len(got), total)
	}
	close(stopLoad)
	loadWG.Wait()
	if n := survivor5xx.Load(); n > 0 {
		t.Fatalf("the surviving serve answered %d of %d requests with a 5xx or not at all", n, survivorCalls.Load())
	}
	_, bad := rcv.Counts()
	if bad != 0 {
		t.Fatalf("%d webhook requests had a bad signature", bad)
	}
	t.Logf("survivor answered %d requests during the crash without a 5xx", survivorCalls.Load())

	// The survivors stop cleanly.
	worker2.stop(t)
	serveB.stop(t)
}

// TestScaleReadmeTour runs README.md's short tour, as written, against
// `noticesd demo` in scale mode (what `make run-scale` runs), on
// Elasticsearch and Redis under a namespace of its own.
func TestScaleReadmeTour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the demo in scale mode")
	}
	bin := testbin.Build(t)
	testbin.Tour(t, bin, []string{
		"NOTICES_BACKEND=scale",
		"NOTICES_ELASTICSEARCH_URL=" + testservers.Elasticsearch(t),
		"NOTICES_REDIS_URL=" + testservers.Redis(t),
		"NOTICES_NAMESPACE=" + testservers.Namespace(t),
		"NOTICES_DATA_DIR=" + filepath.Join(t.TempDir(), "data"),
	})
}
