package redisstore

import (
	"context"
	"testing"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/limit"
)

// TestAuthenticateAndAllow: the key check of AuthenticateAndAllow answers
// as Authenticate's, and it takes a token only when the key is the
// expected principal's and active, from the same bucket as limit.Redis's
// Allow (the two share one rate, as replicas of two versions do).
func TestAuthenticateAndAllow(t *testing.T) {
	ctx := context.Background()
	f, l, c, want := newGateFixture(t, 1, "Gate Co")
	const bucket = "read"
	rate := limit.Rate{PerSecond: 1, Burst: 2}

	if _, _, _, err := f.rs.AuthenticateAndAllow(ctx, "nk_read_unknown", want, bucket, rate); !errs.Is(err, errs.Unauthorised) {
		t.Fatalf("unknown key: %v, want unauthorised", err)
	}
	// Expected right: a token from the bucket limit.Redis uses.
	p, taken, d, err := f.rs.AuthenticateAndAllow(ctx, c.ReadKey, want, bucket, rate)
	if err != nil || !taken || !d.Allowed || p != want {
		t.Fatalf("expected principal: %+v taken %v %+v %v; want %+v, a token", p, taken, d, err, want)
	}
	if d, err := l.Allow(ctx, want.Account.ID, bucket, rate); err != nil || !d.Allowed {
		t.Fatalf("limit.Redis's Allow, the second token of the burst of 2: %+v %v", d, err)
	}
	_, taken, d, err = f.rs.AuthenticateAndAllow(ctx, c.ReadKey, want, bucket, rate)
	if err != nil || !taken || d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 1e9 {
		t.Fatalf("past the burst: taken %v %+v %v; want refused with a Retry-After up to 1 s", taken, d, err)
	}
	// Expected wrong: the principal, no token.
	for name, exp := range map[string]account.Principal{
		"another plan":    {Account: account.Account{ID: want.Account.ID, Plan: "free"}, Kind: want.Kind},
		"another kind":    {Account: account.Account{ID: want.Account.ID, Plan: want.Account.Plan}, Kind: account.AccountKey},
		"another account": {Account: account.Account{ID: "acc_other", Plan: want.Account.Plan}, Kind: want.Kind},
	} {
		p, taken, _, err := f.rs.AuthenticateAndAllow(ctx, c.ReadKey, exp, bucket, rate)
		if err != nil || taken || p != want {
			t.Errorf("%s: %+v taken %v %v; want %+v, no token", name, p, taken, err, want)
		}
	}
	// Lapsed: the principal as Authenticate gives it, no token.
	if err := f.rs.SetSubscription(ctx, c.AccountID, false); err != nil {
		t.Fatal(err)
	}
	lapsed, _ := f.rs.Authenticate(ctx, c.ReadKey)
	if p, taken, _, err := f.rs.AuthenticateAndAllow(ctx, c.ReadKey, want, bucket, rate); err != nil || taken || p != lapsed || p.Account.Active {
		t.Errorf("lapsed: %+v taken %v %v; want %+v, no token", p, taken, err, lapsed)
	}
	// Rotated away: unknown.
	if _, err := f.rs.RotateKeys(ctx, c.AccountID); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := f.rs.AuthenticateAndAllow(ctx, c.ReadKey, want, bucket, rate); !errs.Is(err, errs.Unauthorised) {
		t.Errorf("rotated-away key: %v, want unauthorised", err)
	}
}

// TestSlotGate: SlotGate takes a heavy slot in limit.Redis's sets (the
// key's and the service's, limit.HeavyKeys) in the gate's one script
// call (the account's; the service's in a second call), only when the key
// is the expected principal's, active, and its rate token is allowed; at
// the key's cap or the service's it refuses as Acquire does, giving the
// account's part back when the service is full; the limiter releases the
// slot as its own.
func TestSlotGate(t *testing.T) {
	ctx := context.Background()
	f, l, c, want := newGateFixture(t, 2, "Slot Gate Co")
	ns := f.ns
	gate := f.rs.SlotGate(l)
	const bucket = "read"
	sets := limit.HeavyKeys(ns, want.Account.ID)
	held := func(name string, key, all int64) {
		t.Helper()
		if k, a := f.rdb.ZCard(ctx, sets[0]).Val(), f.rdb.ZCard(ctx, sets[1]).Val(); k != key || a != all {
			t.Errorf("%s: the sets %v hold %d and %d slots, want %d and %d", name, sets, k, a, key, all)
		}
	}
	free := limit.Rate{} // no rate limit

	p, taken, d, slot, err := gate(ctx, c.ReadKey, want, bucket, free, 1)
	if err != nil || !taken || !d.Allowed || p != want || !slot.Asked || !slot.Decision.Allowed || slot.Release == nil {
		t.Fatalf("expected principal: %+v taken %v %+v %+v %v; want a token and a slot", p, taken, d, slot, err)
	}
	held("a slot taken", 1, 1)
	// At the key's cap (1): refused as Acquire refuses, nothing more taken.
	_, _, _, again, err := gate(ctx, c.ReadKey, want, bucket, free, 1)
	if err != nil || !again.Asked || again.Decision.Allowed || again.Decision.Global || again.Release != nil {
		t.Errorf("at the key's cap: %+v %v; want refused, not global", again, err)
	}
	if _, d, err := l.Acquire(ctx, want.Account.ID, 1); err != nil || d.Allowed {
		t.Errorf("Acquire at the key's cap: %+v %v; want refused (the gate's slot is the limiter's)", d, err)
	}
	// The service's cap (2): one more of the key (no per-key cap) fills it.
	_, _, _, second, err := gate(ctx, c.ReadKey, want, bucket, free, 0)
	if err != nil || !second.Decision.Allowed {
		t.Fatalf("a second slot without a per-key cap: %+v %v", second, err)
	}
	_, _, _, full, err := gate(ctx, c.ReadKey, want, bucket, free, 0)
	if err != nil || full.Decision.Allowed || !full.Decision.Global {
		t.Errorf("at the service's cap: %+v %v; want refused, global", full, err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	held("the service full: the account's part given back", 2, 2)
	slot.Release()
	second.Release()
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	held("both released", 0, 0)

	// No slot when the rate refuses the token.
	rate := limit.Rate{PerSecond: 1, Burst: 1}
	if _, taken, d, slot, err := gate(ctx, c.ReadKey, want, bucket, rate, 1); err != nil || !taken || !d.Allowed || !slot.Decision.Allowed {
		t.Fatalf("the burst's token: taken %v %+v %+v %v", taken, d, slot, err)
	} else {
		slot.Release()
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, taken, d, slot, err := gate(ctx, c.ReadKey, want, bucket, rate, 1); err != nil || !taken || d.Allowed || slot.Asked {
		t.Errorf("past the burst: taken %v %+v %+v %v; want the token refused and no slot asked", taken, d, slot, err)
	}
	held("a refused token", 0, 0)
	// No slot for another principal than the expected one.
	other := account.Principal{Account: account.Account{ID: "acc_other", Plan: want.Account.Plan}, Kind: want.Kind}
	if p, taken, _, slot, err := gate(ctx, c.ReadKey, other, bucket, free, 1); err != nil || taken || slot.Asked || p != want {
		t.Errorf("another account expected: %+v taken %v %+v %v; want %+v, no token, no slot", p, taken, slot, err, want)
	}
	for _, key := range limit.HeavyKeys(ns, "acc_other") {
		if n := f.rdb.ZCard(ctx, key).Val(); n != 0 {
			t.Errorf("another account expected: %s holds %d slots", key, n)
		}
	}
	// No slot for a lapsed account.
	if err := f.rs.SetSubscription(ctx, c.AccountID, false); err != nil {
		t.Fatal(err)
	}
	if _, taken, _, slot, err := gate(ctx, c.ReadKey, want, bucket, free, 1); err != nil || taken || slot.Asked {
		t.Errorf("lapsed: taken %v %+v %v; want no token, no slot", taken, slot, err)
	}
	held("a lapsed account", 0, 0)
}

// newGateFixture is a store with a Redis limiter (global heavy slots) on
// its namespace, whose rate buckets are deleted at the end, and an
// account named name on the standard plan with the principal of its
// read-only key.
func newGateFixture(t *testing.T, global int, name string) (fixture, *limit.Redis, account.Created, account.Principal) {
	t.Helper()
	ctx := context.Background()
	f := newFixture(t, Options{})
	l := limit.NewRedis(f.rdb, f.ns, global, 0)
	t.Cleanup(func() {
		if keys, _ := f.rdb.Keys(ctx, limit.RateKey(f.ns, "*", "*")).Result(); len(keys) > 0 {
			f.rdb.Del(ctx, keys...)
		}
	})
	c, err := f.rs.CreateAccount(ctx, name, "standard")
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.rs.Authenticate(ctx, c.ReadKey)
	if err != nil {
		t.Fatal(err)
	}
	return f, l, c, p
}
