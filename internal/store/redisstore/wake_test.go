package redisstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestWakeNoteWrittenDuringClaim: a worker begins an attempt (its lease's
// note, then beginScript) while a recovery reader holds the account
// claimed in wake:dlease and has just found its lease queue empty. The
// lease's note is due no sooner than the claim ends (the scheduler's
// lease is 10 s, as is the claim), so ZADD LT alone left the claim's
// score as it was, and the reader took the note for its own claim and
// dropped it: the worker dying then left a lapsed attempt no recovery
// found until the 30-second Reconcile. The note must stay, and the lapse
// be recovered once the lease runs out. Real Redis, fake clock.
func TestWakeNoteWrittenDuringClaim(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	accountID, watchID := f.alphaWatch(t)
	f.failDeliveriesN(t, accountID, watchID, 0)
	f.deliver(t, watchID, "WAKE-1")
	recs, err := f.rs.Deliveries(ctx, accountID, watchID, 10)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Deliveries = %d records, %v", len(recs), err)
	}
	ref := Ref{AccountID: accountID, WatchID: watchID, DeliveryID: recs[0].ID, NoticeSeq: recs[0].NoticeSeq}
	// An earlier attempt's note, due now; its attempt long finished.
	if err := f.rs.wake(ctx, wakeLeases, accountID, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	lease := wakeClaim
	var begun atomic.Bool
	restore := onCommand(f.rdb, func(cmd redis.Cmder) error {
		// The worker's Begin runs between the reader's read of the empty
		// lease queue and its rewakeScript.
		if runOf(cmd, rewakeScript) && !begun.Swap(true) {
			b, err := f.rs.Begin(ctx, ref, f.clock.Now(), Hold{Task: "dies", Lease: lease})
			if err != nil || b.State != BeginAttempt {
				t.Errorf("Begin = %+v, %v; want an attempt", b, err)
			}
		}
		return nil
	})
	l, err := f.rs.LapsedAttempts(ctx, f.clock.Now(), lease, 100)
	restore()
	if err != nil || len(l) != 0 || !begun.Load() {
		t.Fatalf("LapsedAttempts = %+v, %v (begun meanwhile: %v); want none, the attempt begun during it", l, err, begun.Load())
	}
	if _, err := f.rdb.ZScore(ctx, f.rs.key(wakeKey, wakeLeases), accountID).Result(); err != nil {
		t.Errorf("the account's note in wake:dlease: %v; want the lease's note kept", err)
	}
	// The worker died: once its lease ran out, a recovery finds the attempt.
	f.clock.Advance(lease + time.Millisecond)
	l, err = f.rs.LapsedAttempts(ctx, f.clock.Now(), lease, 100)
	if err != nil || len(l) != 1 || l[0].Ref != ref {
		t.Fatalf("LapsedAttempts after the lease = %+v, %v; want the attempt of %+v", l, err, ref)
	}
}
