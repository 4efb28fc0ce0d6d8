package scale

import (
	"context"
	"reflect"
	"testing"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/store/redisstore/layouttest"
)

// TestOpenUpgradesKeys: a namespace written by the store of the tagged
// layout is moved to the sharded one when the store starts (Open, as
// serve and worker do): the mark says sharded, the account hashes are
// under their own tags, and the store reads the data back through its API
// as it did before: each plaintext key authenticates as its account (the
// rotated ones do not), ListAccounts, each account's watches and each
// watch's deliveries.
func TestOpenUpgradesKeys(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	rdb, err := redisstore.Dial(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	defer func() { // the namespace's keys under every tag
		for _, p := range []string{"{" + cfg.Namespace + "}:*", "{" + cfg.Namespace + ":*"} {
			iter := rdb.Scan(ctx, 0, p, 1000).Iterator()
			for iter.Next(ctx) {
				rdb.Del(ctx, iter.Val())
			}
		}
	}()
	fx := layouttest.Load(t, rdb, cfg.Namespace, layouttest.Tagged)
	st, err := Open(ctx, cfg, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Elastic.Drop(ctx); err != nil {
			t.Errorf("drop: %v", err)
		}
		st.Close()
	}()
	want := fx.Expect
	if m := rdb.Get(ctx, keyspace.Prefix(cfg.Namespace)+"layout").Val(); m != "sharded" {
		t.Errorf("layout mark %q after Open, want sharded", m)
	}
	for _, a := range want.Accounts {
		if n := rdb.Exists(ctx, keyspace.Prefix(cfg.Namespace)+"acct:"+a.ID, keyspace.Account(cfg.Namespace, a.ID)+"acct").Val(); n != 1 {
			t.Errorf("account %s under %d names after Open, want 1", a.ID, n)
		}
		if rdb.Exists(ctx, keyspace.Account(cfg.Namespace, a.ID)+"acct").Val() != 1 {
			t.Errorf("account %s is not under its own tag", a.ID)
		}
	}

	rs := st.Redis
	for _, k := range want.Keys {
		p, err := rs.Authenticate(ctx, k.Key)
		switch {
		case !k.Valid && !errs.Is(err, errs.Unauthorised):
			t.Errorf("rotated %s key of %s: %+v %v; want unauthorised", k.Kind, k.Account, p, err)
		case k.Valid && (err != nil || p.Account.ID != k.Account || p.Kind.String() != k.Kind):
			t.Errorf("%s key of %s: %+v %v", k.Kind, k.Account, p, err)
		}
	}
	if accts, err := rs.ListAccounts(ctx); err != nil || !reflect.DeepEqual(accts, want.Accounts) {
		t.Errorf("ListAccounts = %+v, %v; want %+v", accts, err, want.Accounts)
	}
	for a, wantIDs := range want.Watches {
		ws, err := rs.ListWatches(ctx, a)
		var ids []string
		for _, w := range ws {
			ids = append(ids, w.ID)
		}
		if err != nil || !reflect.DeepEqual(ids, wantIDs) {
			t.Errorf("watches of %s: %v, %v; want %v", a, ids, err, wantIDs)
		}
	}
	n := 0
	for aw, wd := range want.Deliveries {
		var acct, w string
		for i := range aw {
			if aw[i] == '/' {
				acct, w = aw[:i], aw[i+1:]
			}
		}
		ds, err := rs.Deliveries(ctx, acct, w, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range ds {
			got = append(got, d.ID+" "+string(d.Status))
		}
		if !reflect.DeepEqual(got, wd) {
			t.Errorf("deliveries of %s: %v, want %v", w, got, wd)
		}
		n += len(got)
	}
	if n < 10 {
		t.Errorf("only %d deliveries read", n)
	}
}
