package scalee2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/collector"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

// pagedFeed is a JSON Lines feed served in pages by the collector's since
// cursor: no since is page 0, since=k is page k, and every page names the
// next in X-Notices-Next-Since. One page (stall) sends half its lines the
// first time it is asked for and then holds the connection open, so the
// collector reading it is mid-run.
type pagedFeed struct {
	pages, perPage, stall int
	mu                    sync.Mutex
	asked                 map[int]int // page -> requests
	firstAt               map[int]time.Time
	lastAt                map[int]time.Time
	release               chan struct{}
}

func (f *pagedFeed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	page := 0
	if s := r.URL.Query().Get(collector.SinceParam); s != "" {
		page, _ = strconv.Atoi(s)
	}
	f.mu.Lock()
	f.asked[page]++
	n := f.asked[page]
	if n == 1 {
		f.firstAt[page] = time.Now()
	}
	f.lastAt[page] = time.Now()
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-ndjson")
	next := min(page+1, f.pages)
	w.Header().Set(collector.NextSinceHeader, strconv.Itoa(next))
	if page >= f.pages {
		return // nothing new
	}
	lines := make([]string, f.perPage)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"source_id":"CF-%d-%d","published_at":"2026-11-19","acn":"%09d","company_name":"FEED %d %d PTY LTD","notice_type":"Appointment of Liquidator","notice_code":"APLQ","notice_purpose":"Appointment","state":"VIC","status":"In Liquidation","text":"paged feed"}`+"\n",
			page, i, 100000+page*f.perPage+i, page, i)
	}
	if page == f.stall && n == 1 {
		for _, l := range lines[:len(lines)/2] {
			fmt.Fprint(w, l)
		}
		w.(http.Flusher).Flush()
		select { // the collector reading it is killed
		case <-r.Context().Done():
		case <-f.release:
		}
		return
	}
	for _, l := range lines {
		fmt.Fprint(w, l)
	}
}

func (f *pagedFeed) count(page int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[page]
}

// TestCollectorFailover: two serve replicas with NOTICES_SOURCE on one
// paged http feed; only the lease holder collects. The holder is SIGKILLed
// while it reads a page; the other replica takes the collector over within
// the lease (NOTICES_COLLECTOR_LEASE) and resumes from the cursor the
// first one kept in Redis: no page is fetched twice but the one in flight,
// and no notice is missed.
func TestCollectorFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two serve processes")
	}
	bin := testbin.Build(t)
	esURL, redisURL, ns := testservers.Elasticsearch(t), testservers.Redis(t), testservers.Namespace(t)
	dir := t.TempDir()
	feed := &pagedFeed{pages: 8, perPage: 40, stall: 4, asked: map[int]int{}, firstAt: map[int]time.Time{},
		lastAt: map[int]time.Time{}, release: make(chan struct{})}
	srv := httptest.NewServer(feed)
	t.Cleanup(func() { close(feed.release); srv.Close() })
	const leaseTTL = 3 * time.Second
	for _, name := range []string{"cli", "serveA", "serveB"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := func(name string) []string {
		return []string{
			"NOTICES_BACKEND=scale",
			"NOTICES_ELASTICSEARCH_URL=" + esURL,
			"NOTICES_REDIS_URL=" + redisURL,
			"NOTICES_NAMESPACE=" + ns,
			"NOTICES_SECRET_KEY=" + config.DevelopmentSecretKey,
			"NOTICES_LOG_LEVEL=warn",
			"NOTICES_DATA_DIR=" + filepath.Join(dir, name),
			"NOTICES_SOURCE=" + srv.URL + "/feed",
			"NOTICES_COLLECT_INTERVAL=200ms",
			"NOTICES_COLLECTOR_LEASE=" + leaseTTL.String(),
		}
	}
	var acct struct {
		ReadKey string `json:"read_key"`
	}
	if err := json.Unmarshal(testbin.Run(t, bin, env("cli"), "accounts", "create", "--name", "collector-failover", "--plan", "standard"), &acct); err != nil || acct.ReadKey == "" {
		t.Fatalf("accounts create: %v", err)
	}

	// A starts first and takes the lease; B waits behind it.
	serveA := start(t, bin, "serve A", env("serveA"), "serve")
	testbin.WaitFor(t, 30*time.Second, "serve A to fetch the feed's first page", func() bool { return feed.count(0) > 0 })
	serveB := start(t, bin, "serve B", env("serveB"), "serve")
	testbin.WaitFor(t, 60*time.Second, "serve A to reach the stalled page", func() bool { return feed.count(feed.stall) > 0 })
	if ran := collectorLastRun(t, serveB.base); ran != nil {
		t.Fatalf("serve B ran the collector (last_run_at %s) while A held the lease", *ran)
	}
	if ran := collectorLastRun(t, serveA.base); ran == nil {
		t.Fatal("serve A's /health shows no collector run although the feed served it")
	}

	serveA.kill(t)
	killed := time.Now()
	testbin.WaitFor(t, leaseTTL+20*time.Second, "serve B to take the collector over and ask for the stalled page again",
		func() bool { return feed.count(feed.stall) >= 2 })
	feed.mu.Lock()
	takeover := feed.lastAt[feed.stall].Sub(killed)
	feed.mu.Unlock()
	t.Logf("serve B asked for the page in flight %v after serve A was killed (lease %v)", takeover.Round(time.Millisecond), leaseTTL)
	// The lease expires at most leaseTTL after the kill (A's last renewal
	// came before it); B tries to take it every third of that, and its
	// collector then asks as often: leaseTTL and two thirds, plus 3 s for a
	// busy machine (process start-up, the run's first request).
	if bound := leaseTTL + 2*leaseTTL/3 + 3*time.Second; takeover > bound {
		t.Errorf("takeover took %v, more than %v (the lease, two retry periods and 3 s)", takeover, bound)
	}
	testbin.WaitFor(t, 60*time.Second, "serve B to reach the feed's end", func() bool { return feed.count(feed.pages) > 0 })

	for page := range feed.pages {
		want := 1
		if page == feed.stall {
			want = 2 // the one in flight when A died
		}
		if got := feed.count(page); got != want {
			t.Errorf("page %d was fetched %d times, want %d", page, got, want)
		}
	}
	want := feed.pages * feed.perPage
	var total int
	testbin.WaitFor(t, 30*time.Second, fmt.Sprintf("all %d notices to be searchable", want), func() bool {
		total = noticeTotal(t, serveB.base, acct.ReadKey)
		return total >= want
	})
	if total != want {
		t.Errorf("%d notices stored, want %d (every line of every page once)", total, want)
	}
}

// collectorLastRun is the collector's last_run_at on a serve's /health.
func collectorLastRun(t *testing.T, base string) *string {
	t.Helper()
	res, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var h struct {
		Collector struct {
			LastRunAt *string `json:"last_run_at"`
		} `json:"collector"`
	}
	if err := json.NewDecoder(res.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h.Collector.LastRunAt
}

// noticeTotal is GET /v1/notices' total.
func noticeTotal(t *testing.T, base, key string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/notices?limit=1", nil)
	req.Header.Set("X-API-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var page struct {
		Total int `json:"total"`
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/notices: HTTP %d", res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	return page.Total
}
