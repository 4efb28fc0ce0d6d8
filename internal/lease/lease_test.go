package lease

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/testservers"
)

func TestMain(m *testing.M) { testservers.Main(m) }

func client(t *testing.T) redis.UniversalClient {
	t.Helper()
	opt, err := redis.ParseURL(testservers.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
	}
}

// TestOneHolderAndTakeover: of two processes' leases on one key exactly one
// is held; when the holder shuts down the other takes it over, and when a
// holder dies without giving it up (its key expires) the other takes it
// over within the time to live.
func TestOneHolderAndTakeover(t *testing.T) {
	ctx := context.Background()
	key := testservers.Namespace(t) + ":collector:lease"
	const ttl = 300 * time.Millisecond
	a, b := New(client(t), key, ttl), New(client(t), key, ttl)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown(ctx)
	if !a.Held() || b.Held() {
		t.Fatalf("after both started: a held %v, b held %v; want only a", a.Held(), b.Held())
	}
	for range 5 { // renewals keep it with a
		time.Sleep(ttl / 2)
		if !a.Held() || b.Held() {
			t.Fatalf("while a renews: a held %v, b held %v", a.Held(), b.Held())
		}
	}
	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ttl, "b to take the lease a gave up", b.Held)

	// A holder that dies: c takes over once the key expires.
	c := New(client(t), key, ttl)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown(ctx)
	if c.Held() {
		t.Fatal("c holds the lease while b does")
	}
	b.cancel() // b stops renewing, as a killed process would, without releasing
	<-b.done
	waitUntil(t, 2*ttl, "c to take over b's expired lease", c.Held)
	if n, _ := takeOrRenew.Run(ctx, b.rdb, []string{key}, b.owner, ttl.Milliseconds()).Int(); n != 0 {
		t.Error("b could still renew a lease c holds")
	}
}

// TestKeep: Keep renews every interval until stopped, and not after stop
// has returned; stop may be called twice.
func TestKeep(t *testing.T) {
	var calls atomic.Int64
	stop := Keep(10*time.Millisecond, func(ctx context.Context) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("a renewal without a deadline")
		}
		calls.Add(1)
	})
	for deadline := time.Now().Add(10 * time.Second); calls.Load() < 3; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d renewals in 10 s at a 10 ms interval, want 3", calls.Load())
		}
	}
	stop()
	stop()
	after := calls.Load()
	time.Sleep(50 * time.Millisecond)
	if n := calls.Load(); n != after {
		t.Errorf("%d renewals after stop returned, want 0", n-after)
	}
}

// TestSetIfHeld: the holder's record write succeeds; once another process
// holds the key (the holder's lease lapsed while it stalled) the write is
// refused with ErrNotHeld and the successor's value stands.
func TestSetIfHeld(t *testing.T) {
	ctx := context.Background()
	rdb := client(t)
	ns := testservers.Namespace(t)
	key, rec := keyspace.Prefix(ns)+"collector:lease", keyspace.Prefix(ns)+"collector:state"
	a := New(rdb, key, time.Minute)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(ctx)
	if err := a.Record(rec).Save(ctx, []byte("from a")); err != nil {
		t.Fatalf("the holder's write: %v", err)
	}
	if b, err := a.Record(rec).Load(ctx); err != nil || string(b) != "from a" {
		t.Fatalf("Load = %q, %v; want \"from a\"", b, err)
	}
	// The lease passes to another owner behind a's back.
	if err := rdb.Set(ctx, key, "successor", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, rec, "from the successor", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.Record(rec).Save(ctx, []byte("late write from a")); err != ErrNotHeld {
		t.Fatalf("a write after the lease passed on: %v, want ErrNotHeld", err)
	}
	if got, _ := rdb.Get(ctx, rec).Result(); got != "from the successor" {
		t.Errorf("the record holds %q after the refused write, want the successor's", got)
	}
	if a.Held() {
		t.Error("Held() is still true after a refused write")
	}
	if b, err := New(rdb, key, time.Minute).Record(keyspace.Prefix(ns) + "nothing").Load(ctx); b != nil || err != nil {
		t.Errorf("Load of a missing record = %q, %v; want nil, nil", b, err)
	}
}

// TestHeldLapsesWithoutRenewal: a holder whose renewals stop (a stalled
// process, a Redis that does not answer) stops believing it holds the lease
// once its time to live has passed on its own clock, before a renewal
// could tell it so.
func TestHeldLapsesWithoutRenewal(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	var offset atomic.Int64
	l := New(client(t), testservers.Namespace(t)+":collector:lease", time.Minute)
	l.now = func() time.Time { return now.Add(time.Duration(offset.Load())) }
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.Shutdown(ctx)
	if !l.Held() {
		t.Fatal("not held after Start on a free key")
	}
	offset.Store(int64(59 * time.Second))
	if !l.Held() {
		t.Error("not held 59s into a 1m lease")
	}
	offset.Store(int64(61 * time.Second))
	if l.Held() {
		t.Error("still held 61s into a 1m lease with no renewal since")
	}
}

// TestFailedRenewalIsNotATTLOutage: one renewal that fails (here: its
// call cut short) while the key is still this owner's must not keep the
// holder out until the key expires: the next try takes it back at once.
func TestFailedRenewalIsNotATTLOutage(t *testing.T) {
	ctx := context.Background()
	l := New(client(t), testservers.Namespace(t)+":collector:lease", time.Minute)
	l.try(ctx)
	if !l.Held() {
		t.Fatal("not held after the first try on a free key")
	}
	cut, cancel := context.WithCancel(ctx)
	cancel()
	l.try(cut) // the renewal fails: not held for now
	if l.Held() {
		t.Fatal("held after a renewal that failed")
	}
	l.try(ctx)
	if !l.Held() {
		t.Error("the next try, with the key still this owner's, did not take the lease back (it would wait out the whole TTL)")
	}
}
