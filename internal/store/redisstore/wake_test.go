package redisstore

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/storetest"
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

// TestMatchCommitNotesAgain: a matcher stopped between an account's
// commitScript (the delivery recorded, in the account's outbox) and its
// note in wake:dq leaves the cursor behind; the next matcher commits the
// range again, which finds the delivery made (pend answers 0), and must
// still note the account, so the pump finds the delivery now rather than
// at the 30-second Reconcile. Real Redis, fake clock.
func TestMatchCommitNotesAgain(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	accountID, watchID := f.alphaWatch(t)
	f.failDeliveriesN(t, accountID, watchID, 0) // the webhook
	for {
		if n, err := f.rs.MatchArrivals(ctx, 500); err != nil {
			t.Fatal(err)
		} else if n == 0 {
			break
		}
	}
	if _, err := (composite{notices: f.notices, rs: f.rs}).UpsertNotices(ctx, []notice.Notice{storetest.AlphaNotice("WAKE-MATCH", f.clock.Now())}); err != nil {
		t.Fatal(err)
	}
	restore := killAt(f.rdb, after(commitScript))
	_, err := f.rs.MatchArrivals(ctx, 500)
	restore()
	if !errors.Is(err, errKilled) {
		t.Fatalf("MatchArrivals = %v; want killed after its commit", err)
	}
	if n, err := f.rdb.ZCard(ctx, f.rs.akey(accountID, outboxKey)).Result(); err != nil || n != 1 {
		t.Fatalf("outbox after the stopped commit: %d, %v; want the delivery (the test's premise)", n, err)
	}
	if n, err := f.rs.MatchArrivals(ctx, 500); err != nil || n != 1 {
		t.Fatalf("MatchArrivals again = %d, %v; want the range committed", n, err)
	}
	if got, err := f.rs.ClaimDue(ctx, f.clock.Now(), 10*time.Second, 10); err != nil || len(got) != 1 || got[0].WatchID != watchID {
		t.Fatalf("ClaimDue = %+v, %v; want the delivery of %s", got, err, watchID)
	}
}

// TestWebhookRetryNotesAgain: a webhook registration stopped between the
// script that records the deliveries its matches are owed (in the
// account's outbox) and the account's note in wake:dq is retried by its
// client; the retry makes no delivery (each exists) and must still note
// the account, so the pump finds them now rather than at the 30-second
// Reconcile. Real Redis, fake clock.
func TestWebhookRetryNotesAgain(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	accountID, watchID := f.alphaWatch(t)
	if _, err := (composite{notices: f.notices, rs: f.rs}).UpsertNotices(ctx, []notice.Notice{storetest.AlphaNotice("WAKE-HOOK", f.clock.Now())}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rs.Matches(ctx, accountID, watchID, 0, 10); err != nil { // matched, no webhook yet
		t.Fatal(err)
	}
	set := func() error {
		_, err := f.rs.SetWebhook(ctx, accountID, watchID, "https://hooks.example.com/"+watchID, "whsec_retry", f.clock.Now())
		return err
	}
	restore := killAt(f.rdb, after(createDeliveryScript))
	err := set()
	restore()
	if !errors.Is(err, errKilled) {
		t.Fatalf("SetWebhook = %v; want killed after its deliveries' script", err)
	}
	if n, err := f.rdb.ZCard(ctx, f.rs.akey(accountID, outboxKey)).Result(); err != nil || n != 1 {
		t.Fatalf("outbox after the stopped registration: %d, %v; want the delivery (the test's premise)", n, err)
	}
	if err := set(); err != nil {
		t.Fatalf("SetWebhook again: %v", err)
	}
	if got, err := f.rs.ClaimDue(ctx, f.clock.Now(), 10*time.Second, 10); err != nil || len(got) != 1 || got[0].WatchID != watchID {
		t.Fatalf("ClaimDue = %+v, %v; want the delivery of %s", got, err, watchID)
	}
}

// TestWakeErrorGivesBackTheRest: a reader whose work fails for one account
// (its master does not answer) stops its round; that account stays claimed
// until the claim ends, but the accounts it had claimed and not reached are
// due again at once, at the scores they had, so the next round (this
// reader's or another's) does their work instead of hiding it for the
// claim's 10 s. Real Redis, fake clock.
func TestWakeErrorGivesBackTheRest(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	now := f.clock.Now()
	accts := []string{"acc_a", "acc_b", "acc_c"}
	for i, a := range accts { // due in this order
		if err := f.rs.wake(ctx, wakeOutbox, a, now.Add(time.Duration(i-3)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	failed := errors.New("the account's master does not answer")
	var seen []string
	err := f.rs.eachWoken(ctx, wakeOutbox, now, 100, func(acct string) error {
		seen = append(seen, acct)
		return failed
	})
	if !errors.Is(err, failed) || len(seen) != 1 || seen[0] != accts[0] {
		t.Fatalf("eachWoken = %v after %v; want the first account's error after it alone", err, seen)
	}
	scores := f.rdb.ZRangeWithScores(ctx, f.rs.key(wakeKey, wakeOutbox), 0, -1).Val()
	got := map[string]int64{}
	for _, z := range scores {
		got[z.Member.(string)] = int64(z.Score)
	}
	for i, a := range accts {
		want := now.Add(time.Duration(i-3) * time.Millisecond).UnixMilli()
		if i == 0 {
			want = now.Add(wakeClaim).UnixMilli() // still claimed
		}
		if got[a] != want {
			t.Errorf("%s noted at %d, want %d (now %d)", a, got[a], want, now.UnixMilli())
		}
	}
	seen = nil
	if err := f.rs.eachWoken(ctx, wakeOutbox, now, 100, func(acct string) error {
		seen = append(seen, acct)
		return nil
	}); err != nil || len(seen) != 2 || seen[0] != accts[1] || seen[1] != accts[2] {
		t.Errorf("the next round: %v, %v; want %v", seen, err, accts[1:])
	}
}
