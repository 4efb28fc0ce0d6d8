package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/sqlite"
	"github.com/noticesd/noticesd/internal/webhook"
)

func TestDeliveredSignedAndShapedLikeTheAPI(t *testing.T) {
	f := newFix(t)
	w := f.watch(watchA)
	f.hook(w)
	ids := f.ingest(0, acnA, acnB, acnA, acnA, acnB)
	if n := f.dispatch(); n != 3 {
		t.Fatalf("dispatch created %d deliveries, want 3 (the notices of %s)", n, acnA)
	}
	if n := f.dispatch(); n != 0 {
		t.Fatalf("a second dispatch created %d", n)
	}
	f.clock.Advance(1234 * time.Millisecond)
	if n := f.attempt(); n != 3 {
		t.Fatalf("attempted %d, want 3", n)
	}
	got := f.rcv.got()
	if len(got) != 3 {
		t.Fatalf("receiver accepted %d deliveries, want 3", len(got))
	}
	want := map[string]bool{ids[0]: true, ids[2]: true, ids[3]: true}
	for _, r := range got {
		var n notice.Notice
		if err := json.Unmarshal(r.Notice, &n); err != nil {
			t.Fatal(err)
		}
		if !want[n.ID] {
			t.Errorf("delivered notice %s, which is not a match", n.ID)
		}
		if r.ID != webhook.DeliveryID(w, n.ID) || r.WatchID != w || r.Delivered != notice.Timestamp(f.clock.Now()) {
			t.Errorf("delivery %s: watch_id %s delivered_at %s", r.ID, r.WatchID, r.Delivered)
		}
		// The notice member is the API's notice object.
		stored, err := f.st.Notice(f.ctx, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		api, _ := json.Marshal(stored)
		if !sameJSON(t, r.Notice, api) {
			t.Errorf("notice member\n%s\nis not the API's notice object\n%s", r.Notice, api)
		}
		if !strings.HasPrefix(string(r.Body), `{"watch_id":`) {
			t.Errorf("body starts %.30s; want watch_id, delivered_at, notice in order", r.Body)
		}
	}
	for _, rec := range f.records(w) {
		if rec.Status != delivery.Delivered || rec.Attempts != 1 || rec.DeliveredAt == nil || rec.LastError != nil {
			t.Errorf("record %+v; want delivered after 1 attempt", rec)
		}
	}
	if n := f.attempt(); n != 0 {
		t.Fatalf("delivered records were attempted again (%d)", n)
	}
}

// TestEligibilityJudgedAtArrival: a notice published 47 hours before it
// arrived is eligible even when its delivery is created days later (the
// dispatcher or serve was down meanwhile); one that was 49 hours old on
// arrival is not.
func TestEligibilityJudgedAtArrival(t *testing.T) {
	f := newFix(t)
	w := f.watch(watchA)
	f.hook(w)
	f.clock.Advance(time.Hour)
	inWindow := f.ingest(47*time.Hour, acnA)
	tooOld := f.ingest(49*time.Hour, acnA)
	f.clock.Advance(72 * time.Hour) // nothing dispatched meanwhile
	if n := f.dispatch(); n != 1 {
		t.Fatalf("dispatch created %d deliveries, want 1 (%s, not %s)", n, inWindow[0], tooOld[0])
	}
	if recs := f.records(w); len(recs) != 1 || recs[0].NoticeID != inWindow[0] {
		t.Fatalf("records %+v, want one for %s", recs, inWindow[0])
	}
}

func TestEligibilityWebhookAttachedLater(t *testing.T) {
	f := newFix(t)
	f.ingest(0, acnA) // before the watch: never delivered
	w := f.watch(watchA)
	f.clock.Advance(time.Hour)
	oldArrival := f.ingest(0, acnA) // arrived after creation; 3 days old at registration
	f.dispatch()                    // no webhook yet: nothing, the cursor moves on
	f.clock.Advance(48 * time.Hour)
	recent := f.ingest(12*time.Hour, acnA) // published 12h before registration
	stale := f.ingest(60*time.Hour, acnA)  // published 60h before registration
	f.dispatch()
	f.clock.Advance(24 * time.Hour)
	// At registration: oldArrival was published 73h ago, recent 36h ago, stale 84h ago.
	f.hook(w)
	if n := f.dispatch(); n != 0 {
		t.Fatalf("dispatch after registration created %d more", n)
	}
	fresh := f.ingest(0, acnA)
	if n := f.dispatch(); n != 1 {
		t.Fatalf("a new arrival created %d deliveries, want 1", n)
	}
	f.attempt()
	got := map[string]bool{}
	for _, r := range f.rcv.got() {
		var n notice.Notice
		_ = json.Unmarshal(r.Notice, &n)
		got[n.ID] = true
	}
	if len(got) != 2 || !got[recent[0]] || !got[fresh[0]] {
		t.Fatalf("delivered %v; want only %s (recent at registration) and %s (arrived after); not %s, %s", got, recent[0], fresh[0], oldArrival[0], stale[0])
	}
}

func TestRetryScheduleOverHTTP(t *testing.T) {
	f := newFix(t)
	f.rcv.setStatus(func(int) int { return http.StatusServiceUnavailable })
	w := f.watch(watchA)
	f.hook(w)
	f.ingest(0, acnA)
	f.dispatch()
	start := f.clock.Now()
	var at []time.Duration
	for step := 0; step < 200 && len(at) < 6; step++ {
		if f.attempt() > 0 {
			at = append(at, f.clock.Now().Sub(start))
		}
		f.clock.Advance(time.Minute)
	}
	want := []time.Duration{0, 10 * time.Minute, 30 * time.Minute, 60 * time.Minute, 100 * time.Minute}
	if fmt.Sprint(at) != fmt.Sprint(want) {
		t.Fatalf("attempts at %v, want %v", at, want)
	}
	rec := f.records(w)[0]
	if rec.Status != delivery.Dead || rec.Attempts != 5 || rec.LastError == nil || *rec.LastError != "HTTP 503" {
		t.Fatalf("record %+v; want dead after 5 attempts with HTTP 503", rec)
	}
	if req, valid, _ := f.rcv.counts(); req != 5 || valid != 5 {
		t.Fatalf("receiver saw %d requests (%d valid), want 5", req, valid)
	}
}

func TestRotationMidRetry(t *testing.T) {
	f := newFix(t)
	f.rcv.setStatus(func(n int) int {
		if n == 1 {
			return http.StatusBadGateway
		}
		return http.StatusOK
	})
	w := f.watch(watchA)
	f.hook(w)
	f.ingest(0, acnA)
	f.dispatch()
	f.attempt() // fails with 502, retry in 10 minutes
	secret := webhook.NewSecret()
	if _, err := f.st.RotateSecret(f.ctx, f.account, w, secret, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.rcv.setSecret(secret) // the receiver now accepts only the new secret
	f.clock.Advance(unit)
	f.attempt()
	_, valid, unique := f.rcv.counts()
	if valid != 2 || unique != 1 || f.rcv.badSig != 0 {
		t.Fatalf("valid %d, accepted %d, bad signatures %d; want the retry signed with the new secret", valid, unique, f.rcv.badSig)
	}
	if rec := f.records(w)[0]; rec.Status != delivery.Delivered || rec.Attempts != 2 {
		t.Fatalf("record %+v", rec)
	}
}

// TestChangeAfterClaim: the secret is read again once the attempt is about
// to be signed, so an attempt claimed before a rotation goes out signed
// with the new secret only, and one claimed before the webhook was removed
// is not sent at all.
func TestChangeAfterClaim(t *testing.T) {
	tests := []struct {
		name   string
		change func(f *fix, w string) string // the receiver's secret after it, "" : removed
	}{
		{"rotated", func(f *fix, w string) string {
			secret := webhook.NewSecret()
			if _, err := f.st.RotateSecret(f.ctx, f.account, w, secret, f.clock.Now()); err != nil {
				f.t.Fatal(err)
			}
			return secret
		}},
		{"removed", func(f *fix, w string) string {
			if err := f.st.DeleteWebhook(f.ctx, f.account, w, f.clock.Now()); err != nil {
				f.t.Fatal(err)
			}
			return ""
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFix(t)
			w := f.watch(watchA)
			f.hook(w)
			f.ingest(0, acnA)
			f.dispatch()
			jobs, err := f.st.Claim(f.ctx, f.clock.Now(), store.ClaimRequest{Limit: 1, Lease: time.Minute})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("claim: %d jobs, %v", len(jobs), err)
			}
			secret := tc.change(f, w)
			if secret != "" {
				f.rcv.setSecret(secret) // the receiver now accepts only the new secret
			}
			a := Attempter{Sender: f.sender, Ledger: f.st, RetryUnit: unit, Now: f.clock.Now}
			d, err := a.Attempt(f.ctx, jobs[0])
			if err != nil {
				t.Fatal(err)
			}
			requests, valid, _ := f.rcv.counts()
			rec := f.records(w)[0]
			if secret == "" {
				if requests != 0 || d.Status != delivery.Dead || rec.Status != delivery.Dead || str(rec.LastError) != delivery.WebhookRemoved {
					t.Fatalf("%d requests sent, decision %+v, record %+v; want none sent and dead with %q", requests, d, rec, delivery.WebhookRemoved)
				}
				return
			}
			if requests != 1 || valid != 1 || f.rcv.badSig != 0 || d.Status != delivery.Delivered || rec.Status != delivery.Delivered {
				t.Fatalf("%d requests (%d valid, %d bad signatures), decision %+v, record %+v; want one signed with the new secret, delivered",
					requests, valid, f.rcv.badSig, d, rec)
			}
		})
	}
}

func TestOldSecretFailsAfterRotation(t *testing.T) {
	f := newFix(t)
	w := f.watch(watchA)
	f.hook(w)
	f.ingest(0, acnA)
	f.dispatch()
	// The receiver switched to a secret the service does not know: 401.
	f.rcv.setSecret(webhook.NewSecret())
	f.attempt()
	if rec := f.records(w)[0]; rec.Status != delivery.Pending || rec.LastError == nil || *rec.LastError != "HTTP 401" {
		t.Fatalf("record %+v; want pending with HTTP 401", rec)
	}
}

func TestLastErrorLandsInRecord(t *testing.T) {
	closed := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "https://" + addr + "/hook"
	}
	tests := []struct {
		name    string
		tweak   func(*webhook.SenderConfig)
		status  int                     // receiver's answer
		url     func(*testing.T) string // "" : the receiver
		hold    bool                    // the receiver never answers
		lastErr func(cfg webhook.SenderConfig, url string) string
	}{
		{"5xx", nil, http.StatusBadGateway, nil, false, func(webhook.SenderConfig, string) string { return "HTTP 502" }},
		{"4xx", nil, http.StatusGone, nil, false, func(webhook.SenderConfig, string) string { return "HTTP 410" }},
		{"redirect", nil, http.StatusMovedPermanently, nil, false, func(webhook.SenderConfig, string) string { return "redirect HTTP 301 not followed" }},
		{"timeout", func(c *webhook.SenderConfig) { c.Timeout = 300 * time.Millisecond }, 200, nil, true,
			func(webhook.SenderConfig, string) string { return "timeout after 300ms" }},
		{"connection refused", nil, 200, closed, false, func(webhook.SenderConfig, string) string { return "connection refused" }},
		{"blocked address", func(c *webhook.SenderConfig) { c.AllowPrivate = false }, 200, nil, false,
			func(webhook.SenderConfig, string) string { return "blocked address 127.0.0.1" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixWith(t, tt.tweak)
			f.rcv.setStatus(func(int) int { return tt.status })
			if tt.hold {
				f.rcv.hold, f.rcv.entered = make(chan struct{}), make(chan struct{}, 10)
				t.Cleanup(func() { close(f.rcv.hold) })
			}
			w := f.watch(watchA)
			f.hook(w)
			if tt.url != nil {
				if _, err := f.st.SetWebhook(f.ctx, f.account, w, tt.url(t), webhook.NewSecret(), f.clock.Now()); err != nil {
					t.Fatal(err)
				}
			}
			f.ingest(0, acnA)
			f.dispatch()
			f.attempt()
			rec := f.records(w)[0]
			want := tt.lastErr(webhook.SenderConfig{}, "")
			if rec.Status != delivery.Pending || rec.Attempts != 1 || rec.LastError == nil || *rec.LastError != want {
				t.Fatalf("record %+v (last_error %v); want pending after 1 attempt with last_error %q", rec, str(rec.LastError), want)
			}
		})
	}
}

func str(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestDeactivationAfterTenAndReactivationBurst(t *testing.T) {
	f := newFix(t)
	f.rcv.setStatus(func(int) int { return http.StatusInternalServerError })
	w := f.watch(watchA)
	f.hook(w)
	// Ten notices, each failing five times: the tenth dead one deactivates.
	f.ingest(0, strings.Split(strings.Repeat(acnA+",", 10), ",")[:10]...)
	f.dispatch()
	for i := 0; i < 5; i++ {
		if n := f.drain(); n != 10 {
			t.Fatalf("round %d attempted %d, want 10", i+1, n)
		}
		f.clock.Advance(time.Duration(i+1) * unit)
	}
	got := f.getWatch(w)
	if got.Active || !strings.Contains(got.DeactivatedReason, "10 consecutive") || !strings.Contains(got.DeactivatedReason, "HTTP 500") {
		t.Fatalf("watch active=%v reason=%q; want deactivated naming 10 and HTTP 500", got.Active, got.DeactivatedReason)
	}
	// While inactive, new matches are held; three days pass.
	f.rcv.setStatus(func(int) int { return http.StatusOK })
	f.ingest(0, acnA, acnA, acnA)
	if n := f.dispatch(); n != 3 {
		t.Fatalf("arrivals while inactive created %d, want 3 held", n)
	}
	f.clock.Advance(72 * time.Hour)
	if n := f.attempt(); n != 0 {
		t.Fatalf("attempted %d held deliveries", n)
	}
	// Reactivation releases them at once, older than two days as they are.
	f.patch(w, true)
	if n := f.drain(); n != 3 {
		t.Fatalf("reactivation burst attempted %d, want 3", n)
	}
	if _, _, unique := f.rcv.counts(); unique != 3 {
		t.Fatalf("receiver accepted %d, want 3", unique)
	}
}

func TestNineDeadNoticesKeepTheWatchActive(t *testing.T) {
	f := newFix(t)
	f.rcv.setStatus(func(int) int { return http.StatusInternalServerError })
	w := f.watch(watchA)
	f.hook(w)
	f.ingest(0, strings.Split(strings.Repeat(acnA+",", 9), ",")[:9]...)
	f.dispatch()
	for i := 0; i < 5; i++ {
		f.drain()
		f.clock.Advance(time.Duration(i+1) * unit)
	}
	if got := f.getWatch(w); !got.Active {
		t.Fatalf("deactivated after 9 dead notices: %q", got.DeactivatedReason)
	}
}

func TestDeletingTheWatchStopsDelivery(t *testing.T) {
	f := newFix(t)
	f.rcv.setStatus(func(int) int { return http.StatusInternalServerError })
	w := f.watch(watchA)
	f.hook(w)
	f.ingest(0, acnA)
	f.dispatch()
	f.attempt()
	if err := f.st.DeleteWatch(f.ctx, f.account, w); err != nil {
		t.Fatal(err)
	}
	f.ingest(0, acnA)
	if n := f.dispatch(); n != 0 {
		t.Fatalf("dispatch created %d for a deleted watch", n)
	}
	f.clock.Advance(24 * time.Hour)
	if n := f.attempt(); n != 0 {
		t.Fatalf("attempted %d deliveries of a deleted watch", n)
	}
}

func TestDispatcherReloadsWhenWatchesChange(t *testing.T) {
	f := newFix(t)
	first := f.watch(watchA)
	f.hook(first)
	second := f.watch(`{"identifiers": ["` + acnB + `"]}`)
	f.dispatch() // loads the index: the first watch only
	f.hook(second)
	f.ingest(0, acnB)
	if n := f.dispatch(); n != 1 {
		t.Fatalf("after the webhook registration the dispatcher created %d, want 1", n)
	}
	if rs := f.records(second); len(rs) != 1 {
		t.Fatalf("second watch has %d deliveries, want 1", len(rs))
	}
}

// racingQueue runs race just before the first Enqueue, after the
// Dispatcher matched its batch, and records what Enqueue answered.
type racingQueue struct {
	*sqlite.Store
	race    func()
	answers []error
}

func (q *racingQueue) Enqueue(ctx context.Context, arrivals []store.Arrival, through, version int64, now time.Time) (int, error) {
	if q.race != nil {
		q.race()
		q.race = nil
	}
	n, err := q.Store.Enqueue(ctx, arrivals, through, version, now)
	q.answers = append(q.answers, err)
	return n, err
}

func TestDispatcherRematchesARefusedBatch(t *testing.T) {
	f := newFix(t)
	first := f.watch(watchA)
	f.hook(first)
	second := f.watch(`{"identifiers": ["` + acnB + `"]}`)
	q := &racingQueue{Store: f.st}
	work, err := New(Config{Queue: q, Sender: f.sender, now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.ingest(0, acnA, acnB)
	q.race = func() { f.hook(second) } // the batch was matched without it
	if _, err := work.Dispatcher.RunOnce(f.ctx); err != nil {
		t.Fatal(err)
	}
	if len(q.answers) != 2 || !errors.Is(q.answers[0], store.ErrWatchSetChanged) || q.answers[1] != nil {
		t.Fatalf("Enqueue answered %v; want a refusal, then success after re-matching", q.answers)
	}
	if len(f.records(first)) != 1 || len(f.records(second)) != 1 {
		t.Fatalf("deliveries: first %d, second %d; want one each", len(f.records(first)), len(f.records(second)))
	}
	if cur, _ := f.st.ArrivalCursor(f.ctx); cur != 2 {
		t.Fatalf("cursor = %d, want 2", cur)
	}
}

func TestStartShutdownDeliversInRealTime(t *testing.T) {
	f := newFix(t)
	w := f.watch(watchA)
	f.hook(w)
	work, err := New(Config{Queue: f.st, Sender: f.sender, RetryUnit: unit, idlePoll: 50 * time.Millisecond, poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := work.Start(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.clock = nil // the loops run on the real clock
	if _, err := f.st.UpsertNotices(f.ctx, []notice.Notice{realNotice("RT-1")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { _, _, u := f.rcv.counts(); return u == 1 })
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	if err := work.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestShutdownDeadlineLeavesAttemptForRecovery(t *testing.T) {
	f := newFix(t)
	w := f.watch(watchA)
	f.hook(w)
	f.rcv.hold, f.rcv.entered = make(chan struct{}), make(chan struct{}, 10)
	work, err := New(Config{Queue: f.st, Sender: f.sender, RetryUnit: unit, idlePoll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.UpsertNotices(f.ctx, []notice.Notice{realNotice("RT-2")}); err != nil {
		t.Fatal(err)
	}
	if n, err := work.Dispatcher.RunOnce(f.ctx); err != nil || n != 1 {
		t.Fatalf("dispatch = %d, %v", n, err)
	}
	if err := work.Start(f.ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.rcv.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the attempt never reached the receiver")
	}
	ctx, cancel := context.WithCancel(f.ctx)
	cancel() // the deadline has passed already
	if err := work.Shutdown(ctx); err == nil {
		t.Fatal("Shutdown past its deadline with an attempt in flight returned nil")
	}
	rec := f.records(w)[0]
	if rec.Status != delivery.Pending || rec.Attempts != 1 || rec.LastError != nil {
		t.Fatalf("after a cut-off attempt: %+v; want pending, the attempt counted as begun, no outcome", rec)
	}
	// The next start recovers it and delivers.
	close(f.rcv.hold)
	f.rcv.mu.Lock()
	f.rcv.hold = nil
	f.rcv.mu.Unlock()
	again, err := New(Config{Queue: f.st, Sender: f.sender, RetryUnit: unit})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.st.Recover(f.ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v; want 1", n, err)
	}
	if n, err := again.runOnce(f.ctx); err != nil || n != 1 {
		t.Fatalf("runOnce after recovery = %d, %v", n, err)
	}
	if rec := f.records(w)[0]; rec.Status != delivery.Delivered || rec.Attempts != 1 {
		t.Fatalf("after recovery: %+v", rec)
	}
}

// realNotice is a notice of acnA published now on the real clock.
func realNotice(src string) notice.Notice {
	a := acnA
	return notice.Notice{SourceID: src, PublishedAt: notice.Timestamp(time.Now()), ACN: &a, CompanyName: "ALPHA PTY LTD",
		NoticeType: "Appointment", NoticeCode: "APP", NoticePurpose: "Appointment", State: "NSW", Status: "Registered"}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var _ store.Queue = (*racingQueue)(nil)

// TestRecordTimes: a delivered record's delivered_at is the delivered_at of
// the body the receiver got (when it was sent), not the time the answer
// came back; updated_at moves when an attempt begins (attempts changes
// then) and again when its outcome is recorded.
func TestRecordTimes(t *testing.T) {
	f := newFix(t)
	w := f.watch(watchA)
	f.hook(w)
	f.ingest(0, acnA)
	if n := f.dispatch(); n != 1 {
		t.Fatalf("dispatch created %d deliveries, want 1", n)
	}
	created := f.records(w)[0].CreatedAt
	f.clock.Advance(3 * time.Second)
	begun := notice.Timestamp(f.clock.Now())
	f.rcv.hold, f.rcv.entered = make(chan struct{}), make(chan struct{}, 1)
	// The receiver takes 7 s (on the fake clock) to answer.
	f.rcv.setStatus(func(int) int { f.clock.Advance(7 * time.Second); return http.StatusNoContent })
	done := make(chan int)
	go func() {
		n, _ := f.work.runOnce(f.ctx)
		done <- n
	}()
	<-f.rcv.entered
	if rec := f.records(w)[0]; rec.Attempts != 1 || rec.UpdatedAt != begun || rec.UpdatedAt == created {
		t.Errorf("during the attempt: attempts %d updated_at %s (created %s), want 1 and %s", rec.Attempts, rec.UpdatedAt, created, begun)
	}
	close(f.rcv.hold)
	if n := <-done; n != 1 {
		t.Fatalf("attempted %d, want 1", n)
	}
	got := f.rcv.got()
	if len(got) != 1 {
		t.Fatalf("receiver accepted %d deliveries, want 1", len(got))
	}
	rec := f.records(w)[0]
	if rec.DeliveredAt == nil || *rec.DeliveredAt != got[0].Delivered || got[0].Delivered != begun {
		t.Errorf("record delivered_at %v, body delivered_at %s; want both %s", rec.DeliveredAt, got[0].Delivered, begun)
	}
	if want := notice.Timestamp(f.clock.Now()); rec.UpdatedAt != want {
		t.Errorf("record updated_at %s, want the time of the outcome %s", rec.UpdatedAt, want)
	}
}
