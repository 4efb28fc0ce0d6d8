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

// TestUpgradeKeys: a namespace in the layout of older versions (the Redis
// store's keys under "ns:", the publish log's already under "{ns}:"),
// half upgraded by an upgrade that stopped, is upgraded by three
// processes starting at once: every key is back under "{ns}:" with its
// value, none is left under "ns:", the store reads its accounts again,
// and a later start moves nothing.
func TestUpgradeKeys(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	familyWorkload(t, f)
	acct, err := f.rs.CreateAccount(ctx, "Upgrade Co", "standard")
	if err != nil {
		t.Fatal(err)
	}
	want := dumpNamespace(t, f)

	// Back to the old layout.
	p, old := keyspace.Prefix(f.ns), keyspace.OldPrefix(f.ns)
	logKeys := publog.KeysFor(f.ns)
	tagged := reflect.ValueOf(logKeys)
	keep := map[string]bool{}
	for i := 0; i < tagged.NumField(); i++ {
		keep[tagged.Field(i).String()] = true
	}
	var moved []string
	for k := range want {
		if !keep[k] {
			if err := f.rdb.Rename(ctx, k, old+strings.TrimPrefix(k, p)).Err(); err != nil {
				t.Fatal(err)
			}
			moved = append(moved, k)
		}
	}
	if len(moved) < 20 { // the accounts' watches and deliveries are under their own tags, not moved here
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
			n, err := UpgradeKeys(ctx, f.rdb, f.ns)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if rest := len(moved) - len(moved)/3; total != rest {
		t.Errorf("the upgrades moved %d keys, want %d", total, rest)
	}
	if left := f.rdb.Keys(ctx, old+"*").Val(); len(left) > 0 {
		t.Errorf("keys left under %s: %v", old, left)
	}
	got := dumpNamespace(t, f)
	delete(got, p+"layout")
	if !reflect.DeepEqual(got, want) {
		for k := range want {
			if got[k] != want[k] {
				t.Errorf("%s differs after the upgrade", k)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s appeared with the upgrade", k)
			}
		}
	}
	if pr, err := f.rs.Authenticate(ctx, acct.ReadKey); err != nil || pr.Account.ID != acct.AccountID {
		t.Errorf("authenticate after the upgrade: %+v %v", pr, err)
	}
	if n, err := UpgradeKeys(ctx, f.rdb, f.ns); n != 0 || err != nil {
		t.Errorf("a second upgrade moved %d keys (%v), want none", n, err)
	}
}

// TestUpgradeKeysRefusesToOverwrite: a key under both prefixes stops the
// upgrade with an error naming both, and neither is changed.
func TestUpgradeKeysRefusesToOverwrite(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	p, old := keyspace.Prefix(f.ns), keyspace.OldPrefix(f.ns)
	f.rdb.Set(ctx, old+"acct:seq", "7", 0)
	f.rdb.Set(ctx, p+"acct:seq", "9", 0)
	_, err := UpgradeKeys(ctx, f.rdb, f.ns)
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

// dumpNamespace returns every key under the namespace's prefix with its
// serialized value (DUMP).
func dumpNamespace(t *testing.T, f fixture) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	iter := f.rdb.Scan(ctx, 0, keyspace.Prefix(f.ns)+"*", 1000).Iterator()
	for iter.Next(ctx) {
		v, err := f.rdb.Dump(ctx, iter.Val()).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[iter.Val()] = v
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
