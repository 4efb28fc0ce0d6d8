package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/redisstore/layouttest"
	"github.com/noticesd/noticesd/internal/testservers"
)

// taggedNamespace is a fixture's namespace loaded with
// testdata/layout-tagged.json, what it held before the upgrade (before)
// and where each key must be after it (names).
type taggedNamespace struct {
	fixture
	fx     layouttest.Fixture
	before map[string]keyState
	names  map[string][]string
}

// loadTagged loads the tagged-layout fixture into a fresh namespace on
// target and gives an account hash and a register ids string a time to
// live (the fixture's moved keys have none), so that keeping it is seen.
func loadTagged(t *testing.T, target config.Config) taggedNamespace {
	t.Helper()
	ctx := context.Background()
	f := newFixtureOn(t, target, Options{})
	t.Cleanup(func() { // the namespace's keys under the new tags too
		if keys := namespaceKeys(t, f.rdb, f.ns); len(keys) > 0 {
			for _, k := range keys {
				f.rdb.Del(ctx, k)
			}
		}
	})
	fx := layouttest.Load(t, f.rdb, f.ns, layouttest.Tagged)
	p := keyspace.Prefix(f.ns)
	for _, k := range []string{p + "acct:" + fx.Expect.Alpha, p + "reg:1:ids:6"} {
		if !f.rdb.PExpire(ctx, k, time.Hour).Val() {
			t.Fatalf("%s is not in the fixture", k)
		}
	}
	keys := namespaceKeys(t, f.rdb, f.ns)
	names := map[string][]string{}
	for _, k := range keys {
		names[k] = shardedNames(t, f.rdb, f.ns, k)
	}
	return taggedNamespace{fixture: f, fx: fx, before: snapshot(t, f.rdb, keys), names: names}
}

// checkSharded: every key the namespace held is under its names of the
// sharded layout (shardedNames) with its value and time to live; no other
// key is left (no old account hash, register ids string, rate bucket or
// heavy set; the API key directory is kept); the mark says sharded, and
// another upgrade moves nothing.
func (n taggedNamespace) checkSharded(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	want := map[string]keyState{}
	for k, s := range n.before {
		for _, name := range n.names[k] {
			want[name] = s
		}
	}
	mark := keyspace.Prefix(n.ns) + "layout"
	got := snapshot(t, n.rdb, namespaceKeys(t, n.rdb, n.ns))
	if v := got[mark].value; v != layoutSharded {
		t.Errorf("layout mark %v, want %s", v, layoutSharded)
	}
	delete(got, mark)
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s is missing", k)
		case !reflect.DeepEqual(g.value, w.value):
			t.Errorf("%s = %v, want %v", k, g.value, w.value)
		case (w.ttl < 0) != (g.ttl < 0) || g.ttl > w.ttl:
			t.Errorf("%s has time to live %v, want %v (at most)", k, g.ttl, w.ttl)
		}
	}
	moved := 0
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s is left (or appeared)", k)
		}
		if strings.HasPrefix(k, "{"+n.ns+":a:") {
			moved++
		}
	}
	if moved < 5 {
		t.Errorf("only %d keys under account tags: the fixture moved too little", moved)
	}
	if again, err := UpgradeKeys(ctx, n.rdb, n.ns, UpgradeOptions{}); err != nil || again.Total() != 0 {
		t.Errorf("a second upgrade: %v, %v; want nothing moved", again, err)
	}
}

// TestMigrateTaggedLayout: a namespace written by the store of the tagged
// layout (testdata/layout-tagged.json), on one Redis and on a cluster, is
// brought to the sharded layout: every account hash, API key (copied: the
// directory stays) and register ids string under its new name with its
// value and time to live, the rate buckets and heavy sets deleted, the
// rest untouched; a second run moves nothing. An upgrade stopped as a
// crash would (after 3 keys written under their new name, before any old
// one is deleted) is finished by the next. An account hash under both
// names with different values stops the upgrade with an error naming
// both, nothing changed.
func TestMigrateTaggedLayout(t *testing.T) {
	for _, c := range []struct {
		name   string
		target func(*testing.T) config.Config
	}{
		{"single", func(t *testing.T) config.Config { return config.Config{RedisURL: testservers.Redis(t)} }},
		{"cluster", func(t *testing.T) config.Config { return config.Config{RedisClusterURL: testservers.RedisCluster(t)} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			target := c.target(t)
			t.Run("moves", func(t *testing.T) {
				n := loadTagged(t, target)
				done, err := UpgradeKeys(ctx, n.rdb, n.ns, UpgradeOptions{})
				if err != nil {
					t.Fatal(err)
				}
				want := Upgraded{"accounts": 4, "api keys": 8, "register identifier sets": 3, "rate buckets (deleted)": 1, "heavy slots (deleted)": 1}
				if !reflect.DeepEqual(done, want) {
					t.Errorf("upgrade did %v, want %v", done, want)
				}
				n.checkSharded(t)
			})
			t.Run("interrupted", func(t *testing.T) {
				n := loadTagged(t, target)
				if _, err := UpgradeKeys(ctx, n.rdb, n.ns, UpgradeOptions{crashAfter: 3}); !errors.Is(err, errCrashed) {
					t.Fatalf("upgrade stopped after 3 keys: %v", err)
				}
				if n.rdb.Get(ctx, keyspace.Prefix(n.ns)+"layout").Val() == layoutSharded {
					t.Fatal("the stopped upgrade marked the namespace sharded")
				}
				written := 0
				for _, k := range namespaceKeys(t, n.rdb, n.ns) {
					if strings.HasPrefix(k, "{"+n.ns+":") {
						written++
					}
				}
				if written != 3 {
					t.Fatalf("the stopped upgrade wrote %d keys under new names, want 3", written)
				}
				if _, err := UpgradeKeys(ctx, n.rdb, n.ns, UpgradeOptions{}); err != nil {
					t.Fatal(err)
				}
				n.checkSharded(t)
			})
			t.Run("both names", func(t *testing.T) {
				n := loadTagged(t, target)
				old, other := keyspace.Prefix(n.ns)+"acct:"+n.fx.Expect.Alpha, keyspace.Account(n.ns, n.fx.Expect.Alpha)+"acct"
				n.rdb.HSet(ctx, other, "name", "Someone Else")
				_, err := UpgradeKeys(ctx, n.rdb, n.ns, UpgradeOptions{})
				if err == nil || !strings.Contains(err.Error(), old) || !strings.Contains(err.Error(), other) {
					t.Fatalf("upgrade with %s under both names: %v; want an error naming both", n.fx.Expect.Alpha, err)
				}
				if !reflect.DeepEqual(snapshot(t, n.rdb, []string{old})[old].value, n.before[old].value) || n.rdb.HGet(ctx, other, "name").Val() != "Someone Else" {
					t.Error("the refused upgrade changed a name")
				}
				if n.rdb.Get(ctx, keyspace.Prefix(n.ns)+"layout").Val() == layoutSharded {
					t.Error("the refused upgrade marked the namespace sharded")
				}
			})
		})
	}
}

// TestMigratedLayoutReads: the namespace of testdata/layout-tagged.json,
// upgraded, answers through the store's public API as it did when it was
// written: each plaintext key authenticates as its account (the rotated
// ones do not), ListAccounts, each account's watches and each watch's
// deliveries, and a screen's answer. The notice source (SQLite here,
// Elasticsearch in production) is not Redis: the notices are stored in
// it again first, with their seqs.
func TestMigratedLayoutReads(t *testing.T) {
	ctx := context.Background()
	n := loadTagged(t, config.Config{RedisURL: testservers.Redis(t)})
	for _, nt := range n.fx.Expect.Notices {
		if _, err := n.notices.UpsertNotices(ctx, []notice.Notice{nt}); err != nil {
			t.Fatal(err)
		}
		got, err := n.notices.NoticesBySeq(ctx, []int64{nt.Seq})
		if err != nil || len(got) != 1 || got[0].ID != nt.ID {
			t.Fatalf("notice %s stored again: %v %v; want it at seq %d", nt.ID, got, err, nt.Seq)
		}
	}
	l, err := n.notices.BeginRegister(ctx)
	if err == nil {
		if err = l.Add(ctx, n.fx.Expect.Register); err == nil {
			err = l.Commit(ctx)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := UpgradeKeys(ctx, n.rdb, n.ns, UpgradeOptions{}); err != nil {
		t.Fatal(err)
	}
	checkLayoutReads(t, n.rs, n.fx.Expect)
}

// checkLayoutReads checks what rs answers against the fixture's reads.
func checkLayoutReads(t *testing.T, rs *Store, want layouttest.Expect) {
	t.Helper()
	ctx := context.Background()
	for _, k := range want.Keys {
		p, err := rs.Authenticate(ctx, k.Key)
		switch {
		case !k.Valid && !errs.Is(err, errs.Unauthorised):
			t.Errorf("rotated %s key of %s: %+v %v; want unauthorised", k.Kind, k.Account, p, err)
		case k.Valid && (err != nil || p.Account.ID != k.Account || p.Kind.String() != k.Kind):
			t.Errorf("%s key of %s: %+v %v", k.Kind, k.Account, p, err)
		}
	}
	accts, err := rs.ListAccounts(ctx)
	if err != nil || !reflect.DeepEqual(accts, want.Accounts) {
		t.Errorf("ListAccounts = %+v, %v; want %+v", accts, err, want.Accounts)
	}
	for _, a := range want.Accounts {
		ws, err := rs.ListWatches(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, w := range ws {
			ids = append(ids, w.ID)
			ds, err := rs.Deliveries(ctx, a.ID, w.ID, 100)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range ds {
				got = append(got, d.ID+" "+string(d.Status))
			}
			if wd := want.Deliveries[a.ID+"/"+w.ID]; !slices.Equal(got, wd) {
				t.Errorf("deliveries of %s: %v, want %v", w.ID, got, wd)
			}
		}
		if !slices.Equal(ids, want.Watches[a.ID]) {
			t.Errorf("watches of %s: %v, want %v", a.ID, ids, want.Watches[a.ID])
		}
	}
	var ids []ident.ID
	for _, v := range want.Screen.IDs {
		id, _ := ident.Normalise(v)
		ids = append(ids, id)
	}
	res, err := rs.Screen(ctx, ids, notice.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	var got, wantAnswer any
	_ = json.Unmarshal(b, &got)
	_ = json.Unmarshal(want.Screen.Answer, &wantAnswer)
	if !reflect.DeepEqual(got, wantAnswer) {
		t.Errorf("screen of %v:\n got %s\nwant %s", want.Screen.IDs, b, want.Screen.Answer)
	}
}

// TestSameValue: two keys holding one value are the same even when their
// DUMPs differ (a set of 1,000 members, a hash table, added in opposite
// orders: its members are dumped in the order of its table), and a
// member more makes them differ; so a move a crash interrupted on a
// cluster (RESTORE done, DEL not) is finished, not refused.
func TestSameValue(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	a, b := keyspace.Prefix(f.ns)+"same:a", keyspace.Prefix(f.ns)+"same:b"
	for i := range 1000 {
		f.rdb.SAdd(ctx, a, "member-"+strconv.Itoa(i))
		f.rdb.SAdd(ctx, b, "member-"+strconv.Itoa(999-i))
	}
	if f.rdb.Dump(ctx, a).Val() == f.rdb.Dump(ctx, b).Val() {
		t.Fatal("the two sets dump alike: the test does not reach the comparison by members")
	}
	if same, err := sameValue(ctx, f.rdb, a, b); !same || err != nil {
		t.Errorf("sameValue of one set added in two orders = %v, %v; want true", same, err)
	}
	f.rdb.SAdd(ctx, b, "member-1000")
	if same, err := sameValue(ctx, f.rdb, a, b); same || err != nil {
		t.Errorf("sameValue of sets one member apart = %v, %v; want false", same, err)
	}
}
