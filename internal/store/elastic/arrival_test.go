package elastic

import (
	"context"
	"sync"
	"testing"
	"time"

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
