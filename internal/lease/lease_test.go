package lease

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/testservers"
)

func TestMain(m *testing.M) { testservers.Main(m) }

func client(t *testing.T) *redis.Client {
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
	if n, _ := renew.Run(ctx, b.rdb, []string{key}, b.owner, ttl.Milliseconds()).Int(); n != 0 {
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
