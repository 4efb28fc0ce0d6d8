package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/errs"
)

// TestAuthCacheFollowsOtherOpeners: two stores on one file (as serve and
// `noticesd accounts` in another process). A principal cached by one is
// dropped as soon as the other rotates the keys or changes the
// subscription.
func TestAuthCacheFollowsOtherOpeners(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "data", "notices.db")
	open := func() *Store {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	serve, admin := open(), open()
	created, err := admin.CreateAccount(ctx, "Acme", "standard")
	if err != nil {
		t.Fatal(err)
	}
	auth := func(key string) (active bool, err error) {
		p, err := serve.Authenticate(ctx, key)
		return p.Account.Active, err
	}
	for i := 0; i < 2; i++ { // the second is answered from the cache
		if active, err := auth(created.ReadKey); err != nil || !active {
			t.Fatalf("authenticate %d: active %v, %v", i, active, err)
		}
	}
	if len(serve.auth.entries) != 1 {
		t.Fatalf("the cache holds %d principals, want 1", len(serve.auth.entries))
	}
	if err := admin.SetSubscription(ctx, created.AccountID, false); err != nil {
		t.Fatal(err)
	}
	if active, err := auth(created.ReadKey); err != nil || active {
		t.Fatalf("after a lapse in another store: active %v, %v; want inactive at once", active, err)
	}
	if err := admin.SetSubscription(ctx, created.AccountID, true); err != nil {
		t.Fatal(err)
	}
	if active, err := auth(created.ReadKey); err != nil || !active {
		t.Fatalf("after reactivation: active %v, %v", active, err)
	}
	rotated, err := admin.RotateKeys(ctx, created.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth(created.ReadKey); !errs.Is(err, errs.Unauthorised) {
		t.Fatalf("the old key after a rotation in another store: %v; want unauthorised at once", err)
	}
	if active, err := auth(rotated.ReadKey); err != nil || !active {
		t.Fatalf("the new key: active %v, %v", active, err)
	}
}

// BenchmarkAuthenticate: Authenticate (cache hit: the version lookup)
// beside the key lookup it replaces, the join of api_keys and accounts.
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "notices.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	created, err := s.CreateAccount(ctx, "Acme", "standard")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Authenticate(ctx, created.ReadKey); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw-key-lookup", func(b *testing.B) {
		for b.Loop() {
			var id, name, plan, at, kind string
			var active bool
			if err := s.read.QueryRowContext(ctx, `SELECT a.id, a.name, a.plan, a.active, a.created_at, k.kind
				FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = ?`, account.HashKey(created.ReadKey)).
				Scan(&id, &name, &plan, &active, &at, &kind); err != nil {
				b.Fatal(err)
			}
		}
	})
}
