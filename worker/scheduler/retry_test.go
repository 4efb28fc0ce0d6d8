package scheduler

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/webhook"
)

// TestRetriedDeadDeliveryIsSentAgain: a dead delivery retried through the
// Redis store (POST .../deliveries/{dlv}/retry) gets an asynq task from
// the outbox pump, as a new delivery does, and is sent under the same
// delivery id as attempt 1 of a fresh schedule, even while a task of that
// id is still kept by asynq (archived here); the gauges stay exact.
func TestRetriedDeadDeliveryIsSentAgain(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.recv.setStatus(func(string, int) int { return http.StatusInternalServerError })
	s := h.start("w1")
	w := h.watch(7, "whsec_retry_dead")
	n := h.ingest("RETRY-DEAD-1", 7, time.Now().Add(-time.Hour))
	id := webhook.DeliveryID(w.ID, n.ID)
	eventually(t, 30*time.Second, "the record dead", func() bool { return h.records(w)[n.ID].Status == delivery.Dead })
	if k := len(h.recv.of(id)); k != delivery.MaxAttempts {
		t.Fatalf("%d attempts before dead, want %d", k, delivery.MaxAttempts)
	}
	// A task of the delivery's id that asynq still keeps (an archived
	// one: its runs spent) must not keep the retry from being scheduled.
	ref, err := json.Marshal(redisstore.Ref{WatchID: w.ID, DeliveryID: id, NoticeSeq: h.records(w)[n.ID].NoticeSeq})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.EnqueueContext(ctx, asynq.NewTask(TaskType, ref), asynq.TaskID(id), asynq.Queue(s.queue),
		asynq.ProcessIn(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.inspector.ArchiveTask(s.queue, id); err != nil {
		t.Fatal(err)
	}

	h.recv.setStatus(func(string, int) int { return http.StatusNoContent })
	r, err := h.rs.RetryDelivery(ctx, h.acc.AccountID, w.ID, id, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != id || r.Status != delivery.Pending || r.Attempts != 0 || r.NextAttemptAt == nil {
		t.Fatalf("retried record %+v, want %s pending, 0 attempts, due now", r, id)
	}
	eventually(t, 10*time.Second, "the retried delivery delivered", func() bool { return h.records(w)[n.ID].Status == delivery.Delivered })
	got := h.records(w)[n.ID]
	if got.Attempts != 1 || got.DeliveredAt == nil {
		t.Errorf("record %+v, want delivered at attempt 1", got)
	}
	hits := h.recv.of(id)
	if len(hits) != delivery.MaxAttempts+1 {
		t.Errorf("%d requests under %s, want %d (the dead ones and the retry)", len(hits), id, delivery.MaxAttempts+1)
	}
	if !webhook.Verify("whsec_retry_dead", hits[len(hits)-1].body, hits[len(hits)-1].signature) {
		t.Errorf("the retried request is not signed with the watch's secret")
	}
	g, err := h.rs.Gauges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g.DeliveriesPending != 0 || g.DeliveriesDead != 0 || g.DeliveriesDelivered != 1 || g.RetryBacklog != 0 {
		t.Errorf("gauges %+v, want 1 delivered and nothing pending, dead or retrying", g)
	}
	if _, err := h.rs.RetryDelivery(ctx, h.acc.AccountID, w.ID, id, time.Now()); !errs.Is(err, errs.DeliveryNotDead) {
		t.Errorf("retry of a delivered delivery: %v, want delivery_not_dead", err)
	}
}
