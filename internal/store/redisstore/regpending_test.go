package redisstore

import (
	"context"
	"slices"
	"testing"

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
// register. Real Elasticsearch and Redis; the death is the test's stop
// between the steps.
func TestRegisterLoadIsOneGeneration(t *testing.T) {
	ctx := context.Background()
	rdb := redisClient(t)
	for _, c := range []struct {
		name     string
		stop     string // the step the loader dies before
		want     string // what CompleteRegister does
		onNewReg bool   // both stores end on the new register
	}{
		{"died after the Elasticsearch swap", "register-switch", "switched", true},
		{"died before the Elasticsearch swap", "register-commit", "dropped", false},
	} {
		t.Run(c.name, func(t *testing.T) {
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
			w := Ingest{Notices: es, Redis: rs}
			oldRows := storetest.RegisterRows()
			storetest.LoadRegister(t, storetest.Backend{Register: w}, oldRows)
			newACN := acn(4242)
			newRows := []notice.RegisterRow{{CompanyName: "NEW GENERATION PTY LTD", ACN: newACN, Type: "APTY", Class: "LMSH",
				SubClass: "PROP", Status: "REGD", RegisteredOn: "2020-01-01"}}
			// The loader dies at c.stop.
			rs.stopBefore = func(step string) bool { return step == c.stop }
			l, err := w.BeginRegister(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Add(ctx, newRows); err != nil {
				t.Fatal(err)
			}
			if err := l.Commit(ctx); err == nil {
				t.Fatal("the stopped load committed")
			}
			rs.stopBefore = nil
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
			if err := rdb.Del(ctx, rs.key("reg", "pending", "lease")).Err(); err != nil {
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
			if n, _ := rdb.Exists(ctx, rs.key("reg", "pending")).Result(); n != 0 {
				t.Error("the marker is still there after CompleteRegister")
			}
			if how, err := rs.CompleteRegister(ctx); err != nil || how != "" {
				t.Errorf("a second CompleteRegister = %q, %v; want nothing to do", how, err)
			}
		})
	}
}
