package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/store"
)

// RunAccounts runs the accounts contract against backends made by open,
// which must return a fresh backend with account.DefaultPlans each call.
func RunAccounts(t *testing.T, open func(t *testing.T) store.Accounts) {
	ctx := context.Background()
	a := open(t)

	first, err := a.CreateAccount(ctx, "First Pty Ltd", "standard")
	if err != nil {
		t.Fatal(err)
	}
	second, err := a.CreateAccount(ctx, "Second", "free")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("created keys", func(t *testing.T) {
		if !strings.HasPrefix(first.AccountID, "acc_") || !strings.HasPrefix(first.AccountKey, account.AccountKeyPrefix) ||
			!strings.HasPrefix(first.ReadKey, account.ReadKeyPrefix) || first.AccountID == second.AccountID || first.ReadKey == second.ReadKey {
			t.Errorf("created %+v and %+v", first, second)
		}
	})
	t.Run("authenticate", func(t *testing.T) {
		for _, c := range []struct {
			key  string
			id   string
			kind account.KeyKind
		}{{first.AccountKey, first.AccountID, account.AccountKey}, {first.ReadKey, first.AccountID, account.ReadKey},
			{second.ReadKey, second.AccountID, account.ReadKey}, {"  " + first.ReadKey + "\n", first.AccountID, account.ReadKey}} {
			p, err := a.Authenticate(ctx, c.key)
			if err != nil {
				t.Fatalf("key %q: %v", c.key, err)
			}
			if p.Account.ID != c.id || p.Kind != c.kind || !p.Account.Active {
				t.Errorf("key %q: principal %+v, want account %s kind %d active", c.key, p, c.id, c.kind)
			}
		}
		p, _ := a.Authenticate(ctx, first.AccountKey)
		if p.Account.Name != "First Pty Ltd" || p.Account.Plan != "standard" || p.Account.CreatedAt == "" {
			t.Errorf("account fields %+v", p.Account)
		}
		for _, bad := range []string{"", "nk_read_nope", first.AccountKey + "x"} {
			if _, err := a.Authenticate(ctx, bad); !errs.Is(err, errs.Unauthorised) {
				t.Errorf("key %q: %v, want unauthorised", bad, err)
			}
		}
	})
	t.Run("unknown plan names the valid ones", func(t *testing.T) {
		_, err := a.CreateAccount(ctx, "X", "gold")
		if err == nil || !strings.Contains(err.Error(), "gold") || !strings.Contains(err.Error(), "enterprise, free, standard") {
			t.Errorf("got %v, want an error naming gold and the plans enterprise, free, standard", err)
		}
	})
	t.Run("list oldest first", func(t *testing.T) {
		list, err := a.ListAccounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].ID != first.AccountID || list[1].ID != second.AccountID || list[1].Plan != "free" {
			t.Errorf("list %+v", list)
		}
	})
	t.Run("subscription", func(t *testing.T) {
		if err := a.SetSubscription(ctx, first.AccountID, false); err != nil {
			t.Fatal(err)
		}
		p, err := a.Authenticate(ctx, first.ReadKey)
		if err != nil || p.Account.Active {
			t.Errorf("lapsed: %+v, %v; want the principal with active false", p, err)
		}
		if err := a.SetSubscription(ctx, first.AccountID, true); err != nil {
			t.Fatal(err)
		}
		if p, err := a.Authenticate(ctx, first.ReadKey); err != nil || !p.Account.Active {
			t.Errorf("reactivated: %+v, %v; the same key works again", p, err)
		}
		if err := a.SetSubscription(ctx, "acc_nope", false); !errs.Is(err, errs.NotFound) {
			t.Errorf("unknown account: %v, want not_found", err)
		}
	})
	t.Run("rotate keys", func(t *testing.T) {
		rotated, err := a.RotateKeys(ctx, first.AccountID)
		if err != nil {
			t.Fatal(err)
		}
		if rotated.AccountID != first.AccountID || rotated.AccountKey == first.AccountKey || rotated.ReadKey == first.ReadKey {
			t.Fatalf("rotated %+v", rotated)
		}
		for _, old := range []string{first.AccountKey, first.ReadKey} {
			if _, err := a.Authenticate(ctx, old); !errs.Is(err, errs.Unauthorised) {
				t.Errorf("old key still works: %v", err)
			}
		}
		if p, err := a.Authenticate(ctx, rotated.AccountKey); err != nil || p.Kind != account.AccountKey {
			t.Errorf("new account key: %+v, %v", p, err)
		}
		if p, err := a.Authenticate(ctx, second.AccountKey); err != nil || p.Account.ID != second.AccountID {
			t.Errorf("other account's key after rotation: %+v, %v", p, err)
		}
		if _, err := a.RotateKeys(ctx, "acc_nope"); !errs.Is(err, errs.NotFound) {
			t.Errorf("unknown account: %v, want not_found", err)
		}
	})
}
