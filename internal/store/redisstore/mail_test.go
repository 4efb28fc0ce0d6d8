package redisstore

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
		f := newFixture(t, Options{})
		return storetest.MailBackend{WatchBackend: f.backend(), Mail: f.rs, FailDeliveries: f.failDeliveries}
	})
}

// failDeliveries registers a webhook on the watch and makes
// delivery.DeactivateAfter new notices of it dead through the ledger, as
// the asynq handler would record them.
func (f fixture) failDeliveries(t *testing.T, accountID, watchID string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := f.rs.SetWebhook(ctx, accountID, watchID, "https://hooks.example.com/"+watchID, webhook.NewSecret(), f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	w := composite{notices: f.notices, rs: f.rs}
	const lastErr = "HTTP 503 from hooks.example.com"
	for i := 0; i < delivery.DeactivateAfter; i++ {
		n := storetest.AlphaNotice(fmt.Sprintf("FAIL-%s-%02d", watchID, i), f.clock.Now())
		if _, err := w.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
			t.Fatal(err)
		}
		seq, err := f.notices.LatestSeq(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ref := Ref{WatchID: watchID, DeliveryID: webhook.DeliveryID(watchID, n.ID), NoticeSeq: seq}
		if k, err := f.rs.CreateDeliveries(ctx, []Ref{ref}, f.clock.Now()); err != nil || k != 1 {
			t.Fatalf("notice %d: created %d deliveries (%v)", i, k, err)
		}
		for a := 1; a <= delivery.MaxAttempts; a++ {
			b, err := f.rs.Begin(ctx, ref, f.clock.Now())
			if err != nil || b.State != BeginAttempt {
				t.Fatalf("notice %d attempt %d: begin %+v (%v)", i, a, b, err)
			}
			if err := f.rs.Complete(ctx, b.Job, store.Outcome{LastError: lastErr, RetryUnit: time.Millisecond}, f.clock.Now()); err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(time.Second)
		}
	}
	return lastErr
}
