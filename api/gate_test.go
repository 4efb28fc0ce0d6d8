package api

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/testservers"
)

// scaleLimits is the scale mode's wiring of the limits (cmd/noticesd
// wireScale): the keys in the Redis store, a limit.Redis on the same
// Redis and namespace, the store's AuthenticateAndAllow as the Gate and
// its SlotGate on the limiter as the HeavyGate. f.read and f.acct become
// an active account's keys in Redis.
func scaleLimits(t *testing.T, f *fixture) limitWiring {
	l, rs, _, _ := newScaleLimits(t, f)
	return scaleWiring(l, rs)
}

// scaleWiring is the scale mode's wiring of limiter l and Redis store rs.
func scaleWiring(l *limit.Redis, rs *redisstore.Store) limitWiring {
	return limitWiring{limiter: l, accounts: rs, gate: rs.AuthenticateAndAllow, heavyGate: rs.SlotGate(l)}
}

// newScaleLimits builds scaleLimits's parts, with the Redis client (for
// counting its commands and reading its keys) and the namespace.
func newScaleLimits(t *testing.T, f *fixture) (*limit.Redis, *redisstore.Store, redis.UniversalClient, string) {
	t.Helper()
	ctx := context.Background()
	rdb, err := redisstore.Dial(config.Config{RedisURL: testservers.Redis(t)})
	if err != nil {
		t.Fatal(err)
	}
	ns := testservers.Namespace(t)
	t.Cleanup(func() {
		for _, pattern := range []string{ns + ":*", keyspace.Prefix(ns) + "*"} {
			if keys, _ := rdb.Keys(ctx, pattern).Result(); len(keys) > 0 {
				rdb.Del(ctx, keys...)
			}
		}
		rdb.Close()
	})
	rs, err := redisstore.New(rdb, ns, f.store, redisstore.Options{Plans: testPlans()})
	if err != nil {
		t.Fatal(err)
	}
	active, err := rs.CreateAccount(ctx, "Active Co", "standard")
	if err != nil {
		t.Fatal(err)
	}
	f.read, f.acct = active.ReadKey, active.AccountKey
	return limit.NewRedis(rdb, ns, 2, 0), rs, rdb, ns
}

// redisCommands counts the commands a Redis client sends (a script call
// is one). An EVALSHA answered NOSCRIPT is not counted: go-redis sends the
// script itself then, once per script and Redis server.
// single counts the commands sent alone (not in a pipeline), pipes the
// pipelines (a heavy slot's release is one).
type redisCommands struct{ n, single, pipes atomic.Int64 }

func (c *redisCommands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *redisCommands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
			c.n.Add(1)
			c.single.Add(1)
		}
		return err
	}
}

func (c *redisCommands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		c.pipes.Add(1)
		return next(ctx, cmds)
	}
}

// TestGateOneRoundTrip: in the scale mode's wiring, a read with a key the
// server has seen sends Redis one command (the key check and the rate
// token in one script call), early or not; the first request of a key,
// checked before its token is taken, two. A key over its rate is refused
// by the limiter once, then by the server alone (no command) until the
// refusal's Retry-After has passed (f.clock; at most rateHoldMax), with
// a Retry-After of its own.
func TestGateOneRoundTrip(t *testing.T) {
	var cmds redisCommands
	f := newLimitFixtureOn(t, func(t *testing.T, f *fixture) limitWiring {
		l, rs, rdb, _ := newScaleLimits(t, f)
		rdb.AddHook(&cmds)
		return scaleWiring(l, rs)
	}, 3)
	steps := []struct {
		name, path string
		status     int
		cmds       int64
	}{
		// A key's first request: its record, then its account (the
		// record names the account's key, and a script must be given its
		// keys: docs/redis.md "Key layout"), then its token.
		{"a key's first request: checked, then its token", "/v1/notices", 200, 3},
		{"an early read", "/v1/notices", 200, 1},
		{"a read that is not early (a watch list: it needs the account key)", "/v1/watches", 403, 1},
		{"the burst of 3 is used up: the limiter refuses", "/v1/notices", 429, 1},
		{"held: refused without Redis", "/v1/companies/000000019", 429, 0},
		{"held, a heavy request", "/v1/stats?q=liquidator", 429, 0},
	}
	for _, s := range steps {
		before := cmds.n.Load()
		res := f.do(t, "GET", s.path, f.read)
		if res.status != s.status {
			t.Fatalf("%s: HTTP %d, want %d: %s", s.name, res.status, s.status, res.body)
		}
		if s.status == 403 {
			wantError(t, res, 403, "account_required")
		}
		if s.status == 429 {
			wantError(t, res, 429, "rate_limited")
			if res.header.Get("Retry-After") == "" {
				t.Errorf("%s: 429 without Retry-After", s.name)
			}
		}
		if n := cmds.n.Load() - before; n != s.cmds {
			t.Errorf("%s: %d Redis commands, want %d", s.name, n, s.cmds)
		}
	}
	// The limiter's clock stands still: past the hold the limiter is asked
	// again, and refuses again.
	f.clock.advance(rateHoldMax)
	before := cmds.n.Load()
	wantError(t, f.do(t, "GET", "/v1/notices", f.read), 429, "rate_limited")
	if n := cmds.n.Load() - before; n != 1 {
		t.Errorf("past the hold: %d Redis commands, want 1", n)
	}
	// Another key is not held.
	before = cmds.n.Load()
	if res := f.do(t, "GET", "/v1/notices", f.acct); res.status != 200 {
		t.Fatalf("the account key: HTTP %d %s", res.status, res.body)
	}
	if n := cmds.n.Load() - before; n != 3 {
		t.Errorf("another key's first request: %d Redis commands, want 3", n)
	}
}

// TestHeldKeyBound: a key held after a 429 is refused by the server alone,
// so a rotation or a lapse made meanwhile shows only when the hold ends:
// at most rateHoldMax after the refusal (f.clock), 401 and 402 as always.
func TestHeldKeyBound(t *testing.T) {
	ctx := context.Background()
	for name, backend := range limitBackends() {
		t.Run(name, func(t *testing.T) {
			f := newLimitFixtureOn(t, backend, 1)
			created, err := f.accounts.CreateAccount(ctx, "Held Co", "standard")
			if err != nil {
				t.Fatal(err)
			}
			if res := f.do(t, "GET", "/v1/notices", created.ReadKey); res.status != 200 {
				t.Fatalf("first request: HTTP %d %s", res.status, res.body)
			}
			wantError(t, f.do(t, "GET", "/v1/notices", created.ReadKey), 429, "rate_limited")
			if err := f.accounts.SetSubscription(ctx, created.AccountID, false); err != nil {
				t.Fatal(err)
			}
			// The account key was never limited: its lapse shows at once.
			wantError(t, f.do(t, "GET", "/v1/notices", created.AccountKey), 402, "subscription_inactive")
			f.clock.advance(rateHoldMax / 2)
			wantError(t, f.do(t, "GET", "/v1/notices", created.ReadKey), 429, "rate_limited") // within the hold
			f.clock.advance(rateHoldMax / 2)
			wantError(t, f.do(t, "GET", "/v1/notices", created.ReadKey), 402, "subscription_inactive")
			if err := f.accounts.SetSubscription(ctx, created.AccountID, true); err != nil {
				t.Fatal(err)
			}
			wantError(t, f.do(t, "GET", "/v1/notices", created.ReadKey), 429, "rate_limited")
			if _, err := f.accounts.RotateKeys(ctx, created.AccountID); err != nil {
				t.Fatal(err)
			}
			wantError(t, f.do(t, "GET", "/v1/notices", created.ReadKey), 429, "rate_limited") // within the hold
			f.clock.advance(rateHoldMax)
			wantError(t, f.do(t, "GET", "/v1/notices", created.ReadKey), 401, "unauthorised")
		})
	}
}
