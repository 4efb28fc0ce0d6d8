package arrival

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/testservers"
)

func open(t *testing.T) (*Arrivals, *redis.Client) {
	t.Helper()
	opt, err := redis.ParseURL(testservers.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	ns := testservers.Namespace(t)
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := rdb.Keys(ctx, ns+":*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		_ = rdb.Close()
	})
	return New(rdb, ns, 0), rdb
}

func TestAllocateAndWatermark(t *testing.T) {
	ctx := context.Background()
	a, rdb := open(t)
	wm := func() int64 {
		t.Helper()
		w, err := a.Watermark(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	b1, err := a.allocNow(ctx, []string{"n1", "n2"}, "t1", false)
	if err != nil {
		t.Fatal(err)
	}
	if b1.Seqs[0] != 1 || b1.Seqs[1] != 2 || b1.Collected[0] != "t1" {
		t.Fatalf("first batch %+v", b1)
	}
	b2, err := a.allocNow(ctx, []string{"n3", "n2"}, "t2", false)
	if err != nil {
		t.Fatal(err)
	}
	if b2.Seqs[0] != 3 || b2.Seqs[1] != 2 || b2.Collected[1] != "t1" {
		t.Errorf("a notice in flight elsewhere must keep its seq and collected_at: %+v", b2)
	}
	if got := wm(); got != 0 {
		t.Errorf("watermark %d with 1..3 in flight, want 0", got)
	}
	if _, err := a.Clear(ctx, b2, nil); err != nil {
		t.Fatal(err)
	}
	if got := wm(); got != 0 {
		t.Errorf("watermark %d with 1 and 2 still in flight in batch 1, want 0", got)
	}
	if _, err := a.Clear(ctx, b1, nil); err != nil {
		t.Fatal(err)
	}
	if got := wm(); got != 3 {
		t.Errorf("watermark %d with nothing in flight, want 3", got)
	}
	// A crashed ingester: its lease expires (deleted here, as Redis would
	// after DefaultLease) and its seq stops holding the watermark back.
	b3, err := a.allocNow(ctx, []string{"n4"}, "t3", false)
	if err != nil {
		t.Fatal(err)
	}
	b4, err := a.allocNow(ctx, []string{"n5"}, "t3", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Clear(ctx, b4, nil); err != nil {
		t.Fatal(err)
	}
	if got := wm(); got != 3 {
		t.Errorf("watermark %d passed in-flight seq 4, want 3", got)
	}
	rdb.Del(ctx, a.prefix+"lease:"+b3.Token)
	if got := wm(); got != 5 {
		t.Errorf("watermark %d after the lease of seq 4 expired, want 5", got)
	}
	// The crashed notice retried later is settled (the watermark passed
	// it); not finding it stored, the writer asks again with fresh and gets
	// a new seq, above the watermark, so it is still announced.
	b5, err := a.allocNow(ctx, []string{"n4"}, "t4", false)
	if err != nil {
		t.Fatal(err)
	}
	if !b5.Settled[0] || b5.Seqs[0] != 4 {
		t.Errorf("retry of a passed seq: %+v, want seq 4 settled", b5)
	}
	b5, err = a.allocNow(ctx, []string{"n4"}, "t4", true)
	if err != nil {
		t.Fatal(err)
	}
	if b5.Seqs[0] != 6 {
		t.Errorf("retried notice got seq %d, want 6 (above the watermark)", b5.Seqs[0])
	}
	if got := wm(); got != 5 {
		t.Errorf("watermark %d, want 5 while 6 is in flight", got)
	}
}

func TestAllocateConcurrent(t *testing.T) {
	ctx := context.Background()
	a, _ := open(t)
	const workers, per = 8, 200
	var mu sync.Mutex
	// stored stands for the notice store: a writer records its notices
	// there before Clear, as the real one writes and refreshes first.
	stored := map[string]int64{}
	seqOf := map[string]int64{}
	seen := map[int64]string{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i += 20 {
				ids := make([]string, 20)
				for j := range ids {
					// Half the ids are shared by every worker.
					if j%2 == 0 {
						ids[j] = "shared-" + itoa(i+j)
					} else {
						ids[j] = "w" + itoa(w) + "-" + itoa(i+j)
					}
				}
				// As the writer does: the mark, then the lookup, then the
				// allocation; stale ids are looked up and allocated again.
				var batches []Batch
				for len(ids) > 0 {
					mark, err := a.Mark(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					var missing []string
					for _, id := range ids {
						if _, ok := stored[id]; !ok {
							missing = append(missing, id)
						}
					}
					mu.Unlock()
					ids = missing
					b, err := a.Allocate(ctx, ids, "t", false, mark)
					if err != nil {
						t.Error(err)
						return
					}
					batches = append(batches, b)
					mu.Lock()
					var stale []string
					for j, id := range ids {
						if b.Stale[j] {
							stale = append(stale, id)
							continue
						}
						if b.Settled[j] {
							if stored[id] != b.Seqs[j] {
								t.Errorf("%s settled at %d but stored with %d", id, b.Seqs[j], stored[id])
							}
							continue
						}
						if s, ok := seqOf[id]; ok && s != b.Seqs[j] {
							t.Errorf("%s got seqs %d and %d", id, s, b.Seqs[j])
						}
						if o, ok := seen[b.Seqs[j]]; ok && o != id {
							t.Errorf("seq %d given to %s and %s", b.Seqs[j], o, id)
						}
						seqOf[id], seen[b.Seqs[j]] = b.Seqs[j], id
					}
					for j, id := range ids {
						if !b.Settled[j] && !b.Stale[j] {
							stored[id] = b.Seqs[j]
						}
					}
					mu.Unlock()
					ids = stale
				}
				for _, b := range batches {
					if lapsed, err := a.Clear(ctx, b, nil); err != nil || len(lapsed) > 0 {
						t.Errorf("clear: %d lapsed (%v)", len(lapsed), err)
					}
				}
			}
		}()
	}
	wg.Wait()
	want := workers*per/2 + per/2
	if len(seqOf) != want {
		t.Errorf("%d ids got seqs, want %d", len(seqOf), want)
	}
	if w, _ := a.Watermark(ctx); w != int64(want) {
		t.Errorf("watermark %d after all cleared, want %d", w, want)
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{digits[i%10]}, b...)
	}
	return string(b)
}

// TestAllocateLargeBatch: a batch larger than one MGET chunk keeps the
// seqs of ids handed out before, gives the new ones consecutive seqs in
// order, and holds the watermark below its lowest seq until cleared.
func TestAllocateLargeBatch(t *testing.T) {
	ctx := context.Background()
	a, _ := open(t)
	first, err := a.allocNow(ctx, []string{"x0", "x1"}, "t1", false)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 1200)
	for i := range ids {
		ids[i] = "n" + strconv.Itoa(i)
	}
	ids[700] = "x1" // in flight in the first batch: keeps seq 2
	b, err := a.allocNow(ctx, ids, "t2", false)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(3)
	for i, s := range b.Seqs {
		switch {
		case i == 700:
			if s != 2 || b.Collected[i] != "t1" {
				t.Errorf("x1 got seq %d collected %q, want 2 t1", s, b.Collected[i])
			}
		case s != want || b.Collected[i] != "t2" || b.Settled[i]:
			t.Fatalf("id %d got seq %d collected %q settled %v, want %d t2 false", i, s, b.Collected[i], b.Settled[i], want)
		default:
			want++
		}
	}
	if _, err := a.Clear(ctx, first, nil); err != nil {
		t.Fatal(err)
	}
	if wm, err := a.Watermark(ctx); err != nil || wm != 1 {
		t.Errorf("watermark %d (%v) with seq 2 still in flight in the large batch, want 1", wm, err)
	}
	if _, err := a.Clear(ctx, b, nil); err != nil {
		t.Fatal(err)
	}
	if wm, err := a.Watermark(ctx); err != nil || wm != want-1 {
		t.Errorf("watermark %d (%v) after every batch cleared, want %d", wm, err, want-1)
	}
}

// TestAllocateInChunks: a batch larger than one script call's chunk gets
// its seqs in id order, each chunk in flight under its own lowest seq, and
// the whole batch holds the watermark until Clear; a batch allocated after
// it and cleared first does not move the watermark past it.
func TestAllocateInChunks(t *testing.T) {
	ctx := context.Background()
	a, rdb := open(t)
	n := 2*allocateChunk + allocateChunk/2
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "big" + strconv.Itoa(i)
	}
	big, err := a.allocNow(ctx, ids, "t1", false)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range big.Seqs {
		if s != int64(i+1) || big.Settled[i] || big.Collected[i] != "t1" {
			t.Fatalf("id %d: seq %d settled %v collected %q, want seq %d, not settled, t1", i, s, big.Settled[i], big.Collected[i], i+1)
		}
	}
	if c := rdb.ZCard(ctx, a.inflightKey()).Val(); c != 3 {
		t.Errorf("in flight: %d entries, want 3 (one per chunk)", c)
	}
	small, err := a.allocNow(ctx, []string{"after"}, "t2", false)
	if err != nil {
		t.Fatal(err)
	}
	if small.Seqs[0] != int64(n+1) {
		t.Errorf("next seq %d, want %d", small.Seqs[0], n+1)
	}
	if _, err := a.Clear(ctx, small, nil); err != nil {
		t.Fatal(err)
	}
	if w, _ := a.Watermark(ctx); w != 0 {
		t.Errorf("watermark %d with the big batch in flight, want 0", w)
	}
	if _, err := a.Clear(ctx, big, nil); err != nil {
		t.Fatal(err)
	}
	if w, _ := a.Watermark(ctx); w != int64(n+1) {
		t.Errorf("watermark %d after both cleared, want %d", w, n+1)
	}
	if c := rdb.ZCard(ctx, a.inflightKey()).Val(); c != 0 {
		t.Errorf("in flight after Clear: %d entries, want 0", c)
	}
}

// TestHoldKeepsASlowBatchInFlight: a batch whose writer is still working
// after several leases keeps the watermark below its seqs while it is
// held, and stops holding it one lease after the hold ends (as a crashed
// writer's would), without Clear. Real time, with a 600 ms lease.
func TestHoldKeepsASlowBatchInFlight(t *testing.T) {
	ctx := context.Background()
	a, rdb := open(t)
	const lease = 600 * time.Millisecond
	a = New(rdb, a.prefix[:len(a.prefix)-len(":arrival:")], lease)
	slow, err := a.allocNow(ctx, []string{"slow"}, "t1", false)
	if err != nil {
		t.Fatal(err)
	}
	quick, err := a.allocNow(ctx, []string{"quick"}, "t1", false)
	if err != nil {
		t.Fatal(err)
	}
	stop := a.Hold(slow)
	if _, err := a.Clear(ctx, quick, nil); err != nil {
		t.Fatal(err)
	}
	// Four leases pass while the slow batch is held.
	for range 4 {
		time.Sleep(lease)
		if w, err := a.Watermark(ctx); err != nil || w != 0 {
			t.Fatalf("watermark %d (%v) while the slow batch is held, want 0", w, err)
		}
	}
	stop()
	stop() // twice is harmless
	deadline := time.Now().Add(3 * time.Second)
	for {
		w, err := a.Watermark(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if w == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("watermark %d three seconds after the hold ended, want 2 (the lease lapsed)", w)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// failNth is a go-redis hook that fails the nth EVALSHA or EVAL it sees
// (counting from 1): before sending it, or, with ran, after Redis ran it
// (a reply lost to a timeout).
type failNth struct {
	n, seen int
	ran     bool
}

func (h *failNth) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *failNth) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *failNth) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "evalsha" && name != "eval" {
			return next(ctx, cmd)
		}
		h.seen++
		if h.seen != h.n {
			return next(ctx, cmd)
		}
		if h.ran {
			_ = next(ctx, cmd)
		}
		err := errors.New("injected: connection reset")
		cmd.SetErr(err)
		return err
	}
}

// TestFailedAllocationReleasesItsChunks: an allocation that fails after
// some of its chunks were taken (Redis dropped the connection on the
// second chunk, before or after running it) ends its lease at once, so
// the watermark does not wait a whole lease (5 minutes here) for seqs no
// notice will carry; the same ids allocated again get new seqs and hold
// the watermark as usual.
func TestFailedAllocationReleasesItsChunks(t *testing.T) {
	for _, ran := range []bool{false, true} {
		t.Run(fmt.Sprintf("script ran %v", ran), func(t *testing.T) {
			ctx := context.Background()
			a, rdb := open(t)
			if a.lease != DefaultLease {
				t.Fatalf("lease %v, want the default", a.lease)
			}
			ids := make([]string, 3*allocateChunk)
			for i := range ids {
				ids[i] = "f" + strconv.Itoa(i)
			}
			before, err := a.allocNow(ctx, []string{"before"}, "t0", false)
			if err != nil {
				t.Fatal(err)
			}
			hook := &failNth{n: 2, ran: ran}
			rdb.AddHook(hook)
			_, err = a.allocNow(ctx, ids, "t1", false)
			if e, ok := errs.As(err); !ok || e.Code != errs.BackendUnavailable {
				t.Fatalf("allocate with the second chunk failing: %v, want %s", err, errs.BackendUnavailable)
			}
			hook.n = 0
			// "before" (seq 1) was never cleared: it holds the watermark.
			if w, _ := a.Watermark(ctx); w != 0 {
				t.Fatalf("watermark %d, want 0 while seq 1 is in flight", w)
			}
			if _, err := a.Clear(ctx, before, nil); err != nil {
				t.Fatal(err)
			}
			taken := int64(allocateChunk)
			if ran {
				taken = 2 * allocateChunk
			}
			if w, _ := a.Watermark(ctx); w != 1+taken {
				t.Errorf("watermark %d after the failed allocation, want %d: its chunks still hold it", w, 1+taken)
			}
			if c := rdb.ZCard(ctx, a.inflightKey()).Val(); c != 0 {
				t.Errorf("in flight: %d entries, want 0", c)
			}
			again, err := a.allocNow(ctx, ids, "t2", false)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ids {
				if settled := int64(i) < taken; again.Settled[i] != settled {
					t.Fatalf("id %d settled %v, want %v (its first seq is behind the watermark)", i, again.Settled[i], settled)
				}
			}
			fresh, err := a.allocNow(ctx, ids[:taken], "t2", true)
			if err != nil {
				t.Fatal(err)
			}
			if fresh.Seqs[0] <= 1+taken {
				t.Errorf("fresh seq %d, want above the watermark %d", fresh.Seqs[0], 1+taken)
			}
			if w, _ := a.Watermark(ctx); w != 1+taken {
				t.Errorf("watermark %d with the new allocations in flight, want %d", w, 1+taken)
			}
		})
	}
}

// allocNow is Allocate with the mark read just before, as a writer that
// has just looked the ids up does.
func (a *Arrivals) allocNow(ctx context.Context, ids []string, collected string, fresh bool) (Batch, error) {
	m, err := a.Mark(ctx)
	if err != nil {
		return Batch{}, err
	}
	return a.Allocate(ctx, ids, collected, fresh, m)
}

// TestClearFencesLapsedSeqs: Clear commits a chunk only while the
// watermark has not passed it. A batch whose lease expired (deleted here,
// as Redis would) and whose seqs the watermark then passed gets them back
// as lapsed, and they are revoked (adjacent chunks as one range); a batch
// whose lease expired but that the watermark has not passed yet still
// commits; a seq a batch reused from a lapsed one comes back lapsed too.
func TestClearFencesLapsedSeqs(t *testing.T) {
	ctx := context.Background()
	a, rdb := open(t)
	ids := make([]string, allocateChunk+2)
	for i := range ids {
		ids[i] = "l" + strconv.Itoa(i)
	}
	lapsing, err := a.allocNow(ctx, ids, "t1", false) // 1..1002, two chunks
	if err != nil {
		t.Fatal(err)
	}
	reuser, err := a.allocNow(ctx, []string{"l1", "other"}, "t2", false) // 2 (reused), 1003
	if err != nil {
		t.Fatal(err)
	}
	if reuser.Seqs[0] != 2 || reuser.Seqs[1] != int64(len(ids)+1) {
		t.Fatalf("reuser got %v, want [2 %d]", reuser.Seqs, len(ids)+1)
	}
	rdb.Del(ctx, a.prefix+"lease:"+lapsing.Token)
	if w, _ := a.Watermark(ctx); w != 1 {
		t.Fatalf("watermark %d, want 1: the reuser holds seq 2", w)
	}
	lapsed, err := a.Clear(ctx, reuser, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lapsed) != 1 || lapsed[0] != 0 {
		t.Errorf("reuser lapsed %v, want [0]: its seq 2 was revoked with the lapsed batch", lapsed)
	}
	if w, _ := a.Watermark(ctx); w != int64(len(ids)+1) {
		t.Errorf("watermark %d, want %d", w, len(ids)+1)
	}
	lapsed, err = a.Clear(ctx, lapsing, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lapsed) != len(ids) {
		t.Errorf("%d lapsed, want all %d", len(lapsed), len(ids))
	}
	rs, err := a.Revoked(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0] != (Range{From: 1, To: int64(len(ids))}) {
		t.Errorf("revoked %v, want one range 1-%d", rs, len(ids))
	}
	if rs, _ := a.Revoked(ctx, int64(len(ids)), 10000); len(rs) != 0 {
		t.Errorf("revoked above %d: %v, want none", len(ids), rs)
	}
	// Expired but not passed: still in flight, so it commits.
	late, err := a.allocNow(ctx, []string{"late"}, "t3", false)
	if err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, a.prefix+"lease:"+late.Token)
	if lapsed, err := a.Clear(ctx, late, nil); err != nil || len(lapsed) != 0 {
		t.Errorf("clear of an expired batch not yet passed: lapsed %v (%v), want none", lapsed, err)
	}
	if rs, _ := a.Revoked(ctx, int64(len(ids)), 10000); len(rs) != 0 {
		t.Errorf("revoked %v after a commit, want none above %d", rs, len(ids))
	}
	// Abandoned: revoked as it is passed, whatever Clear says later.
	failed, err := a.allocNow(ctx, []string{"failed"}, "t4", false)
	if err != nil {
		t.Fatal(err)
	}
	a.Abandon(failed)
	if rs, _ := a.Revoked(ctx, int64(len(ids)+2), 10000); len(rs) != 1 || rs[0].From != failed.Seqs[0] {
		t.Errorf("revoked %v after an abandon, want seq %d", rs, failed.Seqs[0])
	}
}

// TestClearForgetsSeqs: a cleared batch's per-notice seqs are gone from
// Redis, except those of notices the store refused; a lookup that began
// before the clear gets its ids back stale rather than new seqs.
func TestClearForgetsSeqs(t *testing.T) {
	ctx := context.Background()
	a, rdb := open(t)
	ids := make([]string, 2*allocateChunk+10)
	for i := range ids {
		ids[i] = "f" + strconv.Itoa(i)
	}
	mark, err := a.Mark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := a.Allocate(ctx, ids, "t1", false, mark)
	if err != nil {
		t.Fatal(err)
	}
	if lapsed, err := a.Clear(ctx, b, map[string]bool{"f7": true}); err != nil || len(lapsed) != 0 {
		t.Fatalf("clear: lapsed %v (%v)", lapsed, err)
	}
	keys, err := rdb.Keys(ctx, a.prefix+"src:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != a.prefix+"src:f7" {
		t.Errorf("src keys after clear: %d (%v), want only the refused f7's", len(keys), keys[:min(len(keys), 3)])
	}
	// A writer that looked f0 up before the clear (not found) allocates
	// after it: f0 comes back stale, not with a second seq.
	again, err := a.Allocate(ctx, []string{"f0", "new"}, "t2", false, mark)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Stale[0] || !again.Stale[1] {
		t.Errorf("allocation with a mark from before a clear: stale %v, want both", again.Stale)
	}
	if n, _ := a.Latest(ctx); n != int64(len(ids)) {
		t.Errorf("latest seq %d, want %d: a stale allocation takes none", n, len(ids))
	}
}
