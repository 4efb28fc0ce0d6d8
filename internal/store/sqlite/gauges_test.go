package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

func TestGaugesContract(t *testing.T) {
	storetest.RunGauges(t, func(t *testing.T) storetest.GaugeBackend {
		s, b := openWatches(t)
		return storetest.GaugeBackend{
			MailBackend: storetest.MailBackend{WatchBackend: b, Mail: s, FailDeliveries: func(t *testing.T, accountID, watchID string) string {
				return failDeliveries(t, s, b.Clock, accountID, watchID)
			}},
			Webhooks: s,
			Gauges:   s,
			Deliver: func(t *testing.T, watchID, source string, outcomes ...bool) {
				deliver(t, s, b.Clock, watchID, source, outcomes...)
			},
		}
	})
}

// TestGauges: the stored counts /metrics reports follow the queue through
// a delivery, a failed attempt waiting for its retry, and a lapsed account.
func TestGauges(t *testing.T) {
	f := newQFix(t)
	gauges := func() store.Gauges {
		t.Helper()
		g, err := f.s.Gauges(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if g := gauges(); g != (store.Gauges{AccountsActive: 1}) {
		t.Fatalf("fresh store: %+v", g)
	}
	w := f.watch(watchA)
	f.hook(w)
	f.enqueue([]notice.Notice{f.notice(acnA, 0), f.notice(acnA, time.Minute)}, w)
	if g := gauges(); g.WatchesActive != 1 || g.DeliveriesPending != 2 || g.QueueDue != 2 || g.RetryBacklog != 0 {
		t.Fatalf("two queued: %+v", g)
	}
	jobs := f.claim()
	if len(jobs) != 2 {
		t.Fatalf("claimed %d", len(jobs))
	}
	f.complete(jobs[0], true, "")
	f.complete(jobs[1], false, "HTTP 502")
	g := gauges()
	want := store.Gauges{AccountsActive: 1, WatchesActive: 1, DeliveriesPending: 1, DeliveriesDelivered: 1, QueueDue: 0, RetryBacklog: 1}
	if g != want {
		t.Fatalf("after one success and one failure: %+v, want %+v", g, want)
	}
	f.clock.Advance(10 * time.Minute)
	if g := gauges(); g.QueueDue != 1 || g.RetryBacklog != 1 {
		t.Fatalf("retry due: %+v", g)
	}
	if err := f.s.SetSubscription(f.ctx, f.account, false); err != nil {
		t.Fatal(err)
	}
	if g := gauges(); g.AccountsActive != 0 || g.AccountsLapsed != 1 {
		t.Fatalf("lapsed: %+v", g)
	}
}

// TestDeliveryRetentionContract: storetest.RunDeliveryRetention on the
// embedded store.
func TestDeliveryRetentionContract(t *testing.T) {
	storetest.RunDeliveryRetention(t, func(t *testing.T) storetest.GaugeBackend {
		s, b := openWatches(t)
		return storetest.GaugeBackend{
			MailBackend: storetest.MailBackend{WatchBackend: b, Mail: s},
			Webhooks:    s,
			Gauges:      s,
			Deliver: func(t *testing.T, watchID, source string, outcomes ...bool) {
				deliver(t, s, b.Clock, watchID, source, outcomes...)
			},
			Pend: func(t *testing.T, watchID, source string) {
				// Its attempt claimed and in flight past the test's end.
				deliver(t, s, b.Clock, watchID, source)
				jobs, err := s.Claim(context.Background(), b.Clock.Now(), store.ClaimRequest{Limit: 10, Lease: 1000 * time.Hour})
				if err != nil || len(jobs) != 1 {
					t.Fatalf("%s: claimed %d (%v)", source, len(jobs), err)
				}
			},
		}
	})
}
