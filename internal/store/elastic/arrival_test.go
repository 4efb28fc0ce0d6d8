package elastic

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestTwoIngestersAndAPoller: two ingesters (two stores on one namespace)
// load overlapping notices at once (they take turns with the writer
// lease) while a poller follows the published seq with NoticesAfter. Every
// notice gets one seq, and the poller sees every notice exactly once.
func TestTwoIngestersAndAPoller(t *testing.T) {
	ctx := context.Background()
	esURL := testservers.Elasticsearch(t)
	rdb := testRedis(t)
	ns := testservers.Namespace(t)
	a := openIn(t, esURL, rdb, ns, nil)
	b := openIn(t, esURL, testRedis(t), ns, nil)
	poller := openIn(t, esURL, testRedis(t), ns, nil)

	const batches, size = 6, 40
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
	pub, err := poller.LatestSeq(ctx)
	if err != nil || pub != st.LatestNoticeSeq {
		t.Errorf("published %d (%v), want the latest seq %d", pub, err, st.LatestNoticeSeq)
	}
}

// TestWritersQueueForTheLease: one writer at a time. While writer A's bulk
// request is held (a slow node), writer B waits for the lease and hears
// who holds it; once A is answered, A publishes, then B writes: A's seqs
// come before B's and both batches are published.
func TestWritersQueueForTheLease(t *testing.T) {
	ctx := context.Background()
	esURL := testservers.Elasticsearch(t)
	ns := testservers.Namespace(t)
	rdb := testRedis(t)
	owner := openIn(t, esURL, rdb, ns, nil) // creates the indices; drops the namespace at the end
	held := newHeldBulk(t, esURL, false)
	heard := make(chan string, 1)
	open := func(u, who string, waiting func(string)) *Store {
		s, err := Open(ctx, Config{URL: u, Namespace: ns, Log: publog.New(rdb, ns, publog.Options{Who: who, Waiting: waiting})})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := open(held.url, "writer A", nil)
	b := open(esURL, "writer B", func(who string) {
		select {
		case heard <- who:
		default:
		}
	})
	aDone := make(chan error, 1)
	go func() {
		_, err := a.UpsertNotices(ctx, synthBatch("A", 0, 5))
		aDone <- err
	}()
	<-held.held
	bDone := make(chan error, 1)
	go func() {
		_, err := b.UpsertNotices(ctx, synthBatch("B", 0, 5))
		bDone <- err
	}()
	if who := <-heard; who != "writer A" {
		t.Errorf("writer B heard the lease is held by %q, want writer A", who)
	}
	select {
	case err := <-bDone:
		t.Fatalf("writer B wrote while A held the lease (%v)", err)
	default:
	}
	held.Release()
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	got, err := owner.NoticesAfter(ctx, 0, 100)
	if err != nil || len(got) != 10 {
		t.Fatalf("NoticesAfter(0): %d notices (%v), want 10", len(got), err)
	}
	for i, n := range got {
		want := "A"
		if i >= 5 {
			want = "B"
		}
		if !strings.HasPrefix(n.SourceID, want) || n.Seq != int64(i+1) {
			t.Errorf("notice %d is %s at seq %d, want %s... at %d", i, n.SourceID, n.Seq, want, i+1)
		}
	}
}
