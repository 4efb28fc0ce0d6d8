package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/webhook"
)

// TestAbandonedAttemptRecoveredAfterItsLease: an attempt begun under a
// short lease by a worker that then died (never renewed, never finished)
// is not made by the delivery's own task while the lease runs (busy), and
// is made by a recovery task once it ran out: one request, attempt 1,
// sent after the lease's end and long before the sweep (15 s overdue)
// would find it. Real Redis and asynq; the lease is 1.5 s.
func TestAbandonedAttemptRecoveredAfterItsLease(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	w := h.watch(81, "whsec_abandoned")
	n := h.ingest("ABANDONED-1", 81, time.Now().Add(-time.Hour))
	stored, err := h.notes.Notice(ctx, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := h.rs.CreateDeliveries(ctx, []redisstore.Ref{{WatchID: w.ID, NoticeSeq: stored.Seq}}, time.Now()); err != nil || k != 1 {
		t.Fatalf("CreateDeliveries = %d, %v", k, err)
	}
	ref := redisstore.Ref{WatchID: w.ID, DeliveryID: webhook.DeliveryID(w.ID, n.ID), NoticeSeq: stored.Seq}
	const lease = 1500 * time.Millisecond
	begun := time.Now()
	if b, err := h.rs.Begin(ctx, ref, begun, redisstore.Hold{Task: "worker-that-died", Lease: lease}); err != nil || b.State != redisstore.BeginAttempt {
		t.Fatalf("Begin = %+v, %v", b, err)
	}
	s, err := New(Config{Redis: h.rdb, Namespace: h.ns, Ledger: h.rs, Sender: h.sender(), RetryUnit: unit,
		RecoverEvery: 100 * time.Millisecond, Logger: h.logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	eventually(t, 10*time.Second, "the abandoned attempt delivered", func() bool {
		return h.records(w)[n.ID].Status == delivery.Delivered
	})
	hits := h.recv.of(ref.DeliveryID)
	if len(hits) != 1 {
		t.Fatalf("%d requests for the delivery; want 1", len(hits))
	}
	if end := begun.Add(lease); hits[0].at.Before(end) {
		t.Errorf("sent at %s, before the abandoned attempt's lease ended (%s): its own task did not wait", hits[0].at.Format(time.StampMilli), end.Format(time.StampMilli))
	}
	if r := h.records(w)[n.ID]; r.Attempts != 1 {
		t.Errorf("record %+v; want 1 attempt (the abandoned one, not counted twice)", r)
	}
}
