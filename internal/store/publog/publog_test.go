package publog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/testservers"
)

func TestMain(m *testing.M) { testservers.Main(m) }

// newLog returns a log of a fresh namespace on the test Redis, and the
// client; its keys are dropped at the end.
func newLog(t *testing.T, opt Options) (*Log, redis.UniversalClient, string) {
	t.Helper()
	o, err := redis.ParseURL(testservers.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(o)
	ns := testservers.Namespace(t)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, pat := range []string{"{" + ns + "}:*", ns + ":*"} {
			iter := rdb.Scan(ctx, 0, pat, 1000).Iterator()
			for iter.Next(ctx) {
				rdb.Del(ctx, iter.Val())
			}
		}
		_ = rdb.Close()
	})
	return New(rdb, ns, opt), rdb, ns
}

// stored is a notice as stored: seq set.
func stored(id string, seq int64) notice.Notice {
	acn := "000000019"
	return notice.Notice{ID: id, SourceID: id, Seq: seq, ACN: &acn, PublishedDate: "2026-11-20", CompanyName: "X PTY LTD"}
}

// within waits for a value of ch, failing the test after a minute rather
// than hanging it.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("no %s within a minute", what)
		var zero T
		return zero
	}
}

// TestWritersQueueInArrivalOrder: while A holds the lease, B asks for it;
// when A gives it up and at once asks again, B gets it first (writers
// queue: a busy writer cannot starve another), and hears who held it.
func TestWritersQueueInArrivalOrder(t *testing.T) {
	ctx := context.Background()
	heard := make(chan string, 4)
	a, rdb, ns := newLog(t, Options{Who: "A"})
	b := New(rdb, ns, Options{Who: "B", Waiting: func(who string) { heard <- who }})
	la, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Lease, 1)
	go func() {
		lb, err := b.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- lb
	}()
	if who := within(t, heard, "word of the holder"); who != "A" {
		t.Errorf("B heard the lease is held by %q, want A", who)
	}
	la.Release(ctx, true)
	// A asks again strictly after B (arrivals are ordered by the clock's
	// microsecond; a tie is broken by token, either way).
	time.Sleep(2 * time.Millisecond)
	again := make(chan *Lease, 1)
	go func() {
		l, err := a.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		again <- l
	}()
	var lb *Lease
	select {
	case lb = <-got:
	case la2 := <-again:
		la2.Release(ctx, true)
		t.Fatal("A took the lease again before B, which was waiting first")
	case <-time.After(20 * time.Second):
		q, _ := rdb.ZRangeWithScores(ctx, a.Keys().Queue, 0, -1).Result()
		w, _ := rdb.Get(ctx, a.Keys().Writer).Result()
		t.Fatalf("neither B nor A took the lease within 20 s: writer %q, queue %v", w, q)
	}
	select {
	case la2 := <-again:
		la2.Release(ctx, true)
		t.Fatal("A took the lease again while B held it")
	default:
	}
	if lb.Epoch <= la.Epoch {
		t.Errorf("B's epoch %d not above A's %d", lb.Epoch, la.Epoch)
	}
	lb.Release(ctx, true)
	la2 := within(t, again, "second lease of A")
	if la2.Epoch <= lb.Epoch {
		t.Errorf("A's second epoch %d not above B's %d", la2.Epoch, lb.Epoch)
	}
	la2.Release(ctx, true)
}

// TestLapsedLeaseIsRefused: a writer whose lease lapsed (it did not renew)
// and passed to another has its allocation and its publish refused
// (ErrStale), nothing written; the next holder sees it dirty, with what it
// had allocated to take over.
func TestLapsedLeaseIsRefused(t *testing.T) {
	ctx := context.Background()
	a, rdb, ns := newLog(t, Options{LeaseTTL: 200 * time.Millisecond, RenewEvery: time.Hour})
	la, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, err := la.Allocate(ctx, 3)
	if err != nil || first != 1 {
		t.Fatalf("Allocate(3) = %d, %v; want 1", first, err)
	}
	b := New(rdb, ns, Options{})
	lb, err := b.Acquire(ctx) // waits out A's 200 ms
	if err != nil {
		t.Fatal(err)
	}
	if lb.Dirty == nil || lb.Dirty.Epoch != la.Epoch || lb.Allocated != 3 || lb.Published != 0 {
		t.Fatalf("B took over %+v (dirty %+v); want dirty from A's epoch %d with 3 allocated, 0 published", lb, lb.Dirty, la.Epoch)
	}
	if err := la.Publish(ctx, []notice.Notice{stored("a", 1)}, []Kind{KindNew}, 3); !errors.Is(err, ErrStale) {
		t.Fatalf("A's publish after its lease passed on: %v, want ErrStale", err)
	}
	if _, err := la.Allocate(ctx, 1); !errors.Is(err, ErrStale) {
		t.Fatalf("A's allocation after its lease passed on: %v, want ErrStale", err)
	}
	if n, _ := rdb.XLen(ctx, a.Keys().Log).Result(); n != 0 {
		t.Errorf("the refused publish wrote %d log entries", n)
	}
	// B publishes what A left (the takeover) and ends the dirt.
	if err := lb.Publish(ctx, []notice.Notice{stored("a", 1)}, []Kind{KindNew}, lb.Allocated); err != nil {
		t.Fatal(err)
	}
	lb.Release(ctx, true)
	if pub, err := b.Published(ctx); err != nil || pub != 3 {
		t.Errorf("published %d (%v), want 3 (the takeover publishes up to what was allocated)", pub, err)
	}
	lc, err := b.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Release(ctx, true)
	if lc.Dirty != nil {
		t.Errorf("the next holder finds it dirty (%+v) after the takeover", lc.Dirty)
	}
}

// TestCountersCarryOver: the first lease of a namespace written by the
// fenced writer of earlier versions starts from its counters (seq,
// watermark, data version); seqs it handed out past its watermark are
// taken over; the epoch starts above any wall-clock version.
func TestCountersCarryOver(t *testing.T) {
	ctx := context.Background()
	l, rdb, ns := newLog(t, Options{})
	rdb.Set(ctx, "{"+ns+"}:arrival:seq", 42, 0)
	rdb.Set(ctx, "{"+ns+"}:arrival:watermark", 40, 0)
	rdb.Set(ctx, "{"+ns+"}:arrival:dv", 7, 0)
	le, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer le.Release(ctx, false)
	if le.Allocated != 42 || le.Published != 40 || le.Dirty == nil {
		t.Errorf("first lease: allocated %d, published %d, dirty %v; want 42, 40, set", le.Allocated, le.Published, le.Dirty)
	}
	if v, err := l.DataVersion(ctx); err != nil || v != 7 {
		t.Errorf("data version %d (%v), want 7", v, err)
	}
	if now := time.Now().UnixMilli(); le.Epoch < now {
		t.Errorf("first epoch %d below the wall clock in ms (%d): a document stamped by an earlier version could outrank it", le.Epoch, now)
	}
	if first, err := le.Allocate(ctx, 1); err != nil || first != 43 {
		t.Errorf("Allocate(1) = %d (%v), want 43", first, err)
	}
}

// TestReadBehindTrim: a reader past whose position the log was trimmed is
// told so (it must reload); one at the head reads what comes next.
func TestReadBehindTrim(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLog(t, Options{Retention: time.Millisecond})
	publish := func(id string, seq int64) {
		t.Helper()
		le, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := le.Allocate(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if err := le.Publish(ctx, []notice.Notice{stored(id, seq)}, []Kind{KindNew}, seq); err != nil {
			t.Fatal(err)
		}
		le.Release(ctx, true)
	}
	publish("a", 1)
	head, err := l.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // past the 1 ms retention
	publish("b", 2)
	es, behind, err := l.Read(ctx, head, 10)
	if err != nil || behind || len(es) != 1 || es[0].Kind != KindNew {
		t.Fatalf("reader at the head: %v behind %v (%v); want b's entry", es, behind, err)
	}
	time.Sleep(5 * time.Millisecond)
	publish("c", 3)
	// Arrival matching has committed through c: only now may c go.
	c, err := l.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.rdb.Set(ctx, l.Keys().MatchAt, c, 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	publish("d", 4) // trims c, which the reader at b has not read
	if _, behind, err := l.Read(ctx, es[0].ID, 10); err != nil || !behind {
		t.Fatalf("reader at b after c and d were published and b's successors trimmed: behind %v (%v), want true", behind, err)
	}
	if n, _ := l.rdb.XLen(ctx, l.Keys().Log).Result(); n != 1 {
		t.Errorf("the log holds %d entries after d's publish, want d's alone", n)
	}
}

// TestTrimKeepsWhatIsNotMatched: the retention never trims an entry
// arrival matching has not committed (its cursor match:at): a worker down
// for longer than the retention loses no arrival.
func TestTrimKeepsWhatIsNotMatched(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLog(t, Options{Retention: time.Millisecond})
	var a string
	for i, id := range []string{"a", "b", "c"} {
		le, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := le.Allocate(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if err := le.Publish(ctx, []notice.Notice{stored(id, int64(i+1))}, []Kind{KindNew}, int64(i+1)); err != nil {
			t.Fatal(err)
		}
		le.Release(ctx, true)
		if i == 0 {
			var err error
			if a, err = l.Head(ctx); err != nil {
				t.Fatal(err)
			}
			if err := l.rdb.Set(ctx, l.Keys().MatchAt, a, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(5 * time.Millisecond) // past the 1 ms retention
	}
	es, behind, err := l.Read(ctx, a, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || behind {
		t.Errorf("after a, b, c with matching committed through a: the log holds %d entries (behind %v), want b and c", len(es), behind)
	}
}
