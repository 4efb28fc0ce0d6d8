package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

// TestAttemptLeaseLapsesToRecovery: an attempt begun under a lease and
// never finished (its worker died) is refused to another task while the
// lease runs (busy) and renewed by its holder, handed out once by LapsedAttempts after it ran out,
// and taken over by the recovery task under the same attempt number; its
// outcome takes it out of the lease set. Fake clock, real Redis.
func TestAttemptLeaseLapsesToRecovery(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	accountID, watchID := f.alphaWatch(t)
	f.failDeliveriesN(t, accountID, watchID, 0)
	f.deliver(t, watchID, "LEASE-1")
	recs, err := f.rs.Deliveries(ctx, accountID, watchID, 10)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Deliveries = %d records, %v", len(recs), err)
	}
	ref := Ref{AccountID: accountID, WatchID: watchID, DeliveryID: recs[0].ID, NoticeSeq: recs[0].NoticeSeq}
	const lease = 15 * time.Second
	f.clock.Advance(time.Second)
	first, err := f.rs.Begin(ctx, ref, f.clock.Now(), Hold{Task: "dead-worker", Lease: lease})
	if err != nil || first.State != BeginAttempt || first.Job.Attempt != 1 {
		t.Fatalf("Begin = %+v, %v; want attempt 1", first, err)
	}
	lapsed := func() []Claimed {
		t.Helper()
		l, err := f.rs.LapsedAttempts(ctx, f.clock.Now(), lease, 100)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// Renewed while the attempt runs (it may wait for its endpoint's slot
	// longer than one lease).
	f.clock.Advance(lease - time.Second)
	if held, err := f.rs.Renew(ctx, ref, "dead-worker", f.clock.Now().Add(lease)); err != nil || !held {
		t.Fatalf("Renew by the holder = %v, %v; want held", held, err)
	}
	f.clock.Advance(lease - time.Second)
	if l := lapsed(); len(l) != 0 {
		t.Fatalf("LapsedAttempts while the renewed lease runs = %+v; want none", l)
	}
	if b, err := f.rs.Begin(ctx, ref, f.clock.Now(), Hold{Task: "other", Lease: lease}); err != nil || b.State != BeginBusy {
		t.Fatalf("Begin by another task while the lease runs = %+v, %v; want busy", b, err)
	}
	f.clock.Advance(2 * time.Second)
	l := lapsed()
	if len(l) != 1 || l[0].Ref != ref {
		t.Fatalf("LapsedAttempts after the lease = %+v; want the attempt of %+v", l, ref)
	}
	if again := lapsed(); len(again) != 0 {
		t.Fatalf("LapsedAttempts handed the same lapse out twice: %+v", again)
	}
	taken, err := f.rs.Begin(ctx, ref, f.clock.Now(), Hold{Task: "recovery", Lease: lease})
	if err != nil || taken.State != BeginAttempt || taken.Job.Attempt != 1 {
		t.Fatalf("Begin by the recovery task = %+v, %v; want attempt 1 again (not counted twice)", taken, err)
	}
	if b, err := f.rs.Begin(ctx, ref, f.clock.Now(), Hold{Task: "dead-worker", Lease: lease}); err != nil || b.State != BeginBusy {
		t.Fatalf("Begin by the dead worker's task run again = %+v, %v; want busy", b, err)
	}
	if held, err := f.rs.Renew(ctx, ref, "dead-worker", f.clock.Now().Add(lease)); err != nil || held {
		t.Fatalf("Renew by the task whose attempt was taken over = %v, %v; want not held", held, err)
	}
	if err := f.rs.Complete(ctx, taken.Job, store.Outcome{OK: true, RetryUnit: storetest.DeliverRetryUnit}, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	if l := lapsed(); len(l) != 0 {
		t.Fatalf("LapsedAttempts after the outcome = %+v; want none", l)
	}
	if n, _ := f.rdb.ZCard(ctx, f.rs.akey(accountID, dleaseKey)).Result(); n != 0 {
		t.Fatalf("%d attempts left in the lease set after the outcome", n)
	}
	recs, _ = f.rs.Deliveries(ctx, accountID, watchID, 10)
	if len(recs) != 1 || recs[0].Status != delivery.Delivered || recs[0].Attempts != 1 {
		t.Fatalf("record %+v; want delivered in 1 attempt", recs)
	}
}

// TestRefWithoutAccount: a task made by an older version names the watch
// and not its account; Begin, Renew and Complete find the account in the
// directory wacct, and a ref of a watch the directory does not know (its
// delete finished) is done.
func TestRefWithoutAccount(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	accountID, watchID := f.alphaWatch(t)
	f.failDeliveriesN(t, accountID, watchID, 0)
	f.deliver(t, watchID, "OLD-TASK-1")
	recs, err := f.rs.Deliveries(ctx, accountID, watchID, 10)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Deliveries = %d records, %v", len(recs), err)
	}
	// Another process (its own cache empty) reads the directory.
	w := f.sameNamespace(t, Options{Secrets: f.rs.secrets})
	old := Ref{WatchID: watchID, DeliveryID: recs[0].ID, NoticeSeq: recs[0].NoticeSeq}
	b, err := w.Begin(ctx, old, f.clock.Now(), Hold{Task: "old", Lease: 10 * time.Second})
	if err != nil || b.State != BeginAttempt || b.Job.AccountID != accountID {
		t.Fatalf("Begin of a ref without account = %+v, %v; want an attempt of account %s", b, err, accountID)
	}
	if held, err := w.Renew(ctx, old, "old", f.clock.Now().Add(10*time.Second)); err != nil || !held {
		t.Fatalf("Renew = %v, %v; want held", held, err)
	}
	job := b.Job
	job.AccountID = ""
	if err := w.Complete(ctx, job, store.Outcome{OK: true, RetryUnit: storetest.DeliverRetryUnit}, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if recs, _ = f.rs.Deliveries(ctx, accountID, watchID, 10); len(recs) != 1 || recs[0].Status != delivery.Delivered {
		t.Fatalf("record %+v; want delivered", recs)
	}
	gone := Ref{WatchID: "wch_never", DeliveryID: "dlv_x", NoticeSeq: 1}
	if b, err := w.Begin(ctx, gone, f.clock.Now(), Hold{Task: "old"}); err != nil || b.State != BeginDone {
		t.Fatalf("Begin of an unknown watch's ref = %+v, %v; want done", b, err)
	}
}
