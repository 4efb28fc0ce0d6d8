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
	ctx := context.Background()
	if _, err := s.SetWebhook(ctx, accountID, watchID, "https://hooks.example.com/"+watchID, webhook.NewSecret(), clock.Now()); err != nil {
		t.Fatal(err)
	}
	const lastErr = "HTTP 503 from hooks.example.com"
	for i := 0; i < delivery.DeactivateAfter; i++ {
		n := storetest.AlphaNotice(fmt.Sprintf("FAIL-%s-%02d", watchID, i), clock.Now())
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
		if _, err := s.Enqueue(ctx, []store.Arrival{{Notice: n, Watches: []string{watchID}}}, seq, v, clock.Now()); err != nil {
			t.Fatal(err)
		}
		for a := 1; a <= delivery.MaxAttempts; a++ {
			jobs, err := s.Claim(ctx, clock.Now(), store.ClaimRequest{Limit: 10, Lease: time.Minute})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("notice %d attempt %d: claimed %d (%v)", i, a, len(jobs), err)
			}
			if err := s.Complete(ctx, jobs[0], store.Outcome{LastError: lastErr, RetryUnit: time.Millisecond}, clock.Now()); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
		}
	}
	return lastErr
}
