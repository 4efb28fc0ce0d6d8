package redisstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/redis/go-redis/v9"
)

// TestReconcileFinishesHalfDoneChanges: a reactivation and a deactivation
// are each two steps in Redis (the watch's document, then its deliveries).
// When the process is killed between them (killAt), the first step has
// recorded what is owed, and Reconcile (the scheduler's sweep) finishes it:
// held deliveries are released, an owed deactivation happens, and one a
// delivered notice has made moot does not.
func TestReconcileFinishesHalfDoneChanges(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (fixture, string, string) {
		f := newFixture(t, Options{})
		accountID, watchID := f.alphaWatch(t)
		return f, accountID, watchID
	}
	reconcile := func(t *testing.T, f fixture, want int) {
		t.Helper()
		n, err := f.rs.Reconcile(ctx, f.clock.Now())
		if err != nil || n != want {
			t.Fatalf("Reconcile = %d, %v; want %d", n, err, want)
		}
		if n, err := f.rs.Reconcile(ctx, f.clock.Now()); err != nil || n != 0 {
			t.Fatalf("second Reconcile = %d, %v; want nothing left", n, err)
		}
	}
	held := func(t *testing.T, f fixture, accountID, watchID string) (held, due int) {
		t.Helper()
		recs, err := f.rs.Deliveries(ctx, accountID, watchID, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Status == delivery.Pending && r.NextAttemptAt == nil {
				held++
			} else if r.Status == delivery.Pending {
				due++
			}
		}
		return held, due
	}

	t.Run("release after a reactivation", func(t *testing.T) {
		f, accountID, watchID := setup(t)
		// One delivery fails once (pending, retry due), then the watch is
		// switched off by hand: the delivery is held.
		f.failDeliveriesN(t, accountID, watchID, 0)
		f.deliver(t, watchID, "HELD-1", false)
		off, on := false, true
		if _, err := f.rs.UpdateWatch(ctx, accountID, watchID, watch.Patch{Active: &off}, f.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if h, d := held(t, f, accountID, watchID); h != 1 || d != 0 {
			t.Fatalf("after switching off: %d held, %d due; want 1 held", h, d)
		}
		restore := killAt(f.rdb, runs(releaseScript))
		if _, err := f.rs.UpdateWatch(ctx, accountID, watchID, watch.Patch{Active: &on}, f.clock.Now()); !errors.Is(err, errKilled) {
			t.Fatalf("the reactivation killed before its release: %v; want errKilled", err)
		}
		restore()
		if h, _ := held(t, f, accountID, watchID); h != 1 {
			t.Fatalf("the kill before the release left %d held, want 1 (the test did not stop it)", h)
		}
		reconcile(t, f, 1)
		if h, d := held(t, f, accountID, watchID); h != 0 || d != 1 {
			t.Fatalf("after Reconcile: %d held, %d due; want the held delivery due", h, d)
		}
	})

	for _, tc := range []struct {
		name      string
		delivered bool // a notice is delivered before the sweep
	}{
		{"owed deactivation", false},
		{"deactivation made moot by a delivery", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, accountID, watchID := setup(t)
			// Killed at the deactivation's first read, after the outcome
			// that owes it (f.deliver lets that one outcome fail).
			restore := killAt(f.rdb, func(cmd redis.Cmder) bool {
				return cmd.Name() == "hget" && cmd.Args()[1] == f.rs.akey(accountID, wdeactKey)
			})
			f.failDeliveriesN(t, accountID, watchID, delivery.DeactivateAfter)
			restore()
			w, err := f.rs.Watch(ctx, accountID, watchID)
			if err != nil || !w.Active {
				t.Fatalf("after the kill: %+v, %v; want still active", w, err)
			}
			want := 1
			if tc.delivered {
				f.deliver(t, watchID, "OK-1", true)
				want = 0
			}
			reconcile(t, f, want)
			w, err = f.rs.Watch(ctx, accountID, watchID)
			if err != nil {
				t.Fatal(err)
			}
			if tc.delivered {
				if !w.Active {
					t.Fatalf("watch switched off although a delivery succeeded after the 10th failure: %+v", w)
				}
				return
			}
			if w.Active || !strings.Contains(w.DeactivatedReason, "10 consecutive notices") || !strings.Contains(w.DeactivatedReason, failedDelivery) {
				t.Fatalf("watch %+v; want switched off with the reason naming the count and the last error", w)
			}
		})
	}
}

// failDeliveriesN registers a webhook on the watch and makes n new notices
// of it dead through the ledger.
func (f fixture) failDeliveriesN(t *testing.T, accountID, watchID string, n int) {
	t.Helper()
	if _, err := f.rs.SetWebhook(context.Background(), accountID, watchID, "https://hooks.example.com/"+watchID, "whsec_owed", f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	fail := make([]bool, delivery.MaxAttempts)
	for i := 0; i < n; i++ {
		f.deliver(t, watchID, "FAILN-"+watchID+"-"+string(rune('a'+i)), fail...)
		f.clock.Advance(time.Second)
	}
}

// TestDeliveryRecordAsEmbedded: the delivery record shows what the embedded
// store shows: next_attempt_at null while an attempt is in flight (and
// updated_at moved to its start, which counted it in attempts), and
// updated_at moved to the reactivation when a held delivery is released.
func TestDeliveryRecordAsEmbedded(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	accountID, watchID := f.alphaWatch(t)
	f.failDeliveriesN(t, accountID, watchID, 0)
	f.deliver(t, watchID, "REC-1") // created, no attempt yet
	record := func() delivery.Record {
		t.Helper()
		recs, err := f.rs.Deliveries(ctx, accountID, watchID, 10)
		if err != nil || len(recs) != 1 {
			t.Fatalf("Deliveries = %d records, %v", len(recs), err)
		}
		return recs[0]
	}
	created := record()
	if created.NextAttemptAt == nil {
		t.Fatalf("a new delivery has no next_attempt_at: %+v", created)
	}
	f.clock.Advance(time.Minute)
	ref := Ref{WatchID: watchID, DeliveryID: created.ID, NoticeSeq: created.NoticeSeq}
	b, err := f.rs.Begin(ctx, ref, f.clock.Now(), Hold{})
	if err != nil || b.State != BeginAttempt {
		t.Fatalf("Begin = %+v, %v", b, err)
	}
	begun := notice.Timestamp(f.clock.Now())
	if r := record(); r.NextAttemptAt != nil || r.UpdatedAt != begun || r.Attempts != 1 {
		t.Fatalf("in flight: %+v; want next_attempt_at null, updated_at %s (the attempt's start), 1 attempt", r, begun)
	}
	off, on := false, true
	if _, err := f.rs.UpdateWatch(ctx, accountID, watchID, watch.Patch{Active: &off}, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := f.rs.Complete(ctx, b.Job, store.Outcome{LastError: failedDelivery, RetryUnit: storetest.DeliverRetryUnit}, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if r := record(); r.NextAttemptAt != nil {
		t.Fatalf("held: %+v; want next_attempt_at null", r)
	}
	f.clock.Advance(time.Minute)
	reactivated := f.clock.Now()
	if _, err := f.rs.UpdateWatch(ctx, accountID, watchID, watch.Patch{Active: &on}, reactivated); err != nil {
		t.Fatal(err)
	}
	want := notice.Timestamp(reactivated)
	if r := record(); r.NextAttemptAt == nil || *r.NextAttemptAt != want || r.UpdatedAt != want {
		t.Fatalf("released: %+v; want next_attempt_at and updated_at %s", r, want)
	}
}

// alphaWatch creates an account and a watch of storetest.ACNAlpha on it.
func (f fixture) alphaWatch(t *testing.T) (accountID, watchID string) {
	t.Helper()
	ctx := context.Background()
	acc, err := f.rs.CreateAccount(ctx, "Owed", "enterprise")
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, storetest.ACNAlpha)}, acc.AccountID, f.clock.Now()),
		account.DefaultPlans()["enterprise"])
	if err != nil {
		t.Fatal(err)
	}
	return acc.AccountID, w.ID
}

// TestCreateDeliveriesJudgesAtArrival: the worker creates a delivery late
// (it was down, or Elasticsearch was): a notice published 47 hours before
// it arrived is still delivered, one 49 hours old on arrival is not.
func TestCreateDeliveriesJudgesAtArrival(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	accountID, watchID := f.alphaWatch(t)
	f.failDeliveriesN(t, accountID, watchID, 0) // registers the webhook
	f.clock.Advance(time.Hour)
	batch := []notice.Notice{
		storetest.AlphaNotice("ARRIVAL-IN", f.clock.Now().Add(-47*time.Hour)),
		storetest.AlphaNotice("ARRIVAL-OUT", f.clock.Now().Add(-49*time.Hour)),
	}
	if _, err := (composite{notices: f.notices, rs: f.rs}).UpsertNotices(ctx, batch); err != nil {
		t.Fatal(err)
	}
	seq, err := f.notices.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	late := f.clock.Now().Add(72 * time.Hour)
	pairs := []Ref{{WatchID: watchID, NoticeSeq: seq - 1}, {WatchID: watchID, NoticeSeq: seq}}
	if k, err := f.rs.CreateDeliveries(ctx, pairs, late); err != nil || k != 1 {
		t.Fatalf("CreateDeliveries three days late = %d, %v; want 1", k, err)
	}
	recs, err := f.rs.Deliveries(ctx, accountID, watchID, 10)
	if err != nil || len(recs) != 1 || recs[0].NoticeID != batch[0].ID {
		t.Fatalf("records %+v, %v; want one for %s", recs, err, batch[0].ID)
	}
}

// TestReconcileUndoesStalledCreates: a create is several steps in Redis
// (the watch written, its reverse index, activation, backfill, the last
// step that marks it finished). When its creator stops before the last
// step, the watch must not stay half made (an empty match log for ever,
// counted against the quota): once the creator's lease has run out,
// Reconcile deletes it, as if the create had never happened (the client
// never got a 201), and the create can be made again.
func TestReconcileUndoesStalledCreates(t *testing.T) {
	ctx := context.Background()
	plan := account.DefaultPlans()["enterprise"]
	for _, step := range []struct {
		name   string
		script *redis.Script
	}{{"activate", activateScript}, {"finish", finishCreateScript}} {
		t.Run("stopped before "+step.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			if _, err := (composite{notices: f.notices, rs: f.rs}).UpsertNotices(ctx,
				[]notice.Notice{storetest.AlphaNotice("STALLED-BEFORE", f.clock.Now().Add(-time.Hour))}); err != nil {
				t.Fatal(err)
			}
			acc, err := f.rs.CreateAccount(ctx, "Stalled", "enterprise")
			if err != nil {
				t.Fatal(err)
			}
			newWatch := func() watch.Watch {
				return watch.New(watch.CreateRequest{Identifiers: idsOf(t, storetest.ACNAlpha)}, acc.AccountID, f.clock.Now())
			}
			counted := func() (watches, companies int64) {
				t.Helper()
				watches = f.rdb.ZCard(ctx, f.rs.akey(acc.AccountID, watchesKey)).Val()
				companies = f.rdb.SCard(ctx, f.rs.akey(acc.AccountID, companiesKey)).Val()
				return watches, companies
			}
			restore := killAt(f.rdb, runs(step.script))
			w, err := f.rs.CreateWatch(ctx, newWatch(), plan)
			if !errors.Is(err, errKilled) {
				t.Fatalf("CreateWatch killed before %s: %v; want errKilled", step.name, err)
			}
			restore()
			if n, c := counted(); n != 1 || c != 1 {
				t.Fatalf("the stalled create counts %d watches and %d companies; want 1 and 1 (it was written)", n, c)
			}
			hiddenWhilePending(t, f, acc.AccountID, w.ID)
			if n, err := f.rs.Reconcile(ctx, f.clock.Now()); err != nil || n != 0 {
				t.Fatalf("Reconcile within the lease = %d, %v; want nothing undone (the creator may still be working)", n, err)
			}
			f.clock.Advance(createLease + time.Second)
			if n, err := f.rs.Reconcile(ctx, f.clock.Now()); err != nil || n != 1 {
				t.Fatalf("Reconcile after the lease = %d, %v; want the stalled create undone", n, err)
			}
			if _, err := f.rs.Watch(ctx, acc.AccountID, w.ID); !errs.Is(err, errs.NotFound) {
				t.Fatalf("the undone watch: %v; want not_found", err)
			}
			if n, c := counted(); n != 0 || c != 0 {
				t.Fatalf("after undoing, the account counts %d watches and %d companies; want none", n, c)
			}
			if n, err := f.rs.Reconcile(ctx, f.clock.Now()); err != nil || n != 0 {
				t.Fatalf("second Reconcile = %d, %v; want nothing left", n, err)
			}
			again, err := f.rs.CreateWatch(ctx, newWatch(), plan)
			if err != nil {
				t.Fatalf("creating the watch again: %v", err)
			}
			page, err := f.rs.Matches(ctx, acc.AccountID, again.ID, 0, 10)
			if err != nil || len(page.Notices) != 1 || page.Notices[0].SourceID != "STALLED-BEFORE" {
				t.Fatalf("the recreated watch's matches: %+v, %v; want the notice published before it", page.Notices, err)
			}
			if k := f.rdb.ZCard(ctx, f.rs.akey(acc.AccountID, createsKey)).Val(); k != 0 {
				t.Fatalf("a finished create left %d entries in wpend", k)
			}
		})
	}

	// A create whose lease ran out while it still worked (its Redis calls
	// stalled) was undone under it: it must not answer 201 for a watch
	// that no longer exists.
	t.Run("undone under a live creator", func(t *testing.T) {
		f := newFixture(t, Options{})
		acc, err := f.rs.CreateAccount(ctx, "Slow", "enterprise")
		if err != nil {
			t.Fatal(err)
		}
		defer onCommand(f.rdb, func(cmd redis.Cmder) error {
			if runOf(cmd, finishCreateScript) {
				if n, err := f.rs.Reconcile(ctx, f.clock.Now().Add(createLease+time.Second)); err != nil || n != 1 {
					t.Errorf("Reconcile past the lease during the create = %d, %v; want 1", n, err)
				}
			}
			return nil
		})()
		w, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, storetest.ACNAlpha)}, acc.AccountID, f.clock.Now()), plan)
		if !errs.Is(err, errs.BackendUnavailable) {
			t.Fatalf("CreateWatch undone under it: %v; want backend_unavailable", err)
		}
		if _, err := f.rs.Watch(ctx, acc.AccountID, w.ID); !errs.Is(err, errs.NotFound) {
			t.Fatalf("the undone watch: %v; want not_found", err)
		}
	})
}

// hiddenWhilePending checks that the account does not see watch id, whose
// create has not finished: every account-scoped call answers not_found
// and the list leaves it out, as the embedded store's uncommitted create
// is invisible. Deleting it is the sweep's job, not the account's.
func hiddenWhilePending(t *testing.T, f fixture, accountID, id string) {
	t.Helper()
	ctx := context.Background()
	now := f.clock.Now()
	on := true
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Watch", func() error { _, err := f.rs.Watch(ctx, accountID, id); return err }},
		{"UpdateWatch", func() error {
			_, err := f.rs.UpdateWatch(ctx, accountID, id, watch.Patch{Active: &on}, now)
			return err
		}},
		{"Matches", func() error { _, err := f.rs.Matches(ctx, accountID, id, 0, 10); return err }},
		{"SetWebhook", func() error {
			_, err := f.rs.SetWebhook(ctx, accountID, id, "https://hooks.example.com/x", "0123456789abcdef0123456789abcdef", now)
			return err
		}},
		{"RotateSecret", func() error {
			_, err := f.rs.RotateSecret(ctx, accountID, id, "0123456789abcdef0123456789abcdef", now)
			return err
		}},
		{"DeleteWebhook", func() error { return f.rs.DeleteWebhook(ctx, accountID, id, now) }},
		{"Deliveries", func() error { _, err := f.rs.Deliveries(ctx, accountID, id, 10); return err }},
		{"DeleteWatch", func() error { return f.rs.DeleteWatch(ctx, accountID, id) }},
	} {
		if err := c.call(); !errs.Is(err, errs.NotFound) {
			t.Errorf("%s on a watch whose create has not finished: %v; want not_found", c.name, err)
		}
	}
	ws, err := f.rs.ListWatches(ctx, accountID)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.ID == id {
			t.Errorf("ListWatches shows the watch whose create has not finished")
		}
	}
	if f.rdb.Exists(ctx, f.rs.akey(accountID, watchKey, id)).Val() != 1 {
		t.Fatalf("the refused DeleteWatch removed the pending watch; only the sweep undoes a create")
	}
}

// TestStalledCreateFreesItsPlaceQuickly: a create whose process died still
// counts against the plan, but only until its lease (under 10 s) runs
// out: then the next create of the account, which it would otherwise
// refuse, undoes it and succeeds, without waiting for a worker's sweep.
// Within the lease the create is taken for alive and still counts.
func TestStalledCreateFreesItsPlaceQuickly(t *testing.T) {
	if createLease >= 10*time.Second {
		t.Fatalf("createLease is %v; a dead create must stop counting within 10 s", createLease)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		plan account.Plan
		code errs.Code
	}{
		{"watch limit", account.Plan{Name: "one", Companies: 100, Watches: 1}, errs.WatchLimitReached},
		{"company quota", account.Plan{Name: "tiny", Companies: 1, Watches: 10}, errs.QuotaExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			acc, err := f.rs.CreateAccount(ctx, "Crashed", "standard")
			if err != nil {
				t.Fatal(err)
			}
			newWatch := func(v string) watch.Watch {
				return watch.New(watch.CreateRequest{Identifiers: idsOf(t, v)}, acc.AccountID, f.clock.Now())
			}
			restore := killAt(f.rdb, runs(finishCreateScript))
			if _, err := f.rs.CreateWatch(ctx, newWatch(acn(1)), c.plan); !errors.Is(err, errKilled) {
				t.Fatalf("the create that dies: %v", err)
			}
			restore()
			f.clock.Advance(createLease - time.Second)
			if _, err := f.rs.CreateWatch(ctx, newWatch(acn(2)), c.plan); !errs.Is(err, c.code) {
				t.Fatalf("a create within the dead one's lease: %v; want %s (it may still be working)", err, c.code)
			}
			f.clock.Advance(2 * time.Second)
			w, err := f.rs.CreateWatch(ctx, newWatch(acn(2)), c.plan)
			if err != nil {
				t.Fatalf("a create after the dead one's lease ran out: %v; want it made", err)
			}
			if n := f.rdb.ZCard(ctx, f.rs.akey(acc.AccountID, watchesKey)).Val(); n != 1 {
				t.Errorf("the account counts %d watches, want the one just made (%s)", n, w.ID)
			}
			// The create asked again after undoing the dead one counts its
			// own company: the refusal must not have dropped what it staged.
			if got := f.rdb.SMembers(ctx, f.rs.akey(acc.AccountID, companiesKey)).Val(); !slices.Equal(got, []string{acn(2)}) {
				t.Errorf("the account counts companies %v, want [%s] (the watch just made)", got, acn(2))
			}
			if got := f.rdb.SMembers(ctx, f.rs.akey(acc.AccountID, watchKey, w.ID, "co")).Val(); !slices.Equal(got, []string{acn(2)}) {
				t.Errorf("the watch just made holds companies %v, want [%s]", got, acn(2))
			}
		})
	}
}
