//go:build linux

// Package failover kills the Redis primary under a running scale stack and
// checks that the service rides through the Sentinel failover: the built
// binary's `serve` (two) and `worker` (one) reach Redis through three
// Sentinels (NOTICES_REDIS_SENTINELS), Elasticsearch comes from
// internal/testservers, and the Redis topology from
// testservers.StartSentinel. While watches are created (some accounts near
// their plan's limits), bulk screens run and notices arrive for a watch
// with a webhook, the primary gets SIGKILL. Afterwards nothing the API
// acknowledged is lost, quotas count exactly what exists, no answer was a
// 5xx other than 503 backend_unavailable, the processes recovered without
// a restart, and every notice was delivered under one delivery id.
package failover

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
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

func TestMain(m *testing.M) { testservers.Main(m) }

// afterPromotion bounds how long after the promotion a request may still
// be refused with 503: generous for a loaded machine, far below a stale
// view's minute.
const afterPromotion = 20 * time.Second

// creator is one account creating watches during the burst until its plan
// says no.
type creator struct {
	name     string
	plan     string
	key      string
	prefill  int // watches created before the burst
	perWatch int // companies per watch
	limit    string
	next     int // next fresh ACN number

	mu      sync.Mutex
	created []string // ids answered 201
	refused string   // the 402 code that ended the burst for it
	unsure  int      // creates answered 503: written or not
}

// fresh returns n ACNs no watch of the test has used.
func (c *creator) fresh(n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := acns(c.next, n)
	c.next += n
	return out
}

func TestRedisFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, runs the scale stack on a Sentinel topology and kills the Redis primary")
	}
	rideThrough(t, sentinel{testservers.StartSentinel(t)})
}

// TestRedisClusterMasterLoss is TestRedisFailover on a Redis Cluster of its
// own (3 masters, a replica each; NOTICES_REDIS_CLUSTER_URL): the master
// owning the most of the test's accounts (each account's keys are under
// its own hash tag) gets SIGKILL and the cluster promotes its replica.
func TestRedisClusterMasterLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, runs the scale stack on a Redis Cluster and kills a master")
	}
	rideThrough(t, &cluster{top: testservers.StartRedisCluster(t)})
}

// topology is the Redis a rideThrough runs on and how it loses its primary.
type topology interface {
	// env is the settings naming it, for namespace ns.
	env(t *testing.T, ns string) []string
	// kill sends SIGKILL to the primary (on a cluster: the master owning
	// the most of accounts' slots) and returns its address.
	kill(t *testing.T, accounts []string) string
	// promoted waits for its successor and returns its address.
	promoted(t *testing.T, old string) string
	// recovered checks a serve's /health and /ready, and every process's
	// /metrics, after the failover to now.
	recovered(t *testing.T, serves, all []*proc, now string)
}

// rideThrough runs the scale stack on top and kills its primary mid-burst
// (the package comment says what it checks).
func rideThrough(t *testing.T, top topology) {
	bin := testbin.Build(t)
	if out := testbin.Run(t, bin, nil, "version"); bytes.Contains(out, []byte("scale unavailable")) {
		t.Fatalf("this binary cannot run NOTICES_BACKEND=scale:\n%s", out)
	}
	esURL, ns := testservers.Elasticsearch(t), testservers.Namespace(t)
	dir := t.TempDir()

	rcv := testbin.NewReceiver(t)
	caFile := filepath.Join(dir, "receiver-ca.pem")
	rcv.WriteCA(t, caFile, 0o600)
	common := append(top.env(t, ns),
		"NOTICES_BACKEND=scale",
		"NOTICES_ELASTICSEARCH_URL="+esURL,
		"NOTICES_NAMESPACE="+ns,
		"NOTICES_SECRET_KEY="+config.DevelopmentSecretKey,
		"NOTICES_WEBHOOK_ALLOW_PRIVATE=true",
		"NOTICES_WEBHOOK_CA_FILE="+caFile,
		"NOTICES_DELIVERY_RETRY_UNIT=1s",
		"NOTICES_DELIVERY_TIMEOUT=5s",
		"NOTICES_LOG_LEVEL=warn",
		"NOTICES_SOURCE=none",
	)
	envFor := func(name string) []string {
		return append(slices.Clone(common), "NOTICES_DATA_DIR="+filepath.Join(dir, name))
	}

	// ---- data and accounts, by separate processes
	sample := filepath.Join(dir, "sample")
	testbin.Run(t, bin, envFor("cli"), "sample", "--notices", "400", "--companies", "800", "--now", "2026-11-20", "--out", sample)
	testbin.Run(t, bin, envFor("cli"), "ingest", "register", filepath.Join(sample, "company_register.tsv"))
	testbin.Run(t, bin, envFor("cli"), "ingest", "notices", filepath.Join(sample, "notices.jsonl.gz"))
	var accountIDs []string // the master owning the most is killed on a cluster
	account := func(name, plan string) (key, read string) {
		var a struct {
			AccountID  string `json:"account_id"`
			AccountKey string `json:"account_key"`
			ReadKey    string `json:"read_key"`
		}
		if err := json.Unmarshal(testbin.Run(t, bin, envFor("cli"), "accounts", "create", "--name", name, "--plan", plan), &a); err != nil || a.AccountKey == "" {
			t.Fatalf("accounts create %s: %v", name, err)
		}
		accountIDs = append(accountIDs, a.AccountID)
		return a.AccountKey, a.ReadKey
	}
	for _, name := range []string{"idle-a", "idle-b"} { // 6 accounts in all
		account(name, "standard")
	}

	serveA := start(t, bin, "serve A", envFor("serveA"), "serve")
	serveB := start(t, bin, "serve B", envFor("serveB"), "serve")
	worker := start(t, bin, "worker", envFor("worker"), "worker", "--concurrency", "2")
	bases := []string{serveA.base, serveB.base}
	ty := &tally{}

	// ---- accounts near their plan's limits: standard is 20 watches and
	// 10,000 companies.
	creators := []*creator{
		{name: "watches-a", plan: "standard", prefill: 8, perWatch: 1, limit: "watch_limit_reached", next: 10_000_000},
		{name: "watches-b", plan: "standard", prefill: 14, perWatch: 2, limit: "watch_limit_reached", next: 20_000_000},
		{name: "companies", plan: "standard", prefill: 3, perWatch: 100, limit: "quota_exceeded", next: 30_000_000},
	}
	for _, c := range creators {
		c.key, _ = account(c.name, c.plan)
		setup := newAPI(t, c.key, bases, nil)
		for i := 0; i < c.prefill; i++ {
			n := c.perWatch
			if c.limit == "quota_exceeded" {
				n = 3000 // 9,000 companies before the burst
			}
			var w struct {
				ID string `json:"id"`
			}
			setup.call("POST", "/v1/watches", map[string]any{"identifiers": c.fresh(n)}, http.StatusCreated, &w)
			c.created = append(c.created, w.ID)
		}
	}

	// ---- a watch with a webhook, and deliveries before the burst
	hookKey, readKey := account("deliveries", "enterprise")
	hooks := newAPI(t, hookKey, bases, nil)
	watched := acns(91_000_001, 3)
	var w struct {
		ID string `json:"id"`
	}
	hooks.call("POST", "/v1/watches", map[string]any{"identifiers": watched, "name": "failover"}, http.StatusCreated, &w)
	var reg struct {
		Secret string `json:"secret"`
	}
	hooks.call("POST", "/v1/watches/"+w.ID+"/webhook", map[string]string{"url": rcv.Server.URL + "/hook"}, http.StatusCreated, &reg)
	rcv.SetSecret(reg.Secret)
	var want []string // notice ids the watch must have delivered
	var wantMu sync.Mutex
	// ingestRetrying writes n notices for the watched companies and runs
	// `noticesd ingest notices` on them, again every half second for up
	// to a minute while it fails (Redis unreachable during the failover),
	// as an operator's job would.
	ingestRetrying := func(prefix string, n int) error {
		idents := slices.Repeat(watched, (n+2)/3)[:n]
		file := filepath.Join(dir, prefix+".jsonl")
		if err := os.WriteFile(file, noticeLines(prefix, idents), 0o600); err != nil {
			return err
		}
		if err := runIngest(t, bin, envFor("cli"), file); err != nil {
			return err
		}
		wantMu.Lock()
		for i := range idents {
			want = append(want, notice.IDFor(fmt.Sprintf("%s%05d", prefix, i)))
		}
		wantMu.Unlock()
		return nil
	}
	ingest := func(prefix string, n int, _ bool) {
		t.Helper()
		if err := ingestRetrying(prefix, n); err != nil {
			t.Fatal(err)
		}
	}
	ingest("BEFORE", 6, false)
	testbin.WaitFor(t, 60*time.Second, "the first batch delivered", func() bool {
		n, _ := rcv.Delivered(want)
		return n == len(want)
	})

	// ---- the burst
	rcv.SetDelay(150 * time.Millisecond) // deliveries in flight at the kill
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := newAPI(t, c.key, bases, ty)
			for {
				select {
				case <-stop:
					return
				case <-time.After(400 * time.Millisecond):
				}
				status, code, data := a.do("POST", "/v1/watches", map[string]any{"identifiers": c.fresh(c.perWatch)})
				c.mu.Lock()
				switch {
				case status == http.StatusCreated:
					var got struct {
						ID string `json:"id"`
					}
					_ = json.Unmarshal(data, &got)
					c.created = append(c.created, got.ID)
				case status == http.StatusPaymentRequired:
					c.refused = code
				case status == http.StatusServiceUnavailable:
					c.unsure++
				}
				done := c.refused != ""
				c.mu.Unlock()
				if done {
					return
				}
			}
		}()
	}
	screenIDs := append(acns(60_000_000, 1998), watched[0], "123456780")
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := newAPI(t, readKey, bases, ty)
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				status, _, data := a.do("POST", "/v1/match", map[string]any{"identifiers": screenIDs})
				if status == http.StatusOK && !bytes.Contains(data, []byte(`"`+watched[0]+`"`)) {
					t.Errorf("screen: %s not in the answer %s", watched[0], tail(string(data), 300))
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // reads of the deliveries and the watch
		defer wg.Done()
		a := newAPI(t, hookKey, bases, ty)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if i%2 == 0 {
				a.do("GET", "/v1/watches/"+w.ID+"/deliveries?limit=10", nil)
			} else {
				a.do("GET", "/v1/watches/"+w.ID, nil)
			}
		}
	}()

	ingest("DURING", 30, false) // deliveries under way at the kill
	time.Sleep(700 * time.Millisecond)
	kill := time.Now()
	old := top.kill(t, accountIDs)
	t.Logf("killed the Redis primary %s (kill -9) mid-burst", old)
	afterDone := make(chan error, 1)
	go func() { afterDone <- ingestRetrying("AFTER", 12) }() // retried until the CLI gets through
	now := top.promoted(t, old)
	failedOver := time.Since(kill)
	if err := <-afterDone; err != nil {
		t.Fatal(err)
	}
	t.Logf("%s promoted %s after the kill", now, failedOver.Round(time.Millisecond))

	// Every creator reaches its limit; the burst then goes on for two
	// seconds of screens and reads on the new primary.
	testbin.WaitFor(t, 90*time.Second, "every account to reach its plan limit", func() bool {
		for _, c := range creators {
			c.mu.Lock()
			r := c.refused
			c.mu.Unlock()
			if r == "" {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()

	// ---- no 5xx but 503 backend_unavailable, and how long they lasted
	window, first503, last503, summary := ty.report(t, kill)
	t.Logf("requests during the burst (route, status, code: count):\n%s", summary)
	if first503.IsZero() {
		t.Logf("no request was refused with 503 during the failover (primary promoted after %s)", failedOver.Round(time.Millisecond))
	} else {
		t.Logf("503 backend_unavailable window: %s (first at +%s, last at +%s after the kill; promoted at +%s)",
			window.Round(time.Millisecond), first503.Sub(kill).Round(time.Millisecond), last503.Sub(kill).Round(time.Millisecond), failedOver.Round(time.Millisecond))
	}
	fmt.Printf("failover: primary %s -> %s promoted %s after kill -9; 503 window %s\n", old, now, failedOver.Round(time.Millisecond), window.Round(time.Millisecond))
	// The 503s belong to the promotion: a process still refused long after
	// the successor took over follows a stale view of the primary (a
	// go-redis cluster client reloading its slot map only every 60 s kept
	// answering 503 for 47-55 s after a 3-5 s promotion).
	if !last503.IsZero() && last503.Sub(kill) > failedOver+afterPromotion {
		t.Errorf("503 backend_unavailable answered until +%s after the kill, more than %s after the promotion (+%s)",
			last503.Sub(kill).Round(time.Millisecond), afterPromotion, failedOver.Round(time.Millisecond))
	}

	// ---- the processes recovered without a restart
	for _, p := range []*proc{serveA, serveB, worker} {
		if !p.alive() {
			t.Fatalf("%s exited during the failover (%v)", p.name, p.err)
		}
	}
	top.recovered(t, []*proc{serveA, serveB}, []*proc{serveA, serveB, worker}, now)
	if os.Getenv("DEBUG_FAILOVER") != "" {
		t.Logf("serve A stderr:\n%s", tail(serveA.stderr.String(), 20000))
	}

	// ---- every acknowledged watch exists and counts against its quota
	for _, c := range creators {
		a := newAPI(t, c.key, bases, nil)
		for _, id := range c.created {
			if status, _, body := a.do("GET", "/v1/watches/"+id, nil); status != http.StatusOK {
				t.Errorf("%s: watch %s was created (201) but GET answers %d %s", c.name, id, status, body)
			}
		}
		var list struct {
			Data []struct {
				ID              string `json:"id"`
				IdentifierCount int    `json:"identifier_count"`
			} `json:"data"`
		}
		a.call("GET", "/v1/watches", nil, http.StatusOK, &list)
		companies := 0
		for _, x := range list.Data {
			companies += x.IdentifierCount
		}
		// Fill exactly to the limit: every create must succeed and the
		// next be refused, so the quota counts exactly what exists. A
		// create the failover cut short (answered 503 after its watch was
		// written, before it was finished) holds its quota, unlisted, until
		// a sweep undoes it once its lease (6 s) has run out: until then
		// the fill is refused early, and tried again.
		fillToLimit(t, a, c)
		converged := time.Since(kill)
		t.Logf("%s: %d watches acknowledged (201), %d answered 503, %d stored (%d companies) after the burst; burst ended by 402 %s; the quota matched what exists at +%s after the kill",
			c.name, len(c.created), c.unsure, len(list.Data), companies, c.refused, converged.Round(time.Second))
	}

	// ---- every notice delivered, each under one delivery id, and every
	// delivery record delivered
	testbin.WaitFor(t, 180*time.Second, "every notice delivered to the TLS receiver", func() bool {
		n, _ := rcv.Delivered(want)
		return n == len(want)
	})
	if _, dup := rcv.Delivered(want); len(dup) > 0 {
		t.Errorf("notices delivered under more than one delivery id: %v", dup)
	}
	testbin.WaitFor(t, 180*time.Second, "every delivery record delivered", func() bool {
		var list struct {
			Data []struct {
				Status string `json:"status"`
			} `json:"data"`
		}
		hooks.call("GET", "/v1/watches/"+w.ID+"/deliveries?limit=100", nil, http.StatusOK, &list)
		if len(list.Data) > len(want) {
			t.Fatalf("%d delivery records, want %d", len(list.Data), len(want))
		}
		for _, d := range list.Data {
			if d.Status != "delivered" {
				return false
			}
		}
		return len(list.Data) == len(want)
	})
	posts, bad := rcv.Counts()
	if bad > 0 {
		t.Errorf("%d webhook requests had a bad signature", bad)
	}
	t.Logf("deliveries: %d notices, %d posts (%d repeated, same delivery id)", len(want), posts, posts-len(want))
}

// runIngest runs `noticesd ingest notices file`; a failure (Redis
// unreachable during the failover) is retried every half second for up to
// a minute.
func runIngest(t *testing.T, bin string, env []string, file string) error {
	deadline := time.Now().Add(60 * time.Second)
	for attempt := 1; ; attempt++ {
		cmd := exec.Command(bin, "ingest", "notices", file)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			if attempt > 1 {
				t.Logf("ingest %s went through at attempt %d", filepath.Base(file), attempt)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("noticesd ingest notices %s (attempt %d): %v\n%s", file, attempt, err, tail(string(out), 2048))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// fillToLimit creates watches until c's account is exactly at its plan
// limit (20 watches, or 10,000 companies), then wants one more create
// refused with 402 c.limit. A refusal before the limit (a cut-short create
// still holding quota) is waited out, for up to three minutes. It returns
// how long after the call the quota matched what exists.
func fillToLimit(t *testing.T, a *api, c *creator) time.Duration {
	t.Helper()
	began := time.Now()
	for {
		var list struct {
			Data []struct {
				IdentifierCount int `json:"identifier_count"`
			} `json:"data"`
		}
		a.call("GET", "/v1/watches", nil, http.StatusOK, &list)
		var need [][]string // the creates that reach the limit
		switch c.limit {
		case "watch_limit_reached":
			for i := len(list.Data); i < 20; i++ {
				need = append(need, c.fresh(1))
			}
		case "quota_exceeded":
			companies := 0
			for _, x := range list.Data {
				companies += x.IdentifierCount
			}
			if companies < 10000 {
				need = append(need, c.fresh(10000-companies))
			}
		}
		early := ""
		for _, ids := range need {
			status, code, body := a.do("POST", "/v1/watches", map[string]any{"identifiers": ids})
			if status == http.StatusPaymentRequired && code == c.limit {
				early = string(body)
				break
			}
			if status != http.StatusCreated {
				t.Fatalf("%s: filling to the limit: %d %s", c.name, status, body)
			}
		}
		if early == "" {
			status, code, body := a.do("POST", "/v1/watches", map[string]any{"identifiers": c.fresh(1)})
			if status != http.StatusPaymentRequired || code != c.limit {
				t.Errorf("%s: at the plan limit a create answers %d %s, want 402 %s", c.name, status, body, c.limit)
			}
			return time.Since(began)
		}
		if time.Since(began) > 3*time.Minute {
			t.Errorf("%s: three minutes after the burst the quota still counts more than exists: %s", c.name, early)
			return time.Since(began)
		}
		time.Sleep(2 * time.Second)
	}
}

// getJSON GETs url and decodes a JSON answer into v; it returns the
// status (0 without an answer).
func getJSON(url string, v any) int {
	c := &http.Client{Timeout: 10 * time.Second}
	res, err := c.Get(url)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(body, v)
	return res.StatusCode
}

// scrape reads the unlabelled samples and label-free sums of a /metrics
// page: name -> value (samples of one name with labels are added up).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	res, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		var v float64
		if _, err := fmt.Sscan(rest, &v); err == nil {
			out[name] += v
		}
	}
	return out
}
