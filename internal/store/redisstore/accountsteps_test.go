package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/errs"
)

// TestAccountStepsInterrupted: an account change written in two slots
// (the account's, the namespace's: accounts.go) stopped between its steps
// admits no revoked key and loses no account, and what it leaves needs no
// repair: a create stopped before its directory entries leaves no listed
// account and no key that authenticates; a rotation stopped after its
// swap refuses the old keys (their directory entries, left, lead to no key
// record: 401); a subscription change stopped before the gauge leaves the
// gauge behind until the change is repeated, and a gauge update older than
// the one shown is ignored.
func TestAccountStepsInterrupted(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	directory := f.rs.key(apikeyKey) + ":"
	toDirectory := func(cmd redis.Cmder) bool {
		k, _ := cmd.Args()[min(1, len(cmd.Args())-1)].(string)
		return cmd.Name() == "hset" && strings.HasPrefix(k, directory)
	}

	restore := killAt(f.rdb, toDirectory)
	_, err := f.rs.CreateAccount(ctx, "Half Co", "standard")
	restore()
	if !errors.Is(err, errKilled) {
		t.Fatalf("create: %v, want killed before its directory entries", err)
	}
	if accts, err := f.rs.ListAccounts(ctx); err != nil || len(accts) != 0 {
		t.Errorf("after a create stopped half way: accounts %+v, %v; want none listed", accts, err)
	}

	c, err := f.rs.CreateAccount(ctx, "Rotate Co", "standard")
	if err != nil {
		t.Fatal(err)
	}
	restore = killAt(f.rdb, after(rotateScript))
	_, err = f.rs.RotateKeys(ctx, c.AccountID)
	restore()
	if !errors.Is(err, errKilled) {
		t.Fatalf("rotate: %v, want killed after its swap", err)
	}
	for _, key := range []string{c.AccountKey, c.ReadKey} {
		if n := f.rdb.Exists(ctx, f.rs.key(apikeyKey, account.HashKey(key))).Val(); n != 1 {
			t.Fatalf("the old key's directory entry is gone (%d): the test did not stop the rotation before its last step", n)
		}
		if _, err := f.rs.Authenticate(ctx, key); !errs.Is(err, errs.Unauthorised) {
			t.Errorf("an old key after a rotation stopped before its directory cleanup: %v, want unauthorised", err)
		}
	}
	again, err := f.rs.RotateKeys(ctx, c.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := f.rs.Authenticate(ctx, again.ReadKey); err != nil || p.Account.ID != c.AccountID {
		t.Fatalf("a rotation after the stopped one: %+v, %v", p, err)
	}

	lapsed := func() int64 { return f.rdb.SCard(ctx, f.rs.key(lapsedKey)).Val() }
	restore = killAt(f.rdb, after(setSubscriptionScript))
	err = f.rs.SetSubscription(ctx, c.AccountID, false)
	restore()
	if !errors.Is(err, errKilled) {
		t.Fatalf("lapse: %v, want killed before the gauge", err)
	}
	if p, err := f.rs.Authenticate(ctx, again.ReadKey); err != nil || p.Account.Active || lapsed() != 0 {
		t.Fatalf("after a lapse stopped before the gauge: %+v %v, %d lapsed; want inactive, the gauge behind (0)", p, err, lapsed())
	}
	if err := f.rs.SetSubscription(ctx, c.AccountID, false); err != nil || lapsed() != 1 {
		t.Fatalf("the lapse repeated: %v, %d lapsed; want 1", err, lapsed())
	}
	if err := f.rs.SetSubscription(ctx, c.AccountID, true); err != nil || lapsed() != 0 {
		t.Fatalf("reactivated: %v, %d lapsed; want 0", err, lapsed())
	}
	if err := f.rs.applyLapsed(ctx, []any{c.AccountID, 1, "0"}); err != nil || lapsed() != 0 {
		t.Errorf("an older lapse applied late: %v, %d lapsed; want 0 (the newer reactivation stands)", err, lapsed())
	}
}
