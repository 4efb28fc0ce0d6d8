package redisstore

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/redis/go-redis/v9"
)

// TestInterruptedDeleteIsSwept: a delete that stops after its first step
// (its process killed after deleteScript) has made the watch gone
// for every reader but left its remains in trash:<id>:*: its reverse-index
// entries, its companies still counted, its delivery records still in the
// gauges. Once the deleter's lease has run out the sweep (Reconcile)
// finishes it: the index entries are gone, the account counts exactly the
// companies of its remaining watch (a shared one stays), the gauges count
// no delivery of the deleted watch, and no trash key is left. A delete
// left by an older version (trash:<id>:keys alone, no trash entry) is
// finished too.
func TestInterruptedDeleteIsSwept(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	accountID, watchID := f.alphaWatch(t)
	f.failDeliveriesN(t, accountID, watchID, 2) // two dead records
	f.deliver(t, watchID, "PENDING-1")          // and one pending
	plan := account.DefaultPlans()["enterprise"]
	ids := []ident.ID{{Kind: ident.ACN, Value: acn(1)}, {Kind: ident.ACN, Value: acn(2)}}
	big, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: append(idsOf(t, storetest.ACNAlpha), ids...)},
		accountID, f.clock.Now()), plan)
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: ids[:1]}, accountID, f.clock.Now()), plan)
	if err != nil {
		t.Fatal(err)
	}
	companies := func() []string {
		t.Helper()
		m, err := f.rdb.SMembers(ctx, f.rs.akey(accountID, companiesKey)).Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(m)
		return m
	}
	trashKeys := func() []string {
		t.Helper()
		// SCAN on every master: KEYS goes to one node of a cluster.
		var k []string
		if err := scanKeys(ctx, f.rdb, f.rs.akey(accountID, trashKey)+"*", 1000, func(keys []string) error {
			k = append(k, keys...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return k
	}
	for _, id := range []string{watchID, big.ID} {
		restore := killAt(f.rdb, after(deleteScript))
		if err := f.rs.DeleteWatch(ctx, accountID, id); !errors.Is(err, errKilled) {
			t.Fatalf("delete %s: %v; want killed after its first step", id, err)
		}
		restore()
	}
	if _, err := f.rs.Watch(ctx, accountID, watchID); err == nil {
		t.Fatal("the watch is still readable after the first step of its delete")
	}
	if len(trashKeys()) == 0 {
		t.Fatal("the stopped delete left no trash: the test did not stop it after its first step")
	}
	// An older version's leftover: trash:<id>:keys and ixabn, no entry.
	old := "w_oldversion"
	f.rdb.HSet(ctx, f.rs.akey(accountID, watchKey, old), "account", accountID) // indexed while it existed
	if err := f.rs.indexKeys(ctx, old, []string{acn(7)}, nil); err != nil {
		t.Fatal(err)
	}
	f.rdb.Del(ctx, f.rs.akey(accountID, watchKey, old))
	f.rdb.Set(ctx, f.rs.akey(accountID, trashKey, old, "keys"), acn(7), 0)
	f.rdb.Set(ctx, f.rs.akey(accountID, trashKey, old, "ixabn"), "", 0)

	// Within the deleter's lease the sweep leaves the deletes alone.
	if n, err := f.rs.Reconcile(ctx, f.clock.Now()); err != nil || n != 1 {
		t.Fatalf("sweep within the lease = %d, %v; want only the older version's leftover", n, err)
	}
	f.clock.Advance(createLease + 1)
	if n, err := f.rs.Reconcile(ctx, f.clock.Now()); err != nil || n != 2 {
		t.Fatalf("Reconcile = %d, %v; want the two stopped deletes finished", n, err)
	}
	if k := trashKeys(); len(k) != 0 {
		t.Errorf("trash keys left after the sweep: %v", k)
	}
	if got, want := companies(), []string{acn(1)}; !slices.Equal(got, want) {
		t.Errorf("account companies %v, want %v (the remaining watch's)", got, want)
	}
	for _, k := range []string{storetest.ACNAlpha, acn(2), acn(7)} {
		holders, err := f.rs.indexHolders(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(holders) != 0 {
			t.Errorf("reverse index still names %v for %s", holders, k)
		}
	}
	if holders, err := f.rs.indexHolders(ctx, acn(1)); err != nil || !slices.Equal(holders, []string{other.ID}) {
		t.Errorf("reverse index for %s: %v, %v; want the remaining watch only", acn(1), holders, err)
	}
	stat, err := f.rdb.HMGet(ctx, f.rs.akey(accountID, dstatKey), "pending", "dead").Result()
	if err != nil {
		t.Fatal(err)
	}
	if str(stat[0]) != "0" || str(stat[1]) != "0" {
		t.Errorf("delivery gauges pending %v dead %v after the sweep; want 0 and 0", stat[0], stat[1])
	}
	if n, _ := f.rdb.ZCard(ctx, f.rs.akey(accountID, ddueKey)).Result(); n != 0 {
		t.Errorf("%d due deliveries of the deleted watch left in the gauge", n)
	}
}

// indexHolders returns the watches the reverse index names for key k.
func (s *Store) indexHolders(ctx context.Context, k string) ([]string, error) {
	first, err := s.rdb.HGet(ctx, s.key(rixKey, rixBucket(k)), k).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	more, err := s.rdb.SMembers(ctx, s.key(rixsKey, k)).Result()
	if err != nil {
		return nil, err
	}
	var out []string
	if first != "" {
		out = append(out, first)
	}
	return append(out, more...), nil
}
