package elastic

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/secretbox"
	"github.com/noticesd/noticesd/internal/store/arrival"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/internal/watch"
)

// matchPoller follows a watch of every notice through the Redis store's
// Matches, since = next_since, as a client polls GET /v1/watches/{id}/matches.
type matchPoller struct {
	rs      *redisstore.Store
	account string
	watch   string
	since   int64
	seen    map[string][]int64
	skew    atomic.Int64 // added to the store's clock (ns)
}

func newMatchPoller(t *testing.T, rdb *redis.Client, ns string, src *Store) *matchPoller {
	t.Helper()
	ctx := context.Background()
	p := &matchPoller{seen: map[string][]int64{}}
	box, err := secretbox.New(make([]byte, 32), nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return time.Now().Add(time.Duration(p.skew.Load())) }
	p.rs, err = redisstore.New(rdb, ns, src, redisstore.Options{Clock: clock, Secrets: box})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := p.rs.CreateAccount(ctx, "Poller", "enterprise")
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Name: "all"}, acc.AccountID, clock()), account.DefaultPlans()["enterprise"])
	if err != nil {
		t.Fatal(err)
	}
	p.account, p.watch = acc.AccountID, w.ID
	return p
}

func (p *matchPoller) poll(t *testing.T) {
	t.Helper()
	for {
		page, err := p.rs.Matches(context.Background(), p.account, p.watch, p.since, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range page.Notices {
			p.seen[n.SourceID] = append(p.seen[n.SourceID], n.Seq)
		}
		p.since = page.NextSince
		if !page.HasMore {
			return
		}
	}
}

// dropRenewals is a go-redis hook that, while on, fails every lease
// renewal (a SET ... XX): the writer is cut off from Redis for renewals,
// so its lease expires in Redis while it keeps writing.
type dropRenewals struct{ on atomic.Bool }

func (h *dropRenewals) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *dropRenewals) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *dropRenewals) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.on.Load() && cmd.Name() == "set" {
			for _, a := range cmd.Args() {
				if s, ok := a.(string); ok && strings.EqualFold(s, "xx") {
					err := errors.New("injected: renewal lost")
					cmd.SetErr(err)
					return err
				}
			}
		}
		return next(ctx, cmd)
	}
}

// heldBulk is a proxy in front of Elasticsearch that holds the first bulk
// request until release is closed: with answer, it passes the request
// through at once (Elasticsearch applies it) and holds its answer;
// without, it holds the request itself. Every other request passes.
type heldBulk struct {
	url     string
	held    chan struct{} // closed once the request is held
	release chan struct{}
	once    sync.Once
}

func newHeldBulk(t *testing.T, esURL string, answer bool) *heldBulk {
	t.Helper()
	target, err := url.Parse(esURL)
	if err != nil {
		t.Fatal(err)
	}
	h := &heldBulk{held: make(chan struct{}), release: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var taken atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "_bulk") || !taken.CompareAndSwap(false, true) {
			proxy.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		if answer {
			proxy.ServeHTTP(rec, r)
		}
		close(h.held)
		<-h.release
		if !answer {
			proxy.ServeHTTP(rec, r)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(func() { h.Release(); srv.Close() })
	h.url = srv.URL
	return h
}

// Release lets the held answer go (once).
func (h *heldBulk) Release() { h.once.Do(func() { close(h.release) }) }

// seqPoller follows the arrivals as a watch poller does: NoticesAfter
// from its cursor, the cursor moved to the last seq read.
type seqPoller struct {
	s      *Store
	cursor int64
	seen   map[string][]int64
}

func (p *seqPoller) poll(t *testing.T) {
	t.Helper()
	for {
		ns, err := p.s.NoticesAfter(context.Background(), p.cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(ns) == 0 {
			return
		}
		for _, n := range ns {
			if n.Seq <= p.cursor {
				t.Errorf("seq %d at or below the cursor %d", n.Seq, p.cursor)
			}
			p.seen[n.SourceID] = append(p.seen[n.SourceID], n.Seq)
			p.cursor = n.Seq
		}
	}
}

// TestLapsedWriterIsFenced: writer A's bulk request (or only its answer,
// Elasticsearch having applied it) is held past A's lease (A cannot renew
// it: its renewals are lost); meanwhile writer B ingests, and the
// watermark passes A's seqs. A poller that read then holds a cursor above
// them, and a second poller starts from 0 once whatever A wrote is
// searchable (a refresh forced while A is held). When A is released it
// must not leave its notices visible under seqs the watermark passed:
// each poller following its cursor sees every notice exactly once, at
// the seq A returns.
func TestLapsedWriterIsFenced(t *testing.T) {
	for _, answer := range []bool{false, true} {
		name := "request held"
		if answer {
			name = "answer held"
		}
		t.Run(name, func(t *testing.T) { testLapsedWriter(t, answer) })
	}
}

func testLapsedWriter(t *testing.T, answer bool) {
	ctx := context.Background()
	esURL := testservers.Elasticsearch(t)
	ns := testservers.Namespace(t)
	const lease = 1500 * time.Millisecond
	rdb := testRedis(t)
	owner := openIn(t, esURL, rdb, ns, nil) // creates the indices; drops the namespace at the end
	held := newHeldBulk(t, esURL, answer)
	hook := &dropRenewals{}
	rdbA := testRedis(t)
	rdbA.AddHook(hook)
	open := func(u string, c *redis.Client) *Store {
		s, err := Open(ctx, Config{URL: u, Namespace: ns, Arrivals: arrival.New(c, ns, lease)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := open(held.url, rdbA), open(esURL, rdb)
	// A watch of every notice, read as a client polls its matches
	// (matching the arrivals on read, the late-notice check included).
	watcher := newMatchPoller(t, rdb, ns, owner)

	hook.on.Store(true)
	done := make(chan error, 1)
	var written []notice.Notice
	go func() {
		var err error
		written, _, err = a.UpsertStoredTurn(ctx, synthBatch("LATE", 0, 5), nil)
		done <- err
	}()
	select {
	case <-held.held:
	case err := <-done:
		t.Fatalf("writer A returned before its bulk request was held: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("writer A's bulk request never reached Elasticsearch")
	}
	// B's batch (seqs 6-10) is written and cleared; once A's lease has
	// expired the watermark passes A's seqs 1-5 and stops at 10.
	if _, err := b.UpsertNotices(ctx, synthBatch("EARLY", 0, 5)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		wm, err := b.Watermark(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if wm == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("watermark %d 30 s after A's lease should have expired, want 10", wm)
		}
	}
	early := &seqPoller{s: owner, seen: map[string][]int64{}}
	early.poll(t)
	watcher.poll(t)
	// A's documents are in the index: make them searchable now, as the
	// index's own periodic refresh would.
	if err := owner.refresh(ctx, owner.Alias("notices")); err != nil {
		t.Fatal(err)
	}
	late := &seqPoller{s: owner, seen: map[string][]int64{}}
	late.poll(t)
	early.poll(t)
	watcher.skew.Add(int64(time.Minute)) // the late-notice check is due
	watcher.poll(t)

	hook.on.Store(false)
	held.Release()
	if err := <-done; err != nil {
		t.Fatalf("writer A: %v", err)
	}
	early.poll(t)
	late.poll(t)
	watcher.skew.Add(int64(time.Minute)) // the late-notice check is due
	watcher.poll(t)
	watcher.poll(t)
	for name, seen := range map[string]map[string][]int64{
		"poller that read before A's documents were searchable": early.seen,
		"poller from 0 after they were":                         late.seen,
		"watch matches poller":                                  watcher.seen,
	} {
		if len(seen) != 10 {
			t.Errorf("%s saw %d notices, want 10: %v", name, len(seen), seen)
		}
		for id, seqs := range seen {
			if len(seqs) != 1 {
				t.Errorf("%s saw %s %d times (seqs %v), want once", name, id, len(seqs), seqs)
			}
		}
	}
	// What A returns is what is stored: the seqs its notices are read at.
	for _, n := range written {
		if got := early.seen[n.SourceID]; len(got) != 1 || got[0] != n.Seq {
			t.Errorf("A returned %s at seq %d; the poller read it at %v", n.SourceID, n.Seq, got)
		}
	}
	if wm, err := owner.Watermark(ctx); err != nil || wm < 15 {
		t.Errorf("watermark %d (%v), want at least 15 (A's notices above B's)", wm, err)
	}
}

// TestArrivalKeysAfterIngest: once an ingest is over, Redis holds a few
// arrival keys for the namespace, not one per notice: a batch's seqs are
// remembered per notice id only while it is in flight (so two ingesters
// writing one new notice agree), and forgotten when it is cleared, its
// notices being in Elasticsearch, where writers look first.
func TestArrivalKeysAfterIngest(t *testing.T) {
	ctx := context.Background()
	esURL := testservers.Elasticsearch(t)
	rdb := testRedis(t)
	ns := testservers.Namespace(t)
	s := openIn(t, esURL, rdb, ns, nil)
	const batches, size = 3, 2500
	for i := range batches {
		if _, err := s.UpsertNotices(ctx, synthBatch("K", i*size, size)); err != nil {
			t.Fatal(err)
		}
	}
	// Loaded again: every notice is known, nothing new is remembered.
	if _, err := s.UpsertNotices(ctx, synthBatch("K", 0, size)); err != nil {
		t.Fatal(err)
	}
	var keys []string
	iter := rdb.Scan(ctx, 0, ns+":arrival:*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	var bytes int64
	for _, k := range keys {
		n, err := rdb.MemoryUsage(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		bytes += n
	}
	t.Logf("%d arrival keys (%d bytes by MEMORY USAGE) after loading %d notices: %v", len(keys), bytes, batches*size, keys[:min(len(keys), 6)])
	// seq, watermark, cleared, dv (and revoked, inflight when used).
	if len(keys) > 6 {
		shown := keys[:min(len(keys), 5)]
		t.Errorf("%d arrival keys after loading %d notices, want at most 6: %v ...", len(keys), batches*size, shown)
	}
	if wm, err := s.Watermark(ctx); err != nil || wm != batches*size {
		t.Errorf("watermark %d (%v), want %d", wm, err, batches*size)
	}
}

// TestResequenceMovesAbandonedNotices: a writer whose bulk request
// Elasticsearch applied but whose answer never came (a hung node: the
// request timed out) abandons its seqs, and the notices it wrote stay out
// of the readers' sight under them; Resequence (the worker's sweep) gives
// them new seqs, and a poller that was already past the old ones sees
// each exactly once.
func TestResequenceMovesAbandonedNotices(t *testing.T) {
	ctx := context.Background()
	esURL := testservers.Elasticsearch(t)
	ns := testservers.Namespace(t)
	rdb := testRedis(t)
	owner := openIn(t, esURL, rdb, ns, nil)
	held := newHeldBulk(t, esURL, true)
	a, err := Open(ctx, Config{URL: held.url, Namespace: ns, Arrivals: arrival.New(rdb, ns, 0), BulkTimeout: 500 * time.Millisecond, BulkWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.UpsertNotices(ctx, synthBatch("LOST", 0, 5)); err == nil {
		t.Fatal("writer A: no error with its bulk answer held past the bulk timeout")
	}
	if _, err := owner.UpsertNotices(ctx, synthBatch("AFTER", 0, 5)); err != nil {
		t.Fatal(err)
	}
	p := &seqPoller{s: owner, seen: map[string][]int64{}}
	p.poll(t)
	if len(p.seen) != 5 {
		t.Errorf("poller saw %d notices before the sweep, want the 5 written after: %v", len(p.seen), p.seen)
	}
	moved, err := owner.Resequence(ctx)
	if err != nil || moved != 5 {
		t.Fatalf("Resequence moved %d (%v), want 5", moved, err)
	}
	if again, err := owner.Resequence(ctx); err != nil || again != 0 {
		t.Errorf("a second Resequence moved %d (%v), want 0", again, err)
	}
	p.poll(t)
	if len(p.seen) != 10 {
		t.Errorf("poller saw %d notices after the sweep, want 10: %v", len(p.seen), p.seen)
	}
	for id, seqs := range p.seen {
		if len(seqs) != 1 {
			t.Errorf("%s seen %d times (%v), want once", id, len(seqs), seqs)
		}
	}
}
