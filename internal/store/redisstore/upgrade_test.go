package redisstore

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/store/publog"
)

// TestUpgradeKeys: a namespace in the untagged layout of older versions
// (the Redis store's keys under "ns:", the publish log's already under
// "{ns}:"; made of this version's keys, so those under the accounts' and
// groups' tags stay there), half upgraded by an upgrade that stopped, is upgraded by three
// processes starting at once: the untagged keys are moved once, and every
// key ends under its name of the sharded layout with its value
// (checkSharded); a later start moves nothing.
func TestUpgradeKeys(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	familyWorkload(t, f)
	acct, err := f.rs.CreateAccount(ctx, "Upgrade Co", "standard")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, k := range namespaceKeys(t, f.rdb, f.ns) {
			f.rdb.Del(ctx, k)
		}
	})
	p, old := keyspace.Prefix(f.ns), keyspace.OldPrefix(f.ns)
	all := namespaceKeys(t, f.rdb, f.ns)
	n := taggedNamespace{fixture: f, before: snapshot(t, f.rdb, all)}

	// Back to the old layout.
	logKeys := publog.KeysFor(f.ns)
	tagged := reflect.ValueOf(logKeys)
	keep := map[string]bool{}
	for i := 0; i < tagged.NumField(); i++ {
		keep[tagged.Field(i).String()] = true
	}
	var moved []string
	for _, k := range all {
		if !keep[k] && strings.HasPrefix(k, p) { // the accounts' and groups' tags are this layout's only
			if err := f.rdb.Rename(ctx, k, old+strings.TrimPrefix(k, p)).Err(); err != nil {
				t.Fatal(err)
			}
			moved = append(moved, k)
		}
	}
	if len(moved) < 15 { // the accounts' keys are under their own tags, not moved here
		t.Fatalf("only %d keys to upgrade: the workload wrote too little", len(moved))
	}
	if _, err := f.rs.Authenticate(ctx, acct.ReadKey); !errs.Is(err, errs.Unauthorised) {
		t.Fatalf("authenticate in the old layout: %v; want unauthorised (the keys were not moved)", err)
	}
	// An upgrade that stopped a third of the way.
	slices.Sort(moved)
	for _, k := range moved[:len(moved)/3] {
		if err := f.rdb.Rename(ctx, old+strings.TrimPrefix(k, p), k).Err(); err != nil {
			t.Fatal(err)
		}
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, err := UpgradeKeys(ctx, f.rdb, f.ns, UpgradeOptions{})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += done[familyUntagged]
			mu.Unlock()
		}()
	}
	wg.Wait()
	if rest := len(moved) - len(moved)/3; total != rest {
		t.Errorf("the upgrades moved %d untagged keys, want %d", total, rest)
	}
	n.checkSharded(t)
}

// TestUpgradeKeysRefusesToOverwrite: a key under both prefixes stops the
// upgrade with an error naming both, and neither is changed.
func TestUpgradeKeysRefusesToOverwrite(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	p, old := keyspace.Prefix(f.ns), keyspace.OldPrefix(f.ns)
	f.rdb.Set(ctx, old+"acct:seq", "7", 0)
	f.rdb.Set(ctx, p+"acct:seq", "9", 0)
	_, err := UpgradeKeys(ctx, f.rdb, f.ns, UpgradeOptions{})
	if err == nil || !strings.Contains(err.Error(), old+"acct:seq") || !strings.Contains(err.Error(), p+"acct:seq") {
		t.Fatalf("upgrade with a key under both prefixes: %v; want an error naming both", err)
	}
	if a, b := f.rdb.Get(ctx, old+"acct:seq").Val(), f.rdb.Get(ctx, p+"acct:seq").Val(); a != "7" || b != "9" {
		t.Errorf("after the refused upgrade: %s and %s", a, b)
	}
	if f.rdb.Exists(ctx, p+"layout").Val() != 0 {
		t.Error("the refused upgrade marked the namespace upgraded")
	}
	f.rdb.Del(ctx, old+"acct:seq")
}

// TestUpgradeKeysRefusesUnknownLayout: a layout mark this version does not
// know (a newer version's) stops the start, saying so, and moves nothing.
func TestUpgradeKeysRefusesUnknownLayout(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	p := keyspace.Prefix(f.ns)
	f.rdb.Set(ctx, p+"layout", "sharded-by-watch", 0)
	f.rdb.HSet(ctx, p+"acct:acc_1", "name", "Kept")
	if _, err := UpgradeKeys(ctx, f.rdb, f.ns, UpgradeOptions{}); err == nil || !strings.Contains(err.Error(), `"sharded-by-watch"`) {
		t.Errorf("upgrade of a namespace in an unknown layout: %v; want an error naming it", err)
	}
	if f.rdb.Exists(ctx, p+"acct:acc_1").Val() != 1 {
		t.Error("the refused upgrade moved a key")
	}
}
