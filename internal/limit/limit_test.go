package limit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/limit/limittest"
)

// limiter is what both implementations offer; the api holds them behind
// the same two methods.
type limiter interface {
	Allow(ctx context.Context, account, bucket string, r limit.Rate) (limit.Decision, error)
	Acquire(ctx context.Context, key string, perKey int) (limit.Release, limit.Decision, error)
}

// implementations builds, for a subtest, the in-process limiter and the
// Redis one on the test Redis in a namespace of that subtest, both with
// global heavy cap global.
func implementations(global int) map[string]func(t *testing.T) limiter {
	return map[string]func(t *testing.T) limiter{
		"local": func(*testing.T) limiter { return limit.NewLocal(global, nil) },
		"redis": func(t *testing.T) limiter {
			l, _, _ := limittest.Redis(t, global)
			return l
		},
	}
}

func TestRateOneKeyPastItsLimit(t *testing.T) {
	ctx := context.Background()
	for name, newLimiter := range implementations(4) {
		t.Run(name, func(t *testing.T) {
			l := newLimiter(t)
			r := limit.Rate{PerSecond: 1, Burst: 3}
			for i := range 3 {
				d, err := l.Allow(ctx, "acct_a", "read", r)
				if err != nil || !d.Allowed {
					t.Fatalf("request %d within the burst: %+v, %v", i+1, d, err)
				}
			}
			d, err := l.Allow(ctx, "acct_a", "read", r)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > time.Second {
				t.Fatalf("request past the burst: %+v, want refused with a retry within 1s", d)
			}
			if d, err := l.Allow(ctx, "acct_b", "read", r); err != nil || !d.Allowed {
				t.Fatalf("another key must be unaffected: %+v, %v", d, err)
			}
			if d, err := l.Allow(ctx, "acct_c", "read", limit.Rate{}); err != nil || !d.Allowed {
				t.Fatalf("a zero rate means no limit: %+v, %v", d, err)
			}
		})
	}
}

func TestLocalRateRefills(t *testing.T) {
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	l := limit.NewLocal(1, func() time.Time { return now })
	r := limit.Rate{PerSecond: 2, Burst: 1}
	if d, _ := l.Allow(context.Background(), "k", "read", r); !d.Allowed {
		t.Fatal("first request refused")
	}
	d, _ := l.Allow(context.Background(), "k", "read", r)
	if d.Allowed || d.RetryAfter != 500*time.Millisecond {
		t.Fatalf("second request at once: %+v, want refused for 500ms", d)
	}
	now = now.Add(d.RetryAfter)
	if d, _ := l.Allow(context.Background(), "k", "read", r); !d.Allowed {
		t.Fatalf("after Retry-After the request must pass: %+v", d)
	}
}

func TestHeavySlots(t *testing.T) {
	ctx := context.Background()
	for name, newLimiter := range implementations(3) {
		t.Run(name, func(t *testing.T) {
			l := newLimiter(t)
			relA1, d, err := l.Acquire(ctx, "acct_a", 2)
			mustAllow(t, d, err, "first slot of a")
			relA2, d, err := l.Acquire(ctx, "acct_a", 2)
			mustAllow(t, d, err, "second slot of a")
			_, d, err = l.Acquire(ctx, "acct_a", 2)
			if err != nil || d.Allowed || d.Global || d.RetryAfter <= 0 {
				t.Fatalf("third slot of a: %+v, %v; want refused by the key's cap", d, err)
			}
			relB, d, err := l.Acquire(ctx, "acct_b", 2)
			mustAllow(t, d, err, "first slot of b")
			_, d, err = l.Acquire(ctx, "acct_c", 2)
			if err != nil || d.Allowed || !d.Global {
				t.Fatalf("fourth slot overall: %+v, %v; want refused by the global cap", d, err)
			}
			relA1()
			relA1() // a second release must not free another slot
			relC, d, err := l.Acquire(ctx, "acct_c", 2)
			mustAllow(t, d, err, "slot after a release")
			_, d, _ = l.Acquire(ctx, "acct_d", 2)
			if d.Allowed {
				t.Fatal("a double release freed two slots")
			}
			relA2()
			relB()
			relC()
			for i := range 3 {
				rel, d, err := l.Acquire(ctx, "acct_e", 0)
				mustAllow(t, d, err, "slot after all released")
				defer rel()
				_ = i
			}
		})
	}
}

// TestReleasedSlotIsFreeAtOnce: Release returns before the Redis limiter
// has freed the slot (the request answers without that round trip), yet an
// Acquire right after it on the same limiter must find the slot free, and
// Flush leaves no lease behind.
func TestReleasedSlotIsFreeAtOnce(t *testing.T) {
	ctx := context.Background()
	for name, newLimiter := range implementations(1) {
		t.Run(name, func(t *testing.T) {
			l := newLimiter(t)
			for i := range 200 {
				rel, d, err := l.Acquire(ctx, "acct_a", 1)
				mustAllow(t, d, err, fmt.Sprintf("slot %d, right after the release of the one before", i+1))
				rel()
			}
		})
	}
	t.Run("redis flush", func(t *testing.T) {
		l, rdb, ns := limittest.Redis(t, 2)
		for range 20 {
			rel, d, err := l.Acquire(ctx, "acct_a", 0)
			mustAllow(t, d, err, "slot")
			rel()
		}
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		for _, key := range limit.HeavyKeys(ns, "acct_a") {
			if n := rdb.ZCard(ctx, key).Val(); n != 0 {
				t.Errorf("%s holds %d leases after Flush, want 0", key, n)
			}
		}
	})
}

// TestRedisLeasesOfADeadReplicaExpire fills both sets with leases as a
// replica that died would leave them: expired ones no longer count, live
// ones do.
func TestRedisLeasesOfADeadReplicaExpire(t *testing.T) {
	ctx := context.Background()
	l, rdb, ns := limittest.Redis(t, 2)
	now := time.Now().UnixMilli()
	for _, key := range limit.HeavyKeys(ns, "acct_a") {
		if err := rdb.ZAdd(ctx, key, redis.Z{Score: float64(now - 1000), Member: "dead-1"}, redis.Z{Score: float64(now - 1), Member: "dead-2"}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rel, d, err := l.Acquire(ctx, "acct_a", 1)
	mustAllow(t, d, err, "slot held only by expired leases")
	defer rel()
	if n := rdb.ZCard(ctx, limit.HeavyKeys(ns, "")[1]).Val(); n != 1 {
		t.Fatalf("global set holds %d leases, want only the live one", n)
	}
	if err := rdb.ZAdd(ctx, limit.HeavyKeys(ns, "")[1], redis.Z{Score: float64(now + time.Hour.Milliseconds()), Member: "live-other"}).Err(); err != nil {
		t.Fatal(err)
	}
	_, d, err = l.Acquire(ctx, "acct_b", 1)
	if err != nil || d.Allowed || !d.Global {
		t.Fatalf("a live lease of another replica must count: %+v, %v", d, err)
	}
	// The account's part, taken first, is given back when the service is
	// full (the two sets are in two cluster slots: two calls).
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, limit.HeavyKeys(ns, "acct_b")[0]).Val(); n != 0 {
		t.Errorf("the account's set holds %d leases after the service refused, want 0 (given back)", n)
	}
}

func TestRedisDownIsAnError(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	l := limit.NewRedis(rdb, "t-down", 1, 0)
	if _, err := l.Allow(context.Background(), "k", "read", limit.Rate{PerSecond: 1}); err == nil {
		t.Error("Allow with Redis away must fail, not allow silently")
	}
	if _, _, err := l.Acquire(context.Background(), "k", 1); err == nil {
		t.Error("Acquire with Redis away must fail, not allow silently")
	}
}

func mustAllow(t *testing.T, d limit.Decision, err error, what string) {
	t.Helper()
	if err != nil || !d.Allowed {
		t.Fatalf("%s: %+v, %v; want allowed", what, d, err)
	}
}
