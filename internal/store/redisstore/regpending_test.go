package redisstore

import (
	"context"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/elastic"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestRegisterLoadIsOneGeneration: a scale register load commits in
// Elasticsearch (the company view) and then in Redis (the bulk screen). A
// process that dies between the two, or between its marker and the
// Elasticsearch step, leaves the stores on different registers (or a
// Redis generation nobody will use); CompleteRegister, which every scale
// process runs when it opens its stores and the workers' sweep runs,
// finishes it once the dead loader's lease has run out, so both end on one
// register. Real Elasticsearch and Redis; the death is the test's kill
// at a Redis command between the steps (killAt).
func TestRegisterLoadIsOneGeneration(t *testing.T) {
	ctx := context.Background()
	rdb := redisClient(t)
	for _, c := range []struct {
		name     string
		killAt   func(redis.Cmder) bool // the command the loader dies before
		want     string                 // what CompleteRegister does
		onNewReg bool                   // both stores end on the new register
	}{
		{"died after the Elasticsearch swap", runs(switchRegisterScript), "switched", true},
		{"died before the Elasticsearch swap", checkingPending, "dropped", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			es, rs, oldRows := registeredScaleStores(t, rdb)
			w := Ingest{Notices: es, Redis: rs}
			newACN := acn(4242)
			newRows := []notice.RegisterRow{{CompanyName: "NEW GENERATION PTY LTD", ACN: newACN, Type: "APTY", Class: "LMSH",
				SubClass: "PROP", Status: "REGD", RegisteredOn: "2020-01-01"}}
			// The loader dies at c.killAt.
			restore := killAt(rdb, c.killAt)
			l, err := w.BeginRegister(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Add(ctx, newRows); err != nil {
				t.Fatal(err)
			}
			if err := l.Commit(ctx); err == nil {
				t.Fatal("the killed load committed")
			}
			restore()
			// What each side shows of the new company and an old one.
			oldACN := oldRows[0].ACN
			inCompanyView := func(v string) bool {
				id, _ := ident.Normalise(v)
				co, err := es.Company(ctx, id)
				return err == nil && co.Register != nil
			}
			inScreen := func(v string) bool {
				res, err := rs.Screen(ctx, idsOf(t, v), notice.Filter{})
				if err != nil {
					t.Fatal(err)
				}
				return slices.Contains(res.Unmatched, v) // in the register, no notices
			}
			if c.onNewReg && (!inCompanyView(newACN) || inScreen(newACN)) {
				t.Fatalf("premise: after the swap and before the Redis switch the company view should show %s and the screen not (view %v, screen %v)",
					newACN, inCompanyView(newACN), inScreen(newACN))
			}
			// The loader's lease still runs: nothing is done yet.
			if how, err := rs.CompleteRegister(ctx); err != nil || how != "" {
				t.Fatalf("CompleteRegister while the loader's lease runs = %q, %v; want nothing done", how, err)
			}
			// Its lease runs out (a dead loader renews nothing).
			if err := rdb.Del(ctx, rs.key(regKey, "pending", "lease")).Err(); err != nil {
				t.Fatal(err)
			}
			how, err := rs.CompleteRegister(ctx)
			if err != nil || how != c.want {
				t.Fatalf("CompleteRegister = %q, %v; want %q", how, err, c.want)
			}
			for _, v := range []struct {
				acn  string
				want bool
			}{{newACN, c.onNewReg}, {oldACN, !c.onNewReg}} {
				if view, screen := inCompanyView(v.acn), inScreen(v.acn); view != v.want || screen != v.want {
					t.Errorf("%s: company view has it %v, screen has it %v; want both %v", v.acn, view, screen, v.want)
				}
			}
			if n, _ := rdb.Exists(ctx, rs.key(regKey, "pending")).Result(); n != 0 {
				t.Error("the marker is still there after CompleteRegister")
			}
			if how, err := rs.CompleteRegister(ctx); err != nil || how != "" {
				t.Errorf("a second CompleteRegister = %q, %v; want nothing to do", how, err)
			}
		})
	}
}

// TestResumedLoaderDoesNotSwitchToDroppedGeneration: a loader whose lease
// lapsed (a stalled process) while its marker was pending has its Redis
// generation dropped by CompleteRegister; when it resumes, its switch must
// see that the generation is no longer the pending one and refuse, not
// point reg:v at deleted keys (the screen would then find no company).
func TestResumedLoaderDoesNotSwitchToDroppedGeneration(t *testing.T) {
	ctx := context.Background()
	rdb := redisClient(t)
	_, rs, oldRows := registeredScaleStores(t, rdb)
	before, err := rdb.Get(ctx, rs.key(regKey, "v")).Result()
	if err != nil {
		t.Fatal(err)
	}
	l, err := rs.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add(ctx, []notice.RegisterRow{{CompanyName: "STALLED LOAD PTY LTD", ACN: acn(4243), Status: "REGD"}}); err != nil {
		t.Fatal(err)
	}
	// The marker names an index the register alias never moves to: the
	// Elasticsearch step did not happen when CompleteRegister looks.
	stop, err := l.markPending(ctx, rs.ns+"-never-swapped")
	if err != nil {
		t.Fatal(err)
	}
	stop() // the loader stalls: nothing renews its lease
	if err := rdb.Del(ctx, rs.key(regKey, "pending", "lease")).Err(); err != nil {
		t.Fatal(err)
	}
	if how, err := rs.CompleteRegister(ctx); err != nil || how != "dropped" {
		t.Fatalf("CompleteRegister = %q, %v; want dropped", how, err)
	}
	// The loader resumes and commits.
	if err := l.Commit(ctx); err == nil {
		t.Error("the resumed loader's switch to its dropped generation succeeded")
	}
	if now, _ := rdb.Get(ctx, rs.key(regKey, "v")).Result(); now != before {
		t.Errorf("reg:v = %q after the refused switch; want the generation before the load, %q", now, before)
	}
	res, err := rs.Screen(ctx, idsOf(t, oldRows[0].ACN), notice.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Unmatched, oldRows[0].ACN) {
		t.Errorf("after the refused switch the screen no longer knows %s (the register in use): %+v", oldRows[0].ACN, res)
	}
}

// registeredScaleStores opens an Elasticsearch store and a Redis store on
// it in a namespace of the test's, and loads the fixture register into
// both (returned).
func registeredScaleStores(t *testing.T, rdb redis.UniversalClient) (*elastic.Store, *Store, []notice.RegisterRow) {
	t.Helper()
	ctx := context.Background()
	ns := testservers.Namespace(t)
	es, err := elastic.Open(ctx, elastic.Config{URL: testservers.Elasticsearch(t), Namespace: ns, Log: publog.New(rdb, ns, publog.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { es.Drop(context.Background()); dropNamespace(t, rdb, ns) })
	rs, err := New(rdb, ns, es, Options{Secrets: testBox(t)})
	if err != nil {
		t.Fatal(err)
	}
	rows := storetest.RegisterRows()
	storetest.LoadRegister(t, storetest.Backend{Register: Ingest{Notices: es, Redis: rs}}, rows)
	return es, rs, rows
}

// checkingPending reports the command of a register load's commit that
// checks its marker is still pending, before the Elasticsearch swap.
func checkingPending(cmd redis.Cmder) bool {
	args := cmd.Args()
	return runOf(cmd, pendingScript) && args[len(args)-1] == "check"
}

// TestStalledLoaderDoesNotSwapElasticsearch: a loader that stalls past its
// lease before its Elasticsearch step, and whose load CompleteRegister
// drops meanwhile, must not move the register alias when it resumes: the
// company view would show the new register while the screen keeps the old
// one (its Redis generation is gone). It checks that its generation is
// still the pending one first, and fails.
func TestStalledLoaderDoesNotSwapElasticsearch(t *testing.T) {
	ctx := context.Background()
	rdb := redisClient(t)
	es, rs, oldRows := registeredScaleStores(t, rdb)
	w := Ingest{Notices: es, Redis: rs}
	newACN := acn(4244)
	stalled := false
	defer onCommand(rdb, func(cmd redis.Cmder) error {
		if checkingPending(cmd) && !stalled { // stalled here past its lease
			stalled = true
			if err := rdb.Del(ctx, rs.key(regKey, "pending", "lease")).Err(); err != nil {
				t.Fatal(err)
			}
			if how, err := rs.CompleteRegister(ctx); err != nil || how != "dropped" {
				t.Fatalf("CompleteRegister = %q, %v; want dropped", how, err)
			}
		}
		return nil // and resumes
	})()
	l, err := w.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add(ctx, []notice.RegisterRow{{CompanyName: "STALLED PTY LTD", ACN: newACN, Status: "REGD", CurrentNameIndicator: "Y"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(ctx); err == nil {
		t.Error("the resumed load committed")
	}
	for _, v := range []struct {
		acn  string
		want bool
	}{{newACN, false}, {oldRows[0].ACN, true}} {
		id, _ := ident.Normalise(v.acn)
		co, err := es.Company(ctx, id)
		if inView := err == nil && co.Register != nil; inView != v.want {
			t.Errorf("the company view has %s: %v, want %v (the register the screen reads)", v.acn, inView, v.want)
		}
	}
}
