package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/webhook"
)

func TestMailContract(t *testing.T) {
	storetest.RunMail(t, func(t *testing.T) storetest.MailBackend {
		s, b := openWatches(t)
		return storetest.MailBackend{WatchBackend: b, Mail: s, FailDeliveries: func(t *testing.T, accountID, watchID string) string {
			return failDeliveries(t, s, b.Clock, accountID, watchID)
		}}
	})
}

// failDeliveries registers a webhook on the watch and makes
// delivery.DeactivateAfter new notices of it dead through the queue, as
// the worker would record them.
func failDeliveries(t *testing.T, s *Store, clock *storetest.Clock, accountID, watchID string) string {
	t.Helper()
	if _, err := s.SetWebhook(context.Background(), accountID, watchID, "https://hooks.example.com/"+watchID, webhook.NewSecret(), clock.Now()); err != nil {
		t.Fatal(err)
	}
	fail := make([]bool, delivery.MaxAttempts)
	for i := 0; i < delivery.DeactivateAfter; i++ {
		deliver(t, s, clock, watchID, fmt.Sprintf("FAIL-%s-%02d", watchID, i), fail...)
		clock.Advance(time.Second)
	}
	return failedDelivery
}

// failedDelivery is the last_error of the failed attempts deliver records.
const failedDelivery = "HTTP 503 from hooks.example.com"

// deliver stores a new notice of storetest.ACNAlpha, enqueues its delivery
// to the watch and records one attempt per outcome through the queue, as
// the worker would (storetest.GaugeBackend.Deliver).
func deliver(t *testing.T, s *Store, clock *storetest.Clock, watchID, source string, outcomes ...bool) {
	t.Helper()
	ctx := context.Background()
	n := storetest.AlphaNotice(source, clock.Now())
	if _, err := s.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
		t.Fatal(err)
	}
	seq, err := s.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n.Seq = seq
	v, err := s.WatchSetVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := s.Enqueue(ctx, []store.Arrival{{Notice: n, Watches: []string{watchID}}}, seq, v, clock.Now()); err != nil || k != 1 {
		t.Fatalf("%s: enqueued %d deliveries (%v)", source, k, err)
	}
	for a, ok := range outcomes {
		if a > 0 {
			clock.Advance(time.Second)
		}
		jobs, err := s.Claim(ctx, clock.Now(), store.ClaimRequest{Limit: 10, Lease: time.Minute})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("%s attempt %d: claimed %d (%v)", source, a+1, len(jobs), err)
		}
		out := store.Outcome{OK: ok, RetryUnit: storetest.DeliverRetryUnit}
		if !ok {
			out.LastError = failedDelivery
		}
		if err := s.Complete(ctx, jobs[0], out, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
}
