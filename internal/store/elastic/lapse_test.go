package elastic

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/secretbox"
	"github.com/noticesd/noticesd/internal/store/publog"
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

func newMatchPoller(t *testing.T, rdb redis.UniversalClient, ns string, src *Store) *matchPoller {
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

// storedAs reads the notices of batch as s stores them.
func storedAs(t *testing.T, s *Store, batch []notice.Notice) []notice.Notice {
	t.Helper()
	out := make([]notice.Notice, len(batch))
	for i, n := range batch {
		var err error
		if out[i], err = s.Notice(context.Background(), notice.IDFor(n.SourceID)); err != nil {
			t.Fatalf("read %s as stored: %v", n.SourceID, err)
		}
	}
	return out
}

// TestStaleWriterIsRefused: writer A's bulk request (or only its answer,
// Elasticsearch having applied it) is held past A's writer lease, which
// lapses (A is cut off from Redis: it does not renew). Meanwhile writer B
// takes the lease over: its takeover publishes what A left searchable (the
// applied request) or skips A's seqs (the held one), and B writes its own
// batch. When A is released its publish is refused (its epoch is stale),
// and it writes its batch again under a new lease: the notices the
// takeover published keep their seqs, the others get new ones above B's.
// A poller of NoticesAfter and a watch's matches poller following
// next_since each see every notice exactly once, at the seq it is stored at.
func TestStaleWriterIsRefused(t *testing.T) {
	for _, answer := range []bool{false, true} {
		name := "request held"
		if answer {
			name = "answer held"
		}
		t.Run(name, func(t *testing.T) { testStaleWriter(t, answer) })
	}
}

func testStaleWriter(t *testing.T, answer bool) {
	ctx := context.Background()
	esURL := testservers.Elasticsearch(t)
	ns := testservers.Namespace(t)
	const lease = 1500 * time.Millisecond
	rdb := testRedis(t)
	owner := openIn(t, esURL, rdb, ns, nil) // creates the indices; drops the namespace at the end
	held := newHeldBulk(t, esURL, answer)
	open := func(u string, o publog.Options) *Store {
		o.LeaseTTL = lease
		// One bulk worker: the batch is one bulk request, held whole.
		s, err := Open(ctx, Config{URL: u, Namespace: ns, Log: publog.New(rdb, ns, o)})
		if err != nil {
			t.Fatal(err)
		}
		s.bulkWorkers = 1
		return s
	}
	// A never renews: its lease lapses while its bulk request is held.
	a, b := open(held.url, publog.Options{RenewEvery: time.Hour}), open(esURL, publog.Options{})
	// A watch of every notice, read as a client polls its matches.
	watcher := newMatchPoller(t, rdb, ns, owner)

	done := make(chan error, 1)
	go func() {
		_, err := a.UpsertNotices(ctx, synthBatch("LATE", 0, 5))
		done <- err
	}()
	select {
	case <-held.held:
	case err := <-done:
		t.Fatalf("writer A returned before its bulk request was held: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("writer A's bulk request never reached Elasticsearch")
	}
	// B waits out A's lease, takes over, and writes seqs 6-10.
	if _, err := b.UpsertNotices(ctx, synthBatch("EARLY", 0, 5)); err != nil {
		t.Fatal(err)
	}
	if pub, err := b.LatestSeq(ctx); err != nil || pub != 10 {
		t.Fatalf("published %d (%v) after B's batch, want 10", pub, err)
	}
	early := &seqPoller{s: owner, seen: map[string][]int64{}}
	early.poll(t)
	watcher.poll(t)
	wantEarly := 5
	if answer {
		wantEarly = 10 // the takeover published A's applied batch
	}
	if len(early.seen) != wantEarly {
		t.Errorf("poller saw %d notices before A was released, want %d: %v", len(early.seen), wantEarly, early.seen)
	}

	held.Release()
	if err := <-done; err != nil {
		t.Fatalf("writer A: %v", err)
	}
	early.poll(t)
	watcher.poll(t)
	for name, seen := range map[string]map[string][]int64{
		"NoticesAfter poller":  early.seen,
		"watch matches poller": watcher.seen,
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
	// A's notices as stored are at the seqs the poller read them at.
	for _, n := range storedAs(t, owner, synthBatch("LATE", 0, 5)) {
		if got := early.seen[n.SourceID]; len(got) != 1 || got[0] != n.Seq {
			t.Errorf("A's %s is stored at seq %d; the poller read it at %v", n.SourceID, n.Seq, got)
		}
		if !answer && n.Seq <= 10 {
			t.Errorf("A's %s kept seq %d, which the takeover skipped; want a new seq above B's", n.SourceID, n.Seq)
		}
	}
	if pub, err := owner.LatestSeq(ctx); err != nil || (!answer && pub != 15) || (answer && pub != 10) {
		t.Errorf("published %d (%v) at the end", pub, err)
	}
}

// TestWriterKeysAfterIngest: once an ingest is over, Redis holds the
// writer's few keys for the namespace, not one per notice (the publish log
// aside, trimmed to its retention): the lease is given up and nothing is
// left to take over.
func TestWriterKeysAfterIngest(t *testing.T) {
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
	// Loaded again: every notice is known.
	if _, err := s.UpsertNotices(ctx, synthBatch("K", 0, size)); err != nil {
		t.Fatal(err)
	}
	var keys []string
	iter := rdb.Scan(ctx, 0, "{"+ns+"}:*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	k := s.cfg.Log.Keys()
	want := []string{k.Version, k.Epoch, k.Log, k.Published, k.Seq}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("writer keys after the ingest: %v, want %v (no lease, nothing dirty)", keys, want)
	}
	if pub, err := s.LatestSeq(ctx); err != nil || pub != batches*size {
		t.Errorf("published %d (%v), want %d", pub, err, batches*size)
	}
	if n, err := rdb.XLen(ctx, k.Log).Result(); err != nil || n != (batches+1)*size {
		t.Errorf("publish log holds %d entries (%v), want %d (every publish, amendments included)", n, err, (batches+1)*size)
	}
}

// stallAt stops the first batch stop picks between its refresh and its
// publish (stopped closes) until goOn closes.
func stallAt(t *testing.T, stop func(*Store, []notice.Notice) bool) (stopped, goOn chan struct{}) {
	stopped, goOn = make(chan struct{}), make(chan struct{})
	var once sync.Once
	writeHook = func(s *Store, ns []notice.Notice) error {
		if stop(s, ns) {
			once.Do(func() { close(stopped); <-goOn })
		}
		return nil
	}
	t.Cleanup(func() { writeHook = nil })
	return stopped, goOn
}

// logKinds returns the kinds of the publish log's entries of each
// notice, by notice id, in log order.
func logKinds(t *testing.T, s *Store) map[string][]publog.Kind {
	t.Helper()
	es, _, err := s.cfg.Log.Read(context.Background(), "0", 1000)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string][]publog.Kind{}
	for _, e := range es {
		var n notice.Notice
		if err := publog.DecodeSummaryInto(e.Summary, &n, new([3]string)); err != nil {
			t.Fatal(err)
		}
		kinds[n.ID] = append(kinds[n.ID], e.Kind)
	}
	return kinds
}

// TestTakeoverPublishesWhatAStalledWriterLeft: writer A is stopped between
// its refresh and its publish (its notices searchable, not published) and
// its lease lapses. Writer B's takeover publishes them, before its own
// batch, as new notices: a poller sees all of them once. When A goes on,
// its publish is refused and its try again finds its notices published:
// they keep their seqs.
func TestTakeoverPublishesWhatAStalledWriterLeft(t *testing.T) {
	ctx := context.Background()
	esURL := testservers.Elasticsearch(t)
	ns := testservers.Namespace(t)
	rdb := testRedis(t)
	owner := openIn(t, esURL, rdb, ns, nil)
	a, err := Open(ctx, Config{URL: esURL, Namespace: ns, Log: publog.New(rdb, ns, publog.Options{LeaseTTL: time.Second, RenewEvery: time.Hour})})
	if err != nil {
		t.Fatal(err)
	}
	stopped, goOn := stallAt(t, func(s *Store, _ []notice.Notice) bool { return s == a })
	done := make(chan error, 1)
	go func() {
		_, err := a.UpsertNotices(ctx, synthBatch("STALLED", 0, 5))
		done <- err
	}()
	select { // writer A ends before its hook only when a call failed: say so, not hang
	case <-stopped:
	case err := <-done:
		t.Fatalf("writer A returned before its Elasticsearch write: %v", err)
	}
	p := &seqPoller{s: owner, seen: map[string][]int64{}}
	p.poll(t)
	if len(p.seen) != 0 {
		t.Errorf("poller saw %d unpublished notices: %v", len(p.seen), p.seen)
	}
	if _, err := owner.UpsertNotices(ctx, synthBatch("AFTER", 0, 5)); err != nil {
		t.Fatal(err)
	}
	// Only the takeover can have published A's notices: A is stopped.
	kinds := logKinds(t, owner)
	for _, n := range synthBatch("STALLED", 0, 5) {
		if k := kinds[notice.IDFor(n.SourceID)]; !slices.Equal(k, []publog.Kind{publog.KindNew}) {
			t.Errorf("A's %s is in the publish log as %q, want new once (published by the takeover)", n.SourceID, k)
		}
	}
	p.poll(t)
	close(goOn)
	if err := <-done; err != nil {
		t.Fatalf("writer A: %v", err)
	}
	p.poll(t)
	if len(p.seen) != 10 {
		t.Errorf("poller saw %d notices, want 10: %v", len(p.seen), p.seen)
	}
	for id, seqs := range p.seen {
		if len(seqs) != 1 {
			t.Errorf("%s seen %d times (%v), want once", id, len(seqs), seqs)
		}
	}
	for _, n := range storedAs(t, owner, synthBatch("STALLED", 0, 5)) {
		if n.Seq > 5 {
			t.Errorf("A's %s moved to seq %d; the takeover published it at its first seq", n.SourceID, n.Seq)
		}
	}
}

// TestTakeoverAfterAPipelinedWriterDied: writer A has two batches in flight
// under one lease (StartNotices): the first, new notices, is published
// while the second, amendments of published notices, is stopped between
// its refresh and its publish, and A's lease lapses. The first batch's
// publish must leave dirty set for the second: writer B's takeover then
// publishes the amendments (no new seq tells of them).
func TestTakeoverAfterAPipelinedWriterDied(t *testing.T) {
	ctx := context.Background()
	esURL := testservers.Elasticsearch(t)
	ns := testservers.Namespace(t)
	rdb := testRedis(t)
	owner := openIn(t, esURL, rdb, ns, nil)
	if _, err := owner.UpsertNotices(ctx, synthBatch("AM", 0, 5)); err != nil {
		t.Fatal(err)
	}
	a, err := Open(ctx, Config{URL: esURL, Namespace: ns, Log: publog.New(rdb, ns, publog.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	amended := synthBatch("AM", 0, 5)
	for i := range amended {
		amended[i].Text += " (amended)"
	}
	stopped, goOn := stallAt(t, func(s *Store, ns []notice.Notice) bool {
		return s == a && strings.HasSuffix(ns[0].Text, "(amended)")
	})
	first := a.StartNotices(ctx, synthBatch("NEW", 0, 5))
	second := a.StartNotices(ctx, amended)
	if _, err := first(); err != nil {
		t.Fatalf("A's first batch: %v", err)
	}
	<-stopped
	// A's lease lapses (as if A died), and its renewals find it gone.
	if err := rdb.Del(ctx, a.cfg.Log.Keys().Writer).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.UpsertNotices(ctx, synthBatch("AFTER", 0, 5)); err != nil {
		t.Fatal(err)
	}
	// Only the takeover can have published A's amendments: A is stopped.
	kinds := logKinds(t, owner)
	for _, n := range amended {
		if k := kinds[notice.IDFor(n.SourceID)]; !slices.Equal(k, []publog.Kind{publog.KindNew, publog.KindAmended}) {
			t.Errorf("%s is in the publish log as %q, want new then amended (A's amendment, published by the takeover)", n.SourceID, k)
		}
	}
	close(goOn)
	if _, err := second(); err != nil {
		t.Fatalf("A's second batch: %v", err)
	}
}

// TestBatchAfterAFailedOneIsPublished: of two batches in flight under one
// lease, the first fails after its write (between its refresh and its
// publish) once the second has written. The second must not publish over
// the first's notices (Published would pass their seqs, which no takeover
// would then look at): it writes again under a new lease, whose takeover
// publishes the first's notices. The publish log has all ten, new.
func TestBatchAfterAFailedOneIsPublished(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	secondWrote := make(chan struct{})
	var once sync.Once
	writeHook = func(_ *Store, ns []notice.Notice) error {
		if strings.HasPrefix(ns[0].SourceID, "FAIL") {
			<-secondWrote
			return errors.New("the first batch failed")
		}
		once.Do(func() { close(secondWrote) })
		return nil
	}
	t.Cleanup(func() { writeHook = nil })
	first := s.StartNotices(ctx, synthBatch("FAIL", 0, 5))
	second := s.StartNotices(ctx, synthBatch("NEXT", 0, 5))
	if _, err := first(); err == nil {
		t.Fatal("the first batch succeeded; the hook should have failed it")
	}
	if _, err := second(); err != nil {
		t.Fatalf("the second batch: %v", err)
	}
	// The publish log (what matching follows) has each notice as new.
	kinds := logKinds(t, s)
	for _, n := range append(synthBatch("FAIL", 0, 5), synthBatch("NEXT", 0, 5)...) {
		if k := kinds[notice.IDFor(n.SourceID)]; len(k) == 0 || k[0] != publog.KindNew {
			t.Errorf("%s first published as %q, want new (%d notices in the log)", n.SourceID, k, len(kinds))
		}
	}
}
