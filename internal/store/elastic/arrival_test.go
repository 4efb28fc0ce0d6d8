package elastic

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/store/arrival"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestTwoIngestersAndAPoller: two ingesters (two stores on one namespace)
// load overlapping notices at once while a poller follows the watermark
// with NoticesAfter. Every notice gets one seq, and the poller sees every
// notice exactly once, none skipped because it committed late.
func TestTwoIngestersAndAPoller(t *testing.T) {
	ctx := context.Background()
	esURL := testservers.Elasticsearch(t)
	rdb := testRedis(t)
	ns := testservers.Namespace(t)
	a := openIn(t, esURL, rdb, ns, nil)
	b := openIn(t, esURL, testRedis(t), ns, nil)
	poller := openIn(t, esURL, testRedis(t), ns, nil)

	const batches, size = 12, 40
	var wg sync.WaitGroup
	for w, s := range []*Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < batches; i++ {
				// Both load the "S" notices (same ids, concurrently) and
				// their own.
				batch := append(synthBatch("S", i*size/2, size/2), synthBatch([]string{"X", "Y"}[w], i*size/2, size/2)...)
				if _, err := s.UpsertNotices(ctx, batch); err != nil {
					t.Errorf("ingester %d: %v", w, err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	seen := map[string]int64{}
	var cursor int64
	poll := func() {
		for {
			ns, err := poller.NoticesAfter(ctx, cursor, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(ns) == 0 {
				return
			}
			for _, n := range ns {
				if prev, ok := seen[n.ID]; ok {
					t.Errorf("notice %s seen twice (seq %d and %d)", n.SourceID, prev, n.Seq)
				}
				if n.Seq <= cursor {
					t.Errorf("seq %d at or below the cursor %d", n.Seq, cursor)
				}
				seen[n.ID] = n.Seq
				cursor = n.Seq
			}
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			poll()
			time.Sleep(5 * time.Millisecond)
		}
	}
	poll()
	want := batches * size / 2 * 3 // S shared, X and Y own
	if len(seen) != want {
		t.Errorf("poller saw %d notices, want %d", len(seen), want)
	}
	st, err := poller.IndexStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Notices != int64(want) {
		t.Errorf("index holds %d notices, want %d (a shared notice stored twice?)", st.Notices, want)
	}
	wm, err := poller.Watermark(ctx)
	if err != nil || wm != st.LatestNoticeSeq {
		t.Errorf("watermark %d (%v), want the latest seq %d", wm, err, st.LatestNoticeSeq)
	}
}

// TestSlowBatchHoldsTheWatermark: a batch whose bulk write takes several
// arrival leases (a slow node) keeps holding the watermark back until it
// is written, while a later batch from another ingester is written and
// cleared. Were its lease to lapse mid-write, the watermark would pass its
// seqs and a poller following it would skip its notices for good. Real
// time: a 2 s lease (renewed every third of it) and bulk requests held 6 s,
// three leases. (A 1 s lease lapsed when a busy machine held the test
// process back for over two thirds of a second.)
func TestSlowBatchHoldsTheWatermark(t *testing.T) {
	esURL := testservers.Elasticsearch(t)
	target, err := url.Parse(esURL)
	if err != nil {
		t.Fatal(err)
	}
	const lease, hold = 2 * time.Second, 6 * time.Second
	proxy := httputil.NewSingleHostReverseProxy(target)
	var answered atomic.Int64 // when the slow node last began answering a bulk request (UnixNano)
	slowNode := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "_bulk") {
			proxy.ServeHTTP(w, r)
			return
		}
		time.Sleep(hold)
		// Stamped before the answer's first byte goes back, so the store
		// cannot have read it earlier. (Stamped after ServeHTTP returned,
		// a busy machine once ran this goroutine 141 ms after the store
		// had read the answer, refreshed and cleared: a false failure.)
		proxy.ServeHTTP(&stampWriter{ResponseWriter: w, at: &answered}, r)
	}))
	t.Cleanup(slowNode.Close)
	ctx := context.Background()
	ns := testservers.Namespace(t)
	rdb := testRedis(t)
	fast := openIn(t, esURL, rdb, ns, nil) // creates the indices; drops the namespace at the end
	open := func(u string) *Store {
		s, err := Open(ctx, Config{URL: u, Namespace: ns, Arrivals: arrival.New(rdb, ns, lease)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	slow, quick := open(slowNode.URL), open(esURL)
	done := make(chan error, 1)
	go func() {
		_, err := slow.UpsertNotices(ctx, synthBatch("SLOW", 0, 5))
		done <- err
	}()
	// Once the slow batch has its seqs (1-5), a quick one gets 6-10 and
	// is written and cleared while the slow one is still being written.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if n, _ := rdb.Get(ctx, ns+":arrival:seq").Int64(); n >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow batch got no seqs within 30 s")
		}
	}
	if _, err := quick.UpsertNotices(ctx, synthBatch("QUICK", 0, 5)); err != nil {
		t.Fatal(err)
	}
	// The watermark may move only once the slow batch's bulk write has
	// been answered (then it is refreshed and cleared); a move seen before
	// that, during the held write, is a lapsed lease. (Timed against the
	// answer rather than UpsertNotices's return, so a busy machine that
	// delays the return does not fail the test.)
	var moved time.Time
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("slow batch: %v", err)
			}
			if at := time.Unix(0, answered.Load()); answered.Load() == 0 || !moved.IsZero() && moved.Before(at) {
				t.Fatalf("the watermark passed the slow batch's seqs %v before its bulk write was answered (answered: %v)",
					at.Sub(moved).Round(time.Millisecond), answered.Load() != 0)
			}
			if wm, _ := fast.Watermark(ctx); wm != 10 {
				t.Errorf("watermark %d once both are written, want 10", wm)
			}
			got, err := fast.NoticesAfter(ctx, 0, 100)
			if err != nil || len(got) != 10 {
				t.Fatalf("NoticesAfter(0): %d notices (%v), want 10", len(got), err)
			}
			return
		case <-time.After(50 * time.Millisecond):
			if wm, _ := fast.Watermark(ctx); wm != 0 && moved.IsZero() {
				moved = time.Now()
			}
		}
	}
}

// stampWriter stores the time into at as the answer's status line is
// written, before any of it reaches the client.
type stampWriter struct {
	http.ResponseWriter
	at      *atomic.Int64
	stamped bool
}

func (w *stampWriter) stamp() {
	if !w.stamped {
		w.stamped = true
		w.at.Store(time.Now().UnixNano())
	}
}

func (w *stampWriter) WriteHeader(code int) {
	w.stamp()
	w.ResponseWriter.WriteHeader(code)
}

func (w *stampWriter) Write(b []byte) (int, error) {
	w.stamp()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets httputil.ReverseProxy flush through to the real writer.
func (w *stampWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
