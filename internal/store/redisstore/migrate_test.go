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

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/redisstore/layouttest"
	"github.com/noticesd/noticesd/internal/testservers"
)

// taggedNamespace is a fixture's namespace loaded with
// testdata/layout-tagged.json and handMade, and what it held before the
// upgrade.
type taggedNamespace struct {
	fixture
	fx     layouttest.Fixture
	before map[string]keyState
}

// Hand-made old-layout keys (handMade): a watch whose create stopped half
// way, a watch deleted since, a create that died before its script.
const (
	halfway = "wch_halfwayaaaaaaaaaaaaaaaaaa"
	gone    = "wch_goneaaaaaaaaaaaaaaaaaaaaa"
	staged  = "wch_stagedaaaaaaaaaaaaaaaaaaa"
	owed    = "wch_2gpm35sh3yhteiruclrplce6ce" // the fixture's deactivated watch (account Owed)
	active  = "wch_fazosqg442uxt6snk2v463xivm" // an active watch with a pending delivery
)

// handMade adds to a namespace loaded with testdata/layout-tagged.json the
// old-layout keys it lacks, written here by hand in the format the store of
// the tagged layout wrote them (before commit 7e5fb02, "watches, match
// logs, deliveries and mail under the account's hash tag"; the fixture
// itself stays as that store wrote it): a create stopped half way (its
// watch without a0, in wpend, with its account's watch list and
// companies), an attempt in flight (dlease), a reactivation to release
// (wrel), a deactivation owed (wdeact), a dead alert email (its job, in
// mdead); and what the upgrade drops or deletes: a dead job's member whose
// job expired, a sent job and an outbox entry of a watch whose delete
// finished, a create's staged companies.
func handMade(t *testing.T, rdb redis.UniversalClient, ns, alpha string) {
	t.Helper()
	ctx := context.Background()
	p := keyspace.Prefix(ns)
	dead := "deactivated:" + owed + ":1777626057000"
	sent := "digest:" + gone + ":20260430T0900Z"
	doc := `{"id":"` + halfway + `","account_id":"` + alpha + `","name":"","active":true,"identifiers":["600000002"],` +
		`"unresolved":[],"filters":{},"created_at":"2026-05-01T09:01:00Z","updated_at":"2026-05-01T09:01:00Z"}`
	_, err := rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		pl.HSet(ctx, p+"w:"+halfway, "account", alpha, "doc", doc, "eseq", "20", "regv", "1", "ixabn", "")
		pl.SAdd(ctx, p+"w:"+halfway+":co", "600000002")
		pl.Set(ctx, p+"w:"+halfway+":keys", "600000002", 0)
		pl.ZAdd(ctx, p+"acct:"+alpha+":watches", redis.Z{Score: 1777626060000, Member: halfway})
		pl.SAdd(ctx, p+"acct:"+alpha+":companies", "600000002")
		pl.SAdd(ctx, p+"watches", halfway)
		pl.ZAdd(ctx, p+"wpend", redis.Z{Score: 1777626066000, Member: halfway})
		pl.ZAdd(ctx, p+"dlease", redis.Z{Score: 1777626068000, Member: active + "|dlv_fyzmdamdzhi235dc4b4eeeek6m|20"})
		pl.SAdd(ctx, p+"wrel", active)
		pl.HSet(ctx, p+"wdeact", owed, `{"n":10,"e":"HTTP 503","at":"2026-05-01T09:00:57.000Z"}`)
		pl.HSet(ctx, p+"mail:"+dead, "job", `{"id":"`+dead+`","kind":"deactivated","watch_id":"`+owed+`","to":"ops@example.com"}`,
			"kind", "deactivated", "watch", owed, "status", "dead", "attempts", "5", "last_error", "550 no such user", "updated_at", "2026-05-01T09:00:59.000Z")
		pl.PExpire(ctx, p+"mail:"+dead, 30*24*time.Hour)
		pl.ZAdd(ctx, p+"mdead", redis.Z{Score: 1777626059000, Member: dead}, redis.Z{Score: 1777000001000, Member: "deactivated:" + owed + ":1777000000000"})
		pl.HSet(ctx, p+"mail:"+sent, "job", `{"id":"`+sent+`","kind":"digest","watch_id":"`+gone+`","to":"ops@example.com"}`,
			"kind", "digest", "watch", gone, "status", "sent", "attempts", "1", "updated_at", "2026-04-30T09:00:10.000Z")
		pl.PExpire(ctx, p+"mail:"+sent, 29*24*time.Hour)
		pl.ZAdd(ctx, p+"dq", redis.Z{Score: 1777626000000, Member: gone + "|dlv_goneaaaaaaaaaaaaaaaaaaaaa|7"})
		pl.SAdd(ctx, p+"stage:"+staged+":co", "700000004")
		pl.Expire(ctx, p+"stage:"+staged+":co", time.Hour)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// loadTagged loads the tagged-layout fixture and handMade into a fresh
// namespace on target and gives an account hash and a register ids string
// a time to live (the fixture's moved keys have none), so that keeping it
// is seen.
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
	handMade(t, f.rdb, f.ns, fx.Expect.Alpha)
	p := keyspace.Prefix(f.ns)
	for _, k := range []string{p + "acct:" + fx.Expect.Alpha, p + "reg:1:ids:6"} {
		if !f.rdb.PExpire(ctx, k, time.Hour).Val() {
			t.Fatalf("%s is not in the fixture", k)
		}
	}
	return taggedNamespace{fixture: f, fx: fx, before: snapshot(t, f.rdb, namespaceKeys(t, f.rdb, f.ns))}
}

// checkSharded: the namespace holds what shardedState says of what it held
// before, every key with its value and time to live (at most), and nothing
// else but the layout mark, which says sharded; another upgrade moves
// nothing.
func (n taggedNamespace) checkSharded(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	want := shardedState(t, n.ns, n.before)
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

// targets are the two kinds of Redis the migration runs on.
var targets = []struct {
	name   string
	target func(*testing.T) config.Config
}{
	{"single", func(t *testing.T) config.Config { return config.Config{RedisURL: testservers.Redis(t)} }},
	{"cluster", func(t *testing.T) config.Config { return config.Config{RedisClusterURL: testservers.RedisCluster(t)} }},
}

// TestMigrateTaggedLayout: a namespace written by the store of the tagged
// layout (testdata/layout-tagged.json and handMade), on one Redis and on a
// cluster, is brought to the sharded layout (checkSharded): the watch
// directory first, every account hash, API key (copied: the directory
// stays), register ids string, account watch list, watch, match log,
// delivery list and mail job under its new name with its value and time to
// live, the shared queues split into their accounts' with the wake sets
// noted, the rate buckets, heavy sets, staged companies and shared watch
// sets deleted, what belongs to no watch dropped, the rest untouched; a
// second run moves nothing. Upgrades stopped as a crash would after every
// N writes under a new name (a directory entry, a key before its old name
// is deleted, members before they leave the shared key), for several N,
// are finished by the next. An account hash under both names with
// different values, a directory entry naming another account, and a delete
// an older version began without its account each stop the upgrade with
// an error naming them, nothing moved.
func TestMigrateTaggedLayout(t *testing.T) {
	for _, c := range targets {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			target := c.target(t)
			t.Run("moves", func(t *testing.T) {
				n := loadTagged(t, target)
				done, err := UpgradeKeys(ctx, n.rdb, n.ns, UpgradeOptions{})
				if err != nil {
					t.Fatal(err)
				}
				want := Upgraded{"watch directory": 5, "accounts": 4, "api keys": 8, "register identifier sets": 3,
					"rate buckets (deleted)": 1, "heavy slots (deleted)": 1, "account watch lists": 6, "watches": 12, "match logs": 3,
					"deliveries": 6, "mail": 3, "mail (dropped)": 1, "deletes under way": 4, "delivery queues": 14,
					"delivery queues (dropped)": 1, "create leases": 1, "delete leases": 1, "reactivations": 1,
					"owed deactivations": 1, "mail queues": 2, "mail queues (dropped)": 1, "shared watch sets (deleted)": 3,
					"staged companies (deleted)": 1}
				if !reflect.DeepEqual(done, want) {
					t.Errorf("upgrade did %v, want %v", done, want)
				}
				n.checkSharded(t)
			})
			for _, every := range []int{1, 4, 11, 40} {
				t.Run("interrupted every "+strconv.Itoa(every), func(t *testing.T) {
					n := loadTagged(t, target)
					runs := 0
					for ; ; runs++ {
						_, err := UpgradeKeys(ctx, n.rdb, n.ns, UpgradeOptions{crashAfter: every})
						if err == nil {
							break
						}
						if !errors.Is(err, errCrashed) || runs > 200 {
							t.Fatalf("upgrade %d stopped after %d writes: %v", runs, every, err)
						}
						if n.rdb.Get(ctx, keyspace.Prefix(n.ns)+"layout").Val() == layoutSharded {
							t.Fatal("a stopped upgrade marked the namespace sharded")
						}
					}
					if runs == 0 {
						t.Fatal("no upgrade stopped")
					}
					n.checkSharded(t)
				})
			}
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
			t.Run("directory names another account", func(t *testing.T) {
				n := loadTagged(t, target)
				dir := keyspace.Prefix(n.ns) + wacctKey
				n.rdb.HSet(ctx, dir, owed, "acc_someoneelse")
				_, err := UpgradeKeys(ctx, n.rdb, n.ns, UpgradeOptions{})
				if err == nil || !strings.Contains(err.Error(), owed) || !strings.Contains(err.Error(), "acc_someoneelse") {
					t.Fatalf("upgrade with %s of another account in %s: %v; want an error naming both", owed, dir, err)
				}
				if n.rdb.Exists(ctx, keyspace.Prefix(n.ns)+"w:"+owed).Val() != 1 {
					t.Error("the refused upgrade moved the watch")
				}
			})
			t.Run("delete without its account", func(t *testing.T) {
				n := loadTagged(t, target)
				old := keyspace.Prefix(n.ns) + "trash:wch_veryoldaaaaaaaaaaaaaaaaaaa:keys"
				n.rdb.Set(ctx, old, "600000002", 0)
				values := func() map[string]any {
					out := map[string]any{}
					for k, s := range snapshot(t, n.rdb, namespaceKeys(t, n.rdb, n.ns)) {
						out[k] = s.value
					}
					delete(out, keyspace.Prefix(n.ns)+"layout") // "tagged": no key of the untagged layout to move
					return out
				}
				before := values()
				_, err := UpgradeKeys(ctx, n.rdb, n.ns, UpgradeOptions{})
				if err == nil || !strings.Contains(err.Error(), old) || !strings.Contains(err.Error(), "previous version") {
					t.Fatalf("upgrade with %s and no account: %v; want an error naming it", old, err)
				}
				if after := values(); !reflect.DeepEqual(after, before) {
					t.Errorf("the refused upgrade changed keys:\n%v\nwas\n%v", after, before)
				}
			})
		})
	}
}

// TestMigratedLayoutReads: the namespace of testdata/layout-tagged.json,
// upgraded on one Redis and on a cluster, answers through the store's
// public API as it did when it was written: each plaintext key
// authenticates as its account (the rotated ones do not), ListAccounts,
// each account's watches, each watch's match log and deliveries, and a
// screen's answer. Then the worker's paths find the moved work through the
// wake sets alone: the outbox's deliveries are due, each under its
// watch's account; the pending digest is claimed; and the sweep undoes
// the create stopped half way and finishes the delete under way. The
// notice source (SQLite here, Elasticsearch in production) is not Redis:
// the notices are stored in it again first, with their seqs.
func TestMigratedLayoutReads(t *testing.T) {
	for _, c := range targets {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			n := loadTagged(t, c.target(t))
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
			n.checkMatchLogs(t)
			n.checkWork(t)
		})
	}
}

// checkMatchLogs: each watch's match history (Matches) is the notices of
// its match log in the fixture, ascending.
func (n taggedNamespace) checkMatchLogs(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	logs := 0
	for a, ws := range n.fx.Expect.Watches {
		for _, w := range ws {
			var want []int64
			for _, z := range n.before[keyspace.Prefix(n.ns)+"wm:"+w].value.([]redis.Z) {
				seq, _ := strconv.ParseInt(z.Member.(string), 10, 64)
				want = append(want, seq)
			}
			page, err := n.rs.Matches(ctx, a, w, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, nt := range page.Notices {
				got = append(got, nt.Seq)
			}
			if !slices.Equal(got, want) {
				t.Errorf("matches of %s: %v, want %v", w, got, want)
			}
			logs += len(got)
		}
	}
	if logs < 10 {
		t.Errorf("only %d matches read", logs)
	}
}

// checkWork: the worker's and the sweeper's paths, which find an account's
// work through the wake sets, find what the upgrade moved.
func (n taggedNamespace) checkWork(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	later := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var want, got []string
	for _, z := range n.before[keyspace.Prefix(n.ns)+"dq"].value.([]redis.Z) {
		if w := strings.Split(z.Member.(string), "|")[0]; w != gone {
			want = append(want, n.rdb.HGet(ctx, keyspace.Prefix(n.ns)+wacctKey, w).Val()+" "+z.Member.(string))
		}
	}
	due, err := n.rs.ClaimDue(ctx, later, time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range due {
		got = append(got, c.AccountID+" "+c.member())
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) < 10 || !slices.Equal(got, want) {
		t.Errorf("due deliveries %v, want %v", got, want)
	}
	pending := n.before[keyspace.Prefix(n.ns)+"mq"].value.([]redis.Z)
	jobs, err := n.rs.ClaimMail(ctx, later, 10, time.Minute)
	if err != nil || len(pending) != 1 || len(jobs) != 1 || jobs[0].ID != pending[0].Member {
		t.Errorf("ClaimMail = %+v, %v; want the pending digest", jobs, err)
	}
	swept, err := n.rs.SweepStalled(ctx, later)
	if err != nil || swept != 2 {
		t.Errorf("SweepStalled = %d, %v; want the create stopped half way undone and the delete under way finished", swept, err)
	}
	for _, k := range namespaceKeys(t, n.rdb, n.ns) {
		if strings.Contains(k, halfway) || strings.Contains(k, "trash") {
			t.Errorf("%s is left after the sweep", k)
		}
	}
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
