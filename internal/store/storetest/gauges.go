package storetest

import (
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/internal/webhook"
)

// GaugeBackend bundles what RunGauges exercises: a mail backend (accounts,
// watches, the mail queue, failing deliveries through the ledger), its
// webhooks, its gauges, and a way to drive one delivery through the
// backend's own ledger.
type GaugeBackend struct {
	MailBackend
	Webhooks store.Webhooks
	Gauges   store.GaugeSource
	// Deliver stores one new notice of ACNAlpha (source id source)
	// published now, creates its delivery to the watch (which has a
	// webhook) through the backend's ledger, and records one attempt per
	// outcome (true: delivered; false: failed, retried after n x
	// DeliverRetryUnit), the suite's clock moving a second between
	// attempts (not after the last).
	Deliver func(t *testing.T, watchID, source string, outcomes ...bool)
	// Pend stores one new notice of ACNAlpha and creates its delivery to
	// the watch, which stays pending whatever Deliver does later (its
	// attempt in flight, or never begun). RunDeliveryRetention only.
	Pend func(t *testing.T, watchID, source string)
}

// DeliverRetryUnit is the retry unit GaugeBackend.Deliver records failed
// attempts with.
const DeliverRetryUnit = time.Millisecond

// RunGauges drives the same state changes on a backend made by open and
// checks store.Gauges after them: the numbers /metrics reports, which must
// be the same whichever backend holds the state.
func RunGauges(t *testing.T, open func(t *testing.T) GaugeBackend) {
	b := open(t)
	f := newMailFix(t, b.MailBackend)
	ctx := f.ctx
	gauges := func() store.Gauges {
		t.Helper()
		g, err := b.Gauges.Gauges(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if g := gauges(); g != (store.Gauges{AccountsActive: 1}) {
		t.Fatalf("gauges of a backend holding one account: %+v", g)
	}
	lapsed, err := b.Accounts.CreateAccount(ctx, "Lapsed Co", "standard")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Accounts.SetSubscription(ctx, lapsed.AccountID, false); err != nil {
		t.Fatal(err)
	}
	// w1: ten dead notices deactivate it and queue its alert. w7 the same,
	// then deleted: its deliveries and its pending alert go with it.
	w1 := f.watch("Deactivated")
	b.FailDeliveries(t, f.account, w1.ID)
	w7 := f.watch("Deleted after failing")
	b.FailDeliveries(t, f.account, w7.ID)
	if err := b.Watches.DeleteWatch(ctx, f.account, w7.ID); err != nil {
		t.Fatal(err)
	}
	hooked := func(name string) watch.Watch {
		t.Helper()
		w := f.watch(name)
		if _, err := b.Webhooks.SetWebhook(ctx, f.account, w.ID, "https://hooks.example.com/"+w.ID, webhook.NewSecret(), b.Clock.Now()); err != nil {
			t.Fatal(err)
		}
		return w
	}
	w2, w3, w4, w5, w6 := hooked("Delivering"), hooked("Due"), hooked("Held"), hooked("Deleted"), hooked("Unhooked")
	setActive := func(w watch.Watch, active bool) {
		t.Helper()
		if _, err := b.Watches.UpdateWatch(ctx, f.account, w.ID, watch.Patch{Active: &active}, b.Clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// w2: delivered at once, delivered on the second attempt, and one
	// failed once (pending, retry backlog, due one retry unit later).
	b.Deliver(t, w2.ID, "G-2a", true)
	b.Deliver(t, w2.ID, "G-2b", false, true)
	b.Deliver(t, w2.ID, "G-2c", false)
	// w3: pending and due; held and released again on the way.
	b.Deliver(t, w3.ID, "G-3")
	setActive(w3, false)
	setActive(w3, true)
	// w4: pending, held by the watch's deactivation (not due).
	b.Deliver(t, w4.ID, "G-4")
	setActive(w4, false)
	// w5: pending, then the watch is deleted.
	b.Deliver(t, w5.ID, "G-5")
	if err := b.Watches.DeleteWatch(ctx, f.account, w5.ID); err != nil {
		t.Fatal(err)
	}
	// w6: pending, then its webhook removed: dead.
	b.Deliver(t, w6.ID, "G-6")
	if err := b.Webhooks.DeleteWebhook(ctx, f.account, w6.ID, b.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	want := store.Gauges{
		AccountsActive: 1, AccountsLapsed: 1,
		WatchesActive: 3, WatchesInactive: 2, // w2, w3, w6; w1, w4
		DeliveriesPending: 3, DeliveriesDelivered: 2, DeliveriesDead: 11, // w2c, w3, w4; w2a, w2b; w1 x10, w6
		QueueDue:     1, // w3 (w2c is due one retry unit later, w4 is held)
		RetryBacklog: 1, // w2c
		MailPending:  1, // w1's alert (w7's went with it)
	}
	if g := gauges(); g != want {
		t.Fatalf("gauges:\n got %+v\nwant %+v", g, want)
	}
	b.Clock.Advance(DeliverRetryUnit)
	want.QueueDue = 2
	if g := gauges(); g != want {
		t.Fatalf("gauges once w2's retry is due:\n got %+v\nwant %+v", g, want)
	}
	// Reactivating w4 releases its held delivery; deactivating it again
	// holds it.
	setActive(w4, true)
	want.WatchesActive, want.WatchesInactive, want.QueueDue = 4, 1, 3
	if g := gauges(); g != want {
		t.Fatalf("gauges after w4's reactivation:\n got %+v\nwant %+v", g, want)
	}
	if err := b.Accounts.SetSubscription(ctx, lapsed.AccountID, true); err != nil {
		t.Fatal(err)
	}
	want.AccountsActive, want.AccountsLapsed = 2, 0
	if g := gauges(); g != want {
		t.Fatalf("gauges after the account's renewal:\n got %+v\nwant %+v", g, want)
	}
}
