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
	f := newFixture(t, Options{})
	ns := f.ns
	l := limit.NewRedis(f.rdb, ns, 1, 0)
	t.Cleanup(func() {
		if keys, _ := f.rdb.Keys(ctx, limit.RateKey(ns, "*")).Result(); len(keys) > 0 {
			f.rdb.Del(ctx, keys...)
		}
	})
	c, err := f.rs.CreateAccount(ctx, "Gate Co", "standard")
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.rs.Authenticate(ctx, c.ReadKey)
	if err != nil {
		t.Fatal(err)
	}
	bucket := want.Account.ID + ":read"
	rate := limit.Rate{PerSecond: 1, Burst: 2}

	if _, _, _, err := f.rs.AuthenticateAndAllow(ctx, "nk_read_unknown", want, bucket, rate); !errs.Is(err, errs.Unauthorised) {
		t.Fatalf("unknown key: %v, want unauthorised", err)
	}
	// Expected right: a token from the bucket limit.Redis uses.
	p, taken, d, err := f.rs.AuthenticateAndAllow(ctx, c.ReadKey, want, bucket, rate)
	if err != nil || !taken || !d.Allowed || p != want {
		t.Fatalf("expected principal: %+v taken %v %+v %v; want %+v, a token", p, taken, d, err, want)
	}
	if d, err := l.Allow(ctx, bucket, rate); err != nil || !d.Allowed {
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
