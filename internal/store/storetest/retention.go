package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/webhook"
)

// RunDeliveryRetention checks the bound on a watch's delivery records,
// the same in every backend: the newest delivery.KeepRecords records are
// kept, a pending record is never removed, and an older final record goes
// once it is delivery.KeepAge old (each final outcome removes up to
// delivery.TrimStep of them). The deliveries route answers as before.
func RunDeliveryRetention(t *testing.T, open func(t *testing.T) GaugeBackend) {
	b := open(t)
	f := newMailFix(t, b.MailBackend)
	ctx := f.ctx
	w := f.watch("Busy")
	if _, err := b.Webhooks.SetWebhook(ctx, f.account, w.ID, "https://hooks.example.com/"+w.ID, webhook.NewSecret(), b.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	counts := func() (pending, final int) {
		t.Helper()
		g, err := b.Gauges.Gauges(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return int(g.DeliveriesPending), int(g.DeliveriesDelivered + g.DeliveriesDead)
	}
	// The oldest record stays pending, and so does one of every seven
	// (created by Pend: an attempt in flight, or never begun).
	var created, pending int
	b.Pend(t, w.ID, "KEEP-PENDING")
	created, pending = 1, 1
	for i := range delivery.KeepRecords + 30 {
		b.Clock.Advance(time.Second)
		b.Deliver(t, w.ID, fmt.Sprintf("KEEP-%04d", i), true)
		created++
		if i%7 == 3 {
			b.Pend(t, w.ID, fmt.Sprintf("KEEP-%04d-P", i))
			created, pending = created+1, pending+1
		}
	}
	// Younger than KeepAge: nothing is removed however many there are.
	if np, nf := counts(); np != pending || np+nf != created {
		t.Fatalf("%d records (%d pending) of %d (%d pending) created within %s; want none removed yet", np+nf, np, created, pending, delivery.KeepAge)
	}
	// Once they are older, each final outcome removes old final records
	// beyond the newest KeepRecords final ones; every pending one stays.
	b.Clock.Advance(delivery.KeepAge)
	for i := range 4 * delivery.TrimStep {
		b.Clock.Advance(time.Second)
		b.Deliver(t, w.ID, fmt.Sprintf("LATE-%02d", i), true)
	}
	if np, nf := counts(); np != pending || nf != delivery.KeepRecords {
		t.Errorf("after the trim: %d pending and %d final records; want every pending one (%d) and the newest %d final ones",
			np, nf, pending, delivery.KeepRecords)
	}
	recs, err := b.Webhooks.Deliveries(ctx, f.account, w.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 100 {
		t.Fatalf("the deliveries route shows %d records, want 100", len(recs))
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].CreatedAt > recs[i-1].CreatedAt {
			t.Fatalf("deliveries not newest first at %d: %s after %s", i, recs[i].CreatedAt, recs[i-1].CreatedAt)
		}
	}
	if recs[0].Status != delivery.Delivered || recs[0].DeliveredAt == nil {
		t.Errorf("newest record %+v, want the last delivered one", recs[0])
	}
}
