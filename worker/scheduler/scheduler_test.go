package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/internal/webhook"
	"github.com/noticesd/noticesd/test/testbin"
	"github.com/noticesd/noticesd/worker"
)

// Tests of SPEC.md's delivery and watch state tables and its retry table in
// scale mode: real Redis, real asynq, a real TLS receiver, retry unit 400ms.

func TestFirstAttemptSignedOnceSecretsSealed(t *testing.T) {
	h := newHarness(t)
	h.start("w1")
	const secret = "whsec_first_attempt_secret_value"
	w := h.watch(1, secret)
	arrived := time.Now()
	n := h.ingest("FIRST-1", 1, time.Now().Add(-time.Hour))
	id := webhook.DeliveryID(w.ID, n.ID)
	eventually(t, 10*time.Second, "the first attempt", func() bool { return len(h.recv.of(id)) == 1 })
	got := h.recv.of(id)[0]
	t.Logf("arrival to first attempt: %s", got.at.Sub(arrived))
	if !webhook.Verify(secret, got.body, got.signature) {
		t.Errorf("signature %q does not verify with the webhook's secret", got.signature)
	}
	eventually(t, 5*time.Second, "the record delivered", func() bool { return h.records(w)[n.ID].Status == delivery.Delivered })
	r := h.records(w)[n.ID]
	if r.ID != id || r.Attempts != 1 || r.DeliveredAt == nil || r.NextAttemptAt != nil || r.LastError != nil {
		t.Errorf("record %+v, want delivered after 1 attempt", r)
	}
	time.Sleep(3 * unit)
	if k := len(h.recv.of(id)); k != 1 {
		t.Errorf("delivered %d times, want once", k)
	}
	// No Redis value of the namespace (its own keys or its accounts')
	// holds the secret in the clear.
	ctx := context.Background()
	hashes := 0
	for _, pat := range []string{keyspace.Prefix(h.ns) + "*", "{" + h.ns + ":a:*"} {
		iter := h.rdb.Scan(ctx, 0, pat, 1000).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			if typ, _ := h.rdb.Type(ctx, key).Result(); typ == "hash" {
				hashes++
				vals, _ := h.rdb.HGetAll(ctx, key).Result()
				for f, v := range vals {
					if strings.Contains(v, secret) || strings.Contains(v, "first_attempt_secret") {
						t.Errorf("%s field %s holds the webhook secret in the clear", key, f)
					}
				}
			}
		}
	}
	if f, _ := h.rdb.HGet(ctx, keyspace.Account(h.ns, w.AccountID)+"w:"+w.ID, "secret").Result(); f == "" || hashes == 0 {
		t.Errorf("the scan found no stored secret to check (%d hashes)", hashes)
	}
}

func TestRetryScheduleThenDead(t *testing.T) {
	h := newHarness(t)
	h.recv.setStatus(func(string, int) int { return http.StatusInternalServerError })
	h.start("w1")
	w := h.watch(2, "whsec_retry")
	n := h.ingest("RETRY-1", 2, time.Now().Add(-time.Hour))
	id := webhook.DeliveryID(w.ID, n.ID)
	eventually(t, 30*time.Second, "five attempts", func() bool { return len(h.recv.of(id)) == delivery.MaxAttempts })
	eventually(t, 5*time.Second, "the record dead", func() bool { return h.records(w)[n.ID].Status == delivery.Dead })
	hits := h.recv.of(id)
	for i := 1; i < len(hits); i++ {
		want, _ := delivery.RetryWait(i, unit)
		got := hits[i].at.Sub(hits[i-1].at)
		// Not early (a few ms of clock and scheduling slack), at most 1 s late
		// (the bound; asynq is checked every 100 ms).
		if got < want-20*time.Millisecond || got > want+time.Second {
			t.Errorf("wait before attempt %d: %s, want %s (n x unit) within [-20ms, +1s]", i+1, got, want)
		} else {
			t.Logf("wait before attempt %d: %s (want %s)", i+1, got, want)
		}
	}
	r := h.records(w)[n.ID]
	if r.Attempts != delivery.MaxAttempts || r.LastError == nil || *r.LastError != "HTTP 500" || r.NextAttemptAt != nil {
		t.Errorf("record %+v, want dead after 5 attempts with last_error HTTP 500", r)
	}
	time.Sleep(6 * unit)
	if k := len(h.recv.of(id)); k != delivery.MaxAttempts {
		t.Errorf("%d attempts, want exactly %d", k, delivery.MaxAttempts)
	}
	if f, _ := h.rdb.HGet(context.Background(), keyspace.Account(h.ns, w.AccountID)+"w:"+w.ID, "failures").Int(); f != 1 {
		t.Errorf("consecutive failed notices %d, want 1", f)
	}
}

// deadAll ingests k failing notices for w and waits until all are dead.
func (h *harness) deadAll(w watch.Watch, company int, prefix string, k int) {
	h.t.Helper()
	var ids []string
	for i := range k {
		n := h.ingest(prefix+"-"+itoa(i), company, time.Now().Add(-time.Hour))
		ids = append(ids, n.ID)
	}
	eventually(h.t, 60*time.Second, prefix+": every delivery dead", func() bool {
		rs := h.records(w)
		for _, id := range ids {
			if rs[id].Status != delivery.Dead {
				return false
			}
		}
		return true
	})
}

func itoa(i int) string { return string(rune('a'+i/26)) + string(rune('a'+i%26)) }

func TestDeactivationAfterTenResetHeldAndReactivation(t *testing.T) {
	h := newHarness(t)
	failing := func(string, int) int { return http.StatusBadGateway }
	h.recv.setStatus(failing)
	h.start("w1")
	w := h.watch(3, "whsec_deact")
	ctx := context.Background()
	active := func() watch.Watch {
		got, err := h.rs.Watch(ctx, h.acc.AccountID, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	h.deadAll(w, 3, "NINE", 9)
	if got := active(); !got.Active {
		t.Fatalf("watch deactivated after 9 dead notices: %+v", got)
	}
	// A delivered notice resets the count.
	h.recv.setStatus(func(string, int) int { return http.StatusOK })
	ok := h.ingest("OK-1", 3, time.Now().Add(-time.Hour))
	eventually(t, 10*time.Second, "the success delivered", func() bool { return h.records(w)[ok.ID].Status == delivery.Delivered })
	h.recv.setStatus(failing)
	h.deadAll(w, 3, "AGAIN", 9)
	if got := active(); !got.Active {
		t.Fatalf("watch deactivated after 9 dead notices following a success (the count was not reset): %+v", got)
	}
	h.deadAll(w, 3, "TENTH", 1)
	eventually(t, 5*time.Second, "the watch deactivated", func() bool { return !active().Active })
	if got := active(); !strings.Contains(got.DeactivatedReason, "10 consecutive notices") || !strings.Contains(got.DeactivatedReason, "HTTP 502") {
		t.Errorf("deactivated_reason %q", got.DeactivatedReason)
	}

	// Held while inactive: created, pending, no next attempt, not sent.
	h.recv.setStatus(func(string, int) int { return http.StatusOK })
	var held []string
	for i := range 5 {
		// Published just inside the window: by the release it is outside,
		// and is still delivered (no window check on release).
		n := h.ingest("HELD-"+itoa(i), 3, time.Now().Add(-delivery.Window+4*time.Second))
		held = append(held, n.ID)
	}
	eventually(t, 10*time.Second, "held deliveries recorded", func() bool {
		rs := h.records(w)
		for _, id := range held {
			if r, ok := rs[id]; !ok || r.Status != delivery.Pending || r.NextAttemptAt != nil {
				return false
			}
		}
		return true
	})
	time.Sleep(5 * time.Second) // past the window for every held notice
	for _, id := range held {
		if k := len(h.recv.of(webhook.DeliveryID(w.ID, id))); k != 0 {
			t.Errorf("held delivery of %s sent %d times while the watch was inactive", id, k)
		}
	}
	// The reactivation burst: every held delivery at once.
	on := true
	released := time.Now()
	if _, err := h.rs.UpdateWatch(ctx, h.acc.AccountID, w.ID, watch.Patch{Active: &on}, time.Now()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "every held delivery sent after reactivation", func() bool {
		for _, id := range held {
			if len(h.recv.of(webhook.DeliveryID(w.ID, id))) == 0 {
				return false
			}
		}
		return true
	})
	t.Logf("reactivation to the last held delivery: %s", time.Since(released))
	eventually(t, 5*time.Second, "held deliveries delivered", func() bool {
		rs := h.records(w)
		for _, id := range held {
			if rs[id].Status != delivery.Delivered {
				return false
			}
		}
		return true
	})
	if f, _ := h.rdb.HGet(ctx, keyspace.Account(h.ns, w.AccountID)+"w:"+w.ID, "failures").Int(); f != 0 {
		t.Errorf("consecutive failed notices %d after reactivation and success, want 0", f)
	}
}

func TestRotationMidRetrySignsWithNewSecretOnly(t *testing.T) {
	h := newHarness(t)
	h.recv.setStatus(func(_ string, n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	h.start("w1")
	w := h.watch(4, "whsec_old")
	n := h.ingest("ROT-1", 4, time.Now().Add(-time.Hour))
	id := webhook.DeliveryID(w.ID, n.ID)
	eventually(t, 10*time.Second, "the first attempt", func() bool { return len(h.recv.of(id)) == 1 })
	if _, err := h.rs.RotateSecret(context.Background(), h.acc.AccountID, w.ID, "whsec_new", time.Now()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the retry", func() bool { return len(h.recv.of(id)) == 2 })
	hits := h.recv.of(id)
	if !webhook.Verify("whsec_old", hits[0].body, hits[0].signature) {
		t.Errorf("first attempt not signed with the old secret")
	}
	if !webhook.Verify("whsec_new", hits[1].body, hits[1].signature) || webhook.Verify("whsec_old", hits[1].body, hits[1].signature) {
		t.Errorf("retry after rotation must verify with the new secret only")
	}
	eventually(t, 5*time.Second, "delivered", func() bool { return h.records(w)[n.ID].Status == delivery.Delivered })
}

// TestRotationAfterBeginSignsWithNewSecret: an attempt begun (its secret
// read) before a rotation is signed with the secret current when it is
// sent, and one begun before the webhook was removed is not sent.
func TestRotationAfterBeginSignsWithNewSecret(t *testing.T) {
	tests := []struct {
		name    string
		company int
		remove  bool
	}{
		{"rotated", 41, false},
		{"removed", 42, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t) // no scheduler runs: this test makes the one attempt
			w := h.watch(tc.company, "whsec_before")
			n := h.ingest("ROTB-"+tc.name, tc.company, time.Now().Add(-time.Hour))
			ctx := context.Background()
			stored, err := h.notes.Notice(ctx, n.ID)
			if err != nil {
				t.Fatal(err)
			}
			if k, err := h.rs.CreateDeliveries(ctx, []redisstore.Ref{{WatchID: w.ID, NoticeSeq: stored.Seq}}, time.Now()); err != nil || k != 1 {
				t.Fatalf("CreateDeliveries = %d, %v; want 1", k, err)
			}
			rec := h.records(w)[n.ID]
			b, err := h.rs.Begin(ctx, redisstore.Ref{WatchID: w.ID, DeliveryID: rec.ID, NoticeSeq: rec.NoticeSeq}, time.Now(), redisstore.Hold{})
			if err != nil || b.State != redisstore.BeginAttempt || b.Job.Secret != "whsec_before" {
				t.Fatalf("Begin = %+v, %v; want an attempt with the first secret", b, err)
			}
			if tc.remove {
				err = h.rs.DeleteWebhook(ctx, h.acc.AccountID, w.ID, time.Now())
			} else {
				_, err = h.rs.RotateSecret(ctx, h.acc.AccountID, w.ID, "whsec_after", time.Now())
			}
			if err != nil {
				t.Fatal(err)
			}
			job := b.Job
			job.Notice = n
			a := worker.Attempter{Sender: h.sender(), Ledger: h.rs, RetryUnit: unit, Now: time.Now}
			d, err := a.Attempt(ctx, job)
			if err != nil {
				t.Fatal(err)
			}
			hits := h.recv.of(rec.ID)
			if tc.remove {
				if len(hits) != 0 || d.Status != delivery.Dead || h.records(w)[n.ID].Status != delivery.Dead {
					t.Fatalf("%d requests, decision %+v; want nothing sent after the webhook was removed", len(hits), d)
				}
				return
			}
			if len(hits) != 1 || !webhook.Verify("whsec_after", hits[0].body, hits[0].signature) || webhook.Verify("whsec_before", hits[0].body, hits[0].signature) {
				t.Fatalf("%d requests; want one, verifying with the rotated secret only", len(hits))
			}
			if d.Status != delivery.Delivered || h.records(w)[n.ID].Status != delivery.Delivered {
				t.Fatalf("decision %+v, record %+v; want delivered", d, h.records(w)[n.ID])
			}
		})
	}
}

func TestDeletedWebhookEndsPendingDeliveries(t *testing.T) {
	h := newHarness(t)
	h.recv.setStatus(func(string, int) int { return http.StatusInternalServerError })
	h.start("w1")
	w := h.watch(5, "whsec_del")
	n := h.ingest("DEL-1", 5, time.Now().Add(-time.Hour))
	id := webhook.DeliveryID(w.ID, n.ID)
	eventually(t, 10*time.Second, "the first attempt", func() bool { return len(h.recv.of(id)) == 1 })
	if err := h.rs.DeleteWebhook(context.Background(), h.acc.AccountID, w.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	r := h.records(w)[n.ID]
	if r.Status != delivery.Dead || r.LastError == nil || *r.LastError != delivery.WebhookRemoved || r.NextAttemptAt != nil {
		t.Errorf("record %+v, want dead with %q", r, delivery.WebhookRemoved)
	}
	time.Sleep(4 * unit)
	if k := len(h.recv.of(id)); k != 1 {
		t.Errorf("%d attempts, want none after the webhook was removed", k)
	}
}

func TestEligibility(t *testing.T) {
	h := newHarness(t)
	h.start("w1")
	before := h.ingest("ELIG-BEFORE", 6, time.Now().Add(-time.Hour)) // arrived before the watch
	w := h.watch(6, "whsec_elig")
	old := h.ingest("ELIG-OLD", 6, time.Now().Add(-delivery.Window-time.Hour)) // outside the two days
	fresh := h.ingest("ELIG-NEW", 6, time.Now().Add(-time.Hour))
	eventually(t, 10*time.Second, "the fresh notice delivered", func() bool { return h.records(w)[fresh.ID].Status == delivery.Delivered })
	time.Sleep(time.Second)
	rs := h.records(w)
	for _, n := range []string{before.ID, old.ID} {
		if r, ok := rs[n]; ok {
			t.Errorf("notice %s got a delivery %+v; it is not eligible", n, r)
		}
		if k := len(h.recv.of(webhook.DeliveryID(w.ID, n))); k != 0 {
			t.Errorf("ineligible notice %s sent %d times", n, k)
		}
	}
}

func TestTwoWorkersDeliverEachOnce(t *testing.T) {
	h := newHarness(t)
	h.start("w1")
	h.start("w2")
	w := h.watch(7, "whsec_two")
	const k = 60
	for i := range k {
		h.ingest("TWO-"+itoa(i), 7, time.Now().Add(-time.Hour))
	}
	eventually(t, 30*time.Second, "every notice delivered", func() bool { return len(h.recv.ids()) == k })
	time.Sleep(time.Second)
	for id, c := range h.recv.ids() {
		if c != 1 {
			t.Errorf("delivery %s sent %d times by two workers, want once", id, c)
		}
	}
	if got := len(h.records(w)); got != k {
		t.Errorf("%d delivery records, want %d", got, k)
	}
	c, err := QueueCounts(h.rdb, h.ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("queue counts after: %+v", c)
}

// TestMatchedWithoutAWorkerIsDelivered: arrivals matched while no
// scheduler runs (a serve matching on read, or a worker that died after
// its matching commit and before making any task) leave their deliveries
// in the ledger's outbox; a scheduler started later delivers each exactly
// once.
func TestMatchedWithoutAWorkerIsDelivered(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	w := h.watch(8, "whsec_stale")
	var ids []string
	for i := range 5 {
		ids = append(ids, h.ingest("STALE-"+itoa(i), 8, time.Now().Add(-time.Hour)).ID)
	}
	for moved := 1; moved > 0; { // match them all, as a serve reading matches does
		var err error
		if moved, err = h.rs.MatchArrivals(ctx, redisstore.ArrivalBatch); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(h.records(w)); got != 5 {
		t.Fatalf("%d delivery records after matching, want 5", got)
	}
	s, err := New(Config{Redis: h.rdb, Namespace: h.ns, Ledger: h.rs, Sender: h.sender(), RetryUnit: unit})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	eventually(t, 15*time.Second, "the deliveries matched before the worker started delivered", func() bool {
		rs := h.records(w)
		for _, id := range ids {
			if rs[id].Status != delivery.Delivered {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		if k := len(h.recv.of(webhook.DeliveryID(w.ID, id))); k != 1 {
			t.Errorf("notice %s delivered %d times, want once", id, k)
		}
	}
}

// TestFailedAttemptLogged: a failed attempt in scale mode is a warn record
// with the watch, the delivery id, the attempt and the reason, as the
// embedded worker writes it (docs/operating.md tells operators to watch
// for it).
func TestFailedAttemptLogged(t *testing.T) {
	h := newHarness(t)
	var logs testbin.LockedBuffer
	h.logger = slog.New(slog.NewJSONHandler(&logs, nil))
	h.recv.setStatus(func(string, int) int { return http.StatusBadGateway })
	h.start("w1")
	w := h.watch(51, "whsec_logged")
	n := h.ingest("LOG-1", 51, time.Now().Add(-time.Hour))
	id := webhook.DeliveryID(w.ID, n.ID)
	want := map[string]any{"level": "WARN", "msg": "delivery attempt failed", "watch": w.ID, "delivery": id, "attempt": 1.0, "reason": "HTTP 502"}
	eventually(t, 10*time.Second, "the failed attempt's log record", func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			match := true
			for k, v := range want {
				if rec[k] != v {
					match = false
				}
			}
			if match {
				return true
			}
		}
		return false
	})
}

// TestSweepRevivesArchivedTask: a delivery whose task asynq archived (its
// runs spent while a backend was down) is still pending in the ledger;
// the sweep hands it back to the outbox and Enqueue replaces the archived
// task, so the delivery is attempted again instead of never.
func TestSweepRevivesArchivedTask(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	w := h.watch(61, "whsec_archived")
	n := h.ingest("ARCH-1", 61, time.Now().Add(-time.Hour))
	stored, err := h.notes.Notice(ctx, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := h.rs.CreateDeliveries(ctx, []redisstore.Ref{{WatchID: w.ID, NoticeSeq: stored.Seq}}, time.Now()); err != nil || k != 1 {
		t.Fatalf("CreateDeliveries = %d, %v", k, err)
	}
	// The sweep runs a minute later: the delivery is overdue by more than
	// one attempt.
	s, err := New(Config{Redis: h.rdb, Namespace: h.ns, Ledger: h.rs, Sender: h.sender(), RetryUnit: unit,
		Now: func() time.Time { return time.Now().Add(time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	ref := redisstore.Ref{WatchID: w.ID, DeliveryID: webhook.DeliveryID(w.ID, n.ID), NoticeSeq: stored.Seq}
	if ok, err := s.Enqueue(ctx, ref); err != nil || !ok {
		t.Fatalf("Enqueue = %v, %v", ok, err)
	}
	if err := s.inspector.ArchiveTask(s.queue, ref.DeliveryID); err != nil {
		t.Fatal(err)
	}
	if n, err := s.SweepOnce(ctx); err != nil || n != 1 {
		t.Fatalf("SweepOnce = %d, %v; want the archived task's delivery back in the outbox", n, err)
	}
	if ok, err := s.Enqueue(ctx, ref); err != nil || !ok {
		t.Fatalf("Enqueue after the sweep = %v, %v", ok, err)
	}
	info, err := s.inspector.GetTaskInfo(s.queue, ref.DeliveryID)
	if err != nil || info.State != asynq.TaskStatePending {
		t.Fatalf("task after the sweep: %+v, %v; want pending again", info, err)
	}
}

// TestSweepDropsStaleServers: asynq lists each worker process in
// asynq:servers and asynq:workers, scored by its heartbeat's expiry, and
// removes it only when the process stops cleanly; the sweep drops one whose
// heartbeat expired (killed), and keeps a live one.
func TestSweepDropsStaleServers(t *testing.T) {
	asynqServerLists := []string{"asynq:servers", "asynq:workers"}
	h := newHarness(t)
	ctx := context.Background()
	s, err := New(Config{Redis: h.rdb, Namespace: h.ns, Ledger: h.rs, Sender: h.sender(), RetryUnit: unit})
	if err != nil {
		t.Fatal(err)
	}
	ghost, live := "asynq:servers:{killed-"+h.ns+":1:x}", "asynq:servers:{live-"+h.ns+":2:y}"
	for _, k := range asynqServerLists {
		h.rdb.ZAdd(ctx, k, redis.Z{Score: float64(time.Now().Add(-2 * time.Hour).Unix()), Member: ghost},
			redis.Z{Score: float64(time.Now().Add(30 * time.Second).Unix()), Member: live})
		t.Cleanup(func() { h.rdb.ZRem(context.Background(), k, ghost, live) })
	}
	if _, err := s.SweepOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range asynqServerLists {
		if _, err := h.rdb.ZScore(ctx, k, ghost).Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("%s still lists the process whose heartbeat expired 2 h ago (%v)", k, err)
		}
		if _, err := h.rdb.ZScore(ctx, k, live).Result(); err != nil {
			t.Errorf("%s no longer lists the live process: %v", k, err)
		}
	}
}

// TestRetryDelayBacksOff: a run that failed for another reason than the
// endpoint waits 1 s, doubling up to a minute; the endpoint's failures
// wait what the ledger decided.
func TestRetryDelayBacksOff(t *testing.T) {
	for _, tt := range []struct {
		n    int
		err  error
		want time.Duration
	}{
		{0, errors.New("redis down"), time.Second},
		{1, errors.New("redis down"), 2 * time.Second},
		{5, errors.New("redis down"), 32 * time.Second},
		{6, errors.New("redis down"), time.Minute},
		{900, errors.New("redis down"), time.Minute},
		{3, &retryError{wait: 30 * time.Minute}, 30 * time.Minute},
	} {
		if got := retryDelay(tt.n, tt.err, nil); got != tt.want {
			t.Errorf("retryDelay(%d, %v) = %s, want %s", tt.n, tt.err, got, tt.want)
		}
	}
}

// TestRecordDeliveredAtIsTheBodys: the delivered record's delivered_at is
// the delivered_at of the body the receiver got, not the time its answer
// came back (the receiver takes 400 ms), which updated_at records.
func TestRecordDeliveredAtIsTheBodys(t *testing.T) {
	h := newHarness(t)
	h.recv.mu.Lock()
	h.recv.delay = 400 * time.Millisecond
	h.recv.mu.Unlock()
	h.start("w1")
	const secret = "whsec_record_times_secret_value"
	w := h.watch(1, secret)
	n := h.ingest("TIMES-1", 1, time.Now().Add(-time.Hour))
	id := webhook.DeliveryID(w.ID, n.ID)
	eventually(t, 10*time.Second, "the record delivered", func() bool { return h.records(w)[n.ID].Status == delivery.Delivered })
	hits := h.recv.of(id)
	if len(hits) != 1 {
		t.Fatalf("%d requests, want 1", len(hits))
	}
	var body struct {
		DeliveredAt string `json:"delivered_at"`
	}
	if err := json.Unmarshal(hits[0].body, &body); err != nil {
		t.Fatal(err)
	}
	r := h.records(w)[n.ID]
	if r.DeliveredAt == nil || *r.DeliveredAt != body.DeliveredAt {
		t.Errorf("record delivered_at %v, want the body's %s", r.DeliveredAt, body.DeliveredAt)
	}
	if r.UpdatedAt <= body.DeliveredAt {
		t.Errorf("record updated_at %s, want after the send (%s) by the receiver's 400 ms", r.UpdatedAt, body.DeliveredAt)
	}
}

// TestQueueCountsOnAFreshNamespace: before the first delivery task the
// namespace's queue does not exist in asynq; `noticesd queue` must print
// zero counts then, not fail (it exited 1 with asynq's NOT_FOUND).
func TestQueueCountsOnAFreshNamespace(t *testing.T) {
	rdb, err := redisstore.Dial(config.Config{RedisURL: testservers.Redis(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	c, err := QueueCounts(rdb, testservers.Namespace(t))
	if err != nil {
		t.Fatalf("QueueCounts on a fresh namespace: %v; want zero counts", err)
	}
	if c != (Counts{}) {
		t.Errorf("QueueCounts on a fresh namespace = %+v, want all zero", c)
	}
}
