package worker

import (
	"net/http"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/delivery"
)

// TestRetriedDeadDeliveryIsSentAgain: a dead delivery retried through the
// store (POST .../deliveries/{dlv}/retry) is claimed by the worker at
// once, sent under the same delivery id as attempt 1 of a fresh schedule,
// and delivered.
func TestRetriedDeadDeliveryIsSentAgain(t *testing.T) {
	f := newFix(t)
	f.rcv.setStatus(func(int) int { return http.StatusServiceUnavailable })
	w := f.watch(watchA)
	f.hook(w)
	f.ingest(0, acnA)
	f.dispatch()
	for step := 0; step < 200 && f.records(w)[0].Status != delivery.Dead; step++ {
		f.attempt()
		f.clock.Advance(time.Minute)
	}
	dead := f.records(w)[0]
	if dead.Status != delivery.Dead || dead.Attempts != delivery.MaxAttempts {
		t.Fatalf("record %+v, want dead after %d attempts", dead, delivery.MaxAttempts)
	}
	f.rcv.setStatus(func(int) int { return http.StatusOK })
	r, err := f.st.RetryDelivery(f.ctx, f.account, w, dead.ID, f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != delivery.Pending || r.Attempts != 0 {
		t.Fatalf("retried record %+v, want pending with 0 attempts", r)
	}
	if n := f.attempt(); n != 1 {
		t.Fatalf("%d attempts right after the retry, want 1 (due at once)", n)
	}
	got := f.records(w)[0]
	if got.ID != dead.ID || got.Status != delivery.Delivered || got.Attempts != 1 {
		t.Errorf("record %+v, want %s delivered at attempt 1", got, dead.ID)
	}
	ds := f.rcv.got()
	if len(ds) != 1 || ds[0].ID != dead.ID {
		t.Errorf("receiver accepted %+v, want one delivery with id %s", ds, dead.ID)
	}
}
