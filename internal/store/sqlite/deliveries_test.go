package sqlite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/internal/webhook"
)

// unit is the retry unit of these tests: the schedule of SPEC.md.
const unit = 10 * time.Minute

// lease is the lease of claims in these tests.
const lease = 40 * time.Second

// qfix is a store with one account, a fake clock and helpers to drive the
// delivery queue as the worker would.
type qfix struct {
	t       *testing.T
	ctx     context.Context
	s       *Store
	clock   *storetest.Clock
	account string
	seq     int
}

func newQFix(t *testing.T) *qfix {
	t.Helper()
	clock := storetest.NewClock(storetest.Start)
	s := openTest(t, WithClock(clock.Now))
	ctx := context.Background()
	created, err := s.CreateAccount(ctx, "Acme", "enterprise")
	if err != nil {
		t.Fatal(err)
	}
	return &qfix{t: t, ctx: ctx, s: s, clock: clock, account: created.AccountID}
}

// watch creates a watch from a POST /v1/watches body and returns its id.
func (f *qfix) watch(body string) string {
	f.t.Helper()
	req, err := watch.ParseCreate([]byte(body))
	if err != nil {
		f.t.Fatalf("watch body %s: %v", body, err)
	}
	w, err := f.s.CreateWatch(f.ctx, watch.New(req, f.account, f.clock.Now()), account.DefaultPlans()["enterprise"])
	if err != nil {
		f.t.Fatal(err)
	}
	return w.ID
}

// hook registers a webhook on the watch now and returns its secret.
func (f *qfix) hook(watchID string) string {
	f.t.Helper()
	secret := webhook.NewSecret()
	if _, err := f.s.SetWebhook(f.ctx, f.account, watchID, "https://hooks.example.com/"+watchID, secret, f.clock.Now()); err != nil {
		f.t.Fatal(err)
	}
	return secret
}

// notice stores a new notice of acn published ago before now and returns
// it as stored (with its seq).
func (f *qfix) notice(acn string, ago time.Duration) notice.Notice {
	f.t.Helper()
	n := f.newNotice(acn, f.clock.Now().Add(-ago))
	if _, err := f.s.UpsertNotices(f.ctx, []notice.Notice{n}); err != nil {
		f.t.Fatal(err)
	}
	latest, err := f.s.LatestSeq(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	ns, err := f.s.NoticesAfter(f.ctx, latest-1, 1)
	if err != nil || len(ns) != 1 {
		f.t.Fatalf("read back notice: %v %v", ns, err)
	}
	return ns[0]
}

// newNotice builds the next notice of acn published at.
func (f *qfix) newNotice(acn string, at time.Time) notice.Notice {
	f.seq++
	a := acn
	return notice.Notice{
		SourceID: fmt.Sprintf("SRC-%04d", f.seq), PublishedAt: notice.Timestamp(at),
		ACN: &a, CompanyName: "ALPHA PTY LTD", NoticeType: "Appointment of liquidator",
		NoticeCode: "APP", NoticePurpose: "Appointment", State: "NSW", Status: "In Liquidation",
	}
}

// enqueue hands the notices to Enqueue as matching the watches, at the
// current watch-set version, and returns how many deliveries it created.
func (f *qfix) enqueue(ns []notice.Notice, watches ...string) int {
	f.t.Helper()
	v, err := f.s.WatchSetVersion(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	var arrivals []store.Arrival
	var through int64
	for _, n := range ns {
		arrivals = append(arrivals, store.Arrival{Notice: n, Watches: watches})
		through = max(through, n.Seq)
	}
	created, err := f.s.Enqueue(f.ctx, arrivals, through, v, f.clock.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	return created
}

// claim claims what is due now (no per-watch bound).
func (f *qfix) claim() []store.Job {
	f.t.Helper()
	jobs, err := f.s.Claim(f.ctx, f.clock.Now(), store.ClaimRequest{Limit: 100, Lease: lease})
	if err != nil {
		f.t.Fatal(err)
	}
	return jobs
}

// complete records an outcome now.
func (f *qfix) complete(j store.Job, ok bool, lastErr string) {
	f.t.Helper()
	if err := f.s.Complete(f.ctx, j, store.Outcome{OK: ok, LastError: lastErr, RetryUnit: unit}, f.clock.Now()); err != nil {
		f.t.Fatal(err)
	}
}

// records lists the watch's deliveries.
func (f *qfix) records(watchID string) []delivery.Record {
	f.t.Helper()
	rs, err := f.s.Deliveries(f.ctx, f.account, watchID, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	return rs
}

// record returns the one delivery of the watch.
func (f *qfix) record(watchID string) delivery.Record {
	f.t.Helper()
	rs := f.records(watchID)
	if len(rs) != 1 {
		f.t.Fatalf("watch %s has %d deliveries, want 1: %+v", watchID, len(rs), rs)
	}
	return rs[0]
}

// getWatch reads the watch.
func (f *qfix) getWatch(id string) watch.Watch {
	f.t.Helper()
	w, err := f.s.Watch(f.ctx, f.account, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return w
}

// patch applies PATCH {"active": active} now.
func (f *qfix) patch(id string, active bool) {
	f.t.Helper()
	if _, err := f.s.UpdateWatch(f.ctx, f.account, id, watch.Patch{Active: &active}, f.clock.Now()); err != nil {
		f.t.Fatal(err)
	}
}

const (
	acnA     = storetest.ACNAlpha
	watchA   = `{"identifiers": ["` + storetest.ACNAlpha + `"]}`
	hookHost = "https://hooks.example.com/"
)

func str(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestEnqueueEligibility(t *testing.T) {
	tests := []struct {
		name string
		// setup creates the watch and the notice and returns both.
		setup func(f *qfix) (watchID string, n notice.Notice)
		want  int
		held  bool
	}{
		{"arrived after creation, published now", func(f *qfix) (string, notice.Notice) {
			w := f.watch(watchA)
			f.hook(w)
			return w, f.notice(acnA, 0)
		}, 1, false},
		{"published 47h59m ago", func(f *qfix) (string, notice.Notice) {
			w := f.watch(watchA)
			f.hook(w)
			return w, f.notice(acnA, 47*time.Hour+59*time.Minute)
		}, 1, false},
		{"published exactly 48h ago", func(f *qfix) (string, notice.Notice) {
			w := f.watch(watchA)
			f.hook(w)
			return w, f.notice(acnA, 48*time.Hour)
		}, 1, false},
		{"published 48h and 1ms ago", func(f *qfix) (string, notice.Notice) {
			w := f.watch(watchA)
			f.hook(w)
			return w, f.notice(acnA, 48*time.Hour+time.Millisecond)
		}, 0, false},
		{"arrived before the watch was created", func(f *qfix) (string, notice.Notice) {
			n := f.notice(acnA, 0)
			w := f.watch(watchA)
			f.hook(w)
			return w, n
		}, 0, false},
		{"watch without webhook", func(f *qfix) (string, notice.Notice) {
			return f.watch(watchA), f.notice(acnA, 0)
		}, 0, false},
		{"inactive watch: created held", func(f *qfix) (string, notice.Notice) {
			w := f.watch(watchA)
			f.hook(w)
			f.patch(w, false)
			return w, f.notice(acnA, 0)
		}, 1, true},
		{"deleted watch", func(f *qfix) (string, notice.Notice) {
			w := f.watch(watchA)
			f.hook(w)
			n := f.notice(acnA, 0)
			if err := f.s.DeleteWatch(f.ctx, f.account, w); err != nil {
				t.Fatal(err)
			}
			return w, n
		}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newQFix(t)
			w, n := tt.setup(f)
			if got := f.enqueue([]notice.Notice{n}, w); got != tt.want {
				t.Fatalf("Enqueue created %d deliveries, want %d", got, tt.want)
			}
			if got := f.enqueue([]notice.Notice{n}, w); got != 0 {
				t.Fatalf("second Enqueue of the same pair created %d, want 0 (at most once per pair)", got)
			}
			if tt.want == 0 {
				return
			}
			r := f.record(w)
			if r.ID != webhook.DeliveryID(w, n.ID) || r.NoticeID != n.ID || r.NoticeSeq != n.Seq || r.Status != delivery.Pending ||
				r.Attempts != 0 || r.LastError != nil || r.DeliveredAt != nil {
				t.Fatalf("record = %+v", r)
			}
			if held := r.NextAttemptAt == nil; held != tt.held {
				t.Fatalf("held = %v (next_attempt_at %s), want %v", held, str(r.NextAttemptAt), tt.held)
			}
			if jobs := f.claim(); len(jobs) != map[bool]int{true: 0, false: 1}[tt.held] {
				t.Fatalf("claimed %d jobs, held=%v", len(jobs), tt.held)
			}
		})
	}
}

func TestEnqueueCursorAndWatchSetVersion(t *testing.T) {
	f := newQFix(t)
	cur, err := f.s.ArrivalCursor(f.ctx)
	if err != nil || cur != 0 {
		t.Fatalf("fresh cursor = %d, %v; want 0", cur, err)
	}
	w := f.watch(watchA)
	v0, _ := f.s.WatchSetVersion(f.ctx)
	f.hook(w)
	v1, _ := f.s.WatchSetVersion(f.ctx)
	if v1 == v0 {
		t.Fatal("registering a webhook did not move the watch-set version")
	}
	n := f.notice(acnA, 0)
	arrivals := []store.Arrival{{Notice: n, Watches: []string{w}}}
	if _, err := f.s.Enqueue(f.ctx, arrivals, n.Seq, v0, f.clock.Now()); !errors.Is(err, store.ErrWatchSetChanged) {
		t.Fatalf("Enqueue at a stale version: err = %v, want ErrWatchSetChanged", err)
	}
	if cur, _ := f.s.ArrivalCursor(f.ctx); cur != 0 {
		t.Fatalf("a refused Enqueue moved the cursor to %d", cur)
	}
	if len(f.records(w)) != 0 {
		t.Fatal("a refused Enqueue wrote deliveries")
	}
	if created, err := f.s.Enqueue(f.ctx, arrivals, n.Seq+5, v1, f.clock.Now()); err != nil || created != 1 {
		t.Fatalf("Enqueue = %d, %v; want 1", created, err)
	}
	if cur, _ := f.s.ArrivalCursor(f.ctx); cur != n.Seq+5 {
		t.Fatalf("cursor = %d, want %d", cur, n.Seq+5)
	}
	if _, err := f.s.Enqueue(f.ctx, nil, 1, v1, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if cur, _ := f.s.ArrivalCursor(f.ctx); cur != n.Seq+5 {
		t.Fatalf("cursor moved back to %d", cur)
	}
}

func TestWatchSetVersionMoves(t *testing.T) {
	f := newQFix(t)
	version := func() int64 {
		v, err := f.s.WatchSetVersion(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	steps := []struct {
		name  string
		do    func(w string)
		moves bool
	}{
		{"create a watch", func(string) { f.watch(watchA) }, false},
		{"register a webhook", func(w string) { f.hook(w) }, true},
		{"replace the webhook", func(w string) { f.hook(w) }, false},
		{"rotate the secret", func(w string) {
			if _, err := f.s.RotateSecret(f.ctx, f.account, w, webhook.NewSecret(), f.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"deactivate", func(w string) { f.patch(w, false) }, false},
		{"reactivate", func(w string) { f.patch(w, true) }, false},
		{"delete the webhook", func(w string) {
			if err := f.s.DeleteWebhook(f.ctx, f.account, w, f.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"register again", func(w string) { f.hook(w) }, true},
		{"delete the watch", func(w string) {
			if err := f.s.DeleteWatch(f.ctx, f.account, w); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	w := f.watch(watchA)
	for _, st := range steps {
		before := version()
		st.do(w)
		if moved := version() != before; moved != st.moves {
			t.Errorf("%s: version moved = %v, want %v", st.name, moved, st.moves)
		}
	}
}

func TestWatchSetEntries(t *testing.T) {
	f := newQFix(t)
	storetest.LoadRegister(t, storetest.Backend{Notices: f.s, Writer: f.s, Register: f.s, Clock: f.clock}, storetest.RegisterRows())
	withHook := f.watch(`{"identifiers": ["` + storetest.ABNAlpha + `"], "filters": {"state": "NSW"}}`)
	f.hook(withHook)
	f.watch(watchA) // no webhook: not in the set
	inactive := f.watch(`{"filters": {"notice_purpose": "Appointment"}}`)
	f.hook(inactive)
	f.patch(inactive, false)

	ws, err := f.s.WatchSet(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := f.s.WatchSetVersion(f.ctx)
	if ws.Version != v || len(ws.Entries) != 2 {
		t.Fatalf("WatchSet = version %d with %d entries, want version %d with 2", ws.Version, len(ws.Entries), v)
	}
	byID := map[string]int{}
	for i, e := range ws.Entries {
		byID[e.WatchID] = i
	}
	e := ws.Entries[byID[withHook]]
	if fmt.Sprint(e.Identifiers) != fmt.Sprint([]string{storetest.ABNAlpha, storetest.ACNAlpha}) || !e.Active ||
		fmt.Sprint(e.Filter.State) != "[NSW]" || !e.Filter.IncludeDeregistration {
		t.Errorf("entry = %+v; want the ABN plus its register ACN, active, state NSW, deregistration included", e)
	}
	if e := ws.Entries[byID[inactive]]; e.Active || len(e.Identifiers) != 0 || fmt.Sprint(e.Filter.NoticePurpose) != "[Appointment]" {
		t.Errorf("inactive entry = %+v", e)
	}
	acns, err := f.s.ResolveABNs(f.ctx, []string{storetest.ABNAlpha, storetest.ABNGamma})
	if err != nil || len(acns) != 1 || fmt.Sprint(acns[storetest.ABNAlpha]) != "["+storetest.ACNAlpha+"]" {
		t.Errorf("ResolveABNs = %v, %v; want only %s -> %s", acns, err, storetest.ABNAlpha, storetest.ACNAlpha)
	}
}

func TestSetWebhookQueuesRecentMatches(t *testing.T) {
	f := newQFix(t)
	before := f.notice(acnA, 0) // arrived before the watch: never
	w := f.watch(watchA)
	f.clock.Advance(24 * time.Hour)
	old := f.notice(acnA, 30*time.Hour)  // arrived after; published 30h before arrival
	recent := f.notice(acnA, time.Hour)  // arrived after; published 1h before arrival
	other := f.notice("600000002", 0)    // another company: no match
	dereg := f.notice(acnA, 2*time.Hour) // matches too
	f.clock.Advance(20 * time.Hour)      // registration: old is now 50h old, recent 21h, dereg 22h
	_ = before
	_ = other
	f.hook(w)
	got := map[string]bool{}
	for _, r := range f.records(w) {
		got[r.NoticeID] = true
		if r.Status != delivery.Pending || r.NextAttemptAt == nil || *r.NextAttemptAt != notice.Timestamp(f.clock.Now()) {
			t.Errorf("backlog record %+v: want pending, due at registration", r)
		}
	}
	want := map[string]bool{recent.ID: true, dereg.ID: true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("registration queued %v, want %v (old=%s before=%s other=%s must not be)", got, want, old.ID, before.ID, other.ID)
	}
	// The dispatcher later offering the same pairs creates nothing more.
	if n := f.enqueue([]notice.Notice{recent, dereg}, w); n != 0 {
		t.Fatalf("Enqueue after registration created %d, want 0", n)
	}
}

func TestCompleteStateTable(t *testing.T) {
	tests := []struct {
		name      string
		fails     int  // failed attempts before the one under test
		ok        bool // outcome of the attempt under test
		status    string
		attempts  int
		nextAfter time.Duration // -1: no next attempt
	}{
		{"pending, 2xx -> delivered", 0, true, delivery.Delivered, 1, -1},
		{"pending, 1st attempt fails -> pending, retry in 10m", 0, false, delivery.Pending, 1, 10 * time.Minute},
		{"pending, 4th attempt fails -> pending, retry in 40m", 3, false, delivery.Pending, 4, 40 * time.Minute},
		{"pending, 4 failures then 2xx -> delivered", 4, true, delivery.Delivered, 5, -1},
		{"pending, 5th attempt fails -> dead", 4, false, delivery.Dead, 5, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newQFix(t)
			w := f.watch(watchA)
			f.hook(w)
			f.enqueue([]notice.Notice{f.notice(acnA, 0)}, w)
			for i := 0; i < tt.fails; i++ {
				jobs := f.claim()
				if len(jobs) != 1 {
					t.Fatalf("attempt %d: claimed %d", i+1, len(jobs))
				}
				f.complete(jobs[0], false, "HTTP 503")
				f.clock.Advance(time.Duration(i+1) * unit)
			}
			jobs := f.claim()
			if len(jobs) != 1 || jobs[0].Attempt != tt.fails+1 {
				t.Fatalf("claimed %+v, want one job, attempt %d", jobs, tt.fails+1)
			}
			f.clock.Advance(1500 * time.Millisecond)
			f.complete(jobs[0], tt.ok, "HTTP 502")
			r := f.record(w)
			if r.Status != tt.status || r.Attempts != tt.attempts {
				t.Fatalf("record = %s after %d attempts, want %s after %d", r.Status, r.Attempts, tt.status, tt.attempts)
			}
			now := notice.Timestamp(f.clock.Now())
			if r.UpdatedAt != now {
				t.Errorf("updated_at = %s, want %s", r.UpdatedAt, now)
			}
			if tt.nextAfter < 0 {
				if r.NextAttemptAt != nil {
					t.Errorf("next_attempt_at = %s, want null", *r.NextAttemptAt)
				}
			} else if want := notice.Timestamp(f.clock.Now().Add(tt.nextAfter)); str(r.NextAttemptAt) != want {
				t.Errorf("next_attempt_at = %s, want %s", str(r.NextAttemptAt), want)
			}
			if tt.status == delivery.Delivered {
				if str(r.DeliveredAt) != now {
					t.Errorf("delivered_at = %s, want %s", str(r.DeliveredAt), now)
				}
			} else if r.DeliveredAt != nil || str(r.LastError) != "HTTP 502" {
				t.Errorf("delivered_at = %s, last_error = %s; want null and HTTP 502", str(r.DeliveredAt), str(r.LastError))
			}
			if tt.status != delivery.Pending {
				f.clock.Advance(24 * time.Hour)
				if jobs := f.claim(); len(jobs) != 0 {
					t.Fatalf("a %s delivery was claimed again", tt.status)
				}
			}
		})
	}
}

func TestRetrySchedule(t *testing.T) {
	f := newQFix(t)
	w := f.watch(watchA)
	f.hook(w)
	f.enqueue([]notice.Notice{f.notice(acnA, 0)}, w)
	start := f.clock.Now()
	var at []time.Duration
	for attempt := 1; attempt <= delivery.MaxAttempts; attempt++ {
		jobs := f.claim()
		if len(jobs) != 1 {
			t.Fatalf("attempt %d not due at %s", attempt, f.clock.Now().Sub(start))
		}
		at = append(at, f.clock.Now().Sub(start))
		f.complete(jobs[0], false, "HTTP 500")
		next := f.record(w).NextAttemptAt
		if next == nil {
			break
		}
		due, _ := time.Parse(time.RFC3339Nano, *next)
		f.clock.Advance(due.Sub(f.clock.Now()) - time.Millisecond)
		if jobs := f.claim(); len(jobs) != 0 {
			t.Fatalf("attempt %d claimed 1 ms early", attempt+1)
		}
		f.clock.Advance(time.Millisecond)
	}
	want := []time.Duration{0, 10 * time.Minute, 30 * time.Minute, 60 * time.Minute, 100 * time.Minute}
	if fmt.Sprint(at) != fmt.Sprint(want) {
		t.Fatalf("attempts at %v, want %v (waits of 10, 20, 30, 40 minutes)", at, want)
	}
	if r := f.record(w); r.Status != delivery.Dead || r.Attempts != 5 {
		t.Fatalf("after 5 failures: %+v", r)
	}
}

// finishNotice makes one new notice of the watch dead after five
// failures, or delivered at the first attempt when ok.
func (f *qfix) finishNotice(w string, ok bool, lastErr string) {
	f.t.Helper()
	f.enqueue([]notice.Notice{f.notice(acnA, 0)}, w)
	for attempt := 1; ; attempt++ {
		jobs := f.claim()
		if len(jobs) != 1 {
			f.t.Fatalf("attempt %d: claimed %d jobs", attempt, len(jobs))
		}
		f.complete(jobs[0], ok, lastErr)
		if ok || attempt == delivery.MaxAttempts {
			return
		}
		f.clock.Advance(time.Duration(attempt) * unit)
	}
}

func failures(t *testing.T, s *Store, id string) int {
	t.Helper()
	var n int
	if err := s.read.QueryRow("SELECT consecutive_failures FROM watches WHERE id = ?", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDeactivationAfterTenConsecutiveDeadNotices(t *testing.T) {
	f := newQFix(t)
	w := f.watch(watchA)
	f.hook(w)
	for i := 0; i < 5; i++ {
		f.finishNotice(w, false, "HTTP 500")
	}
	f.finishNotice(w, true, "") // a delivered notice resets the count
	if n := failures(t, f.s, w); n != 0 {
		t.Fatalf("after a delivered notice the count is %d, want 0", n)
	}
	for i := 1; i <= 9; i++ {
		f.finishNotice(w, false, "HTTP 502")
	}
	if got := f.getWatch(w); !got.Active || failures(t, f.s, w) != 9 {
		t.Fatalf("after 9 dead notices: active=%v count=%d; want active with 9", got.Active, failures(t, f.s, w))
	}
	// A scheduled retry of another notice, to see it held.
	f.enqueue([]notice.Notice{f.notice(acnA, 0)}, w)
	j := f.claim()[0]
	// A long unit keeps its retry out of the way of the next notice's.
	if err := f.s.Complete(f.ctx, j, store.Outcome{LastError: "HTTP 504", RetryUnit: 1000 * time.Hour}, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.finishNotice(w, false, "connection refused")
	got := f.getWatch(w)
	if got.Active {
		t.Fatal("still active after 10 consecutive dead notices")
	}
	for _, part := range []string{"10 consecutive", "connection refused", `PATCH {"active": true}`} {
		if !strings.Contains(got.DeactivatedReason, part) {
			t.Errorf("deactivated_reason %q does not mention %q", got.DeactivatedReason, part)
		}
	}
	held := f.records(w)[1] // the one with a scheduled retry (newest is the 10th dead one)
	if held.ID != j.DeliveryID || held.Status != delivery.Pending || held.NextAttemptAt != nil {
		t.Fatalf("retry of a deactivated watch = %+v; want pending and held (next_attempt_at null)", held)
	}
	f.clock.Advance(time.Hour)
	if jobs := f.claim(); len(jobs) != 0 {
		t.Fatalf("claimed %d deliveries of a deactivated watch", len(jobs))
	}
}

func TestReactivationReleasesHeldDeliveriesAtOnce(t *testing.T) {
	f := newQFix(t)
	w := f.watch(watchA)
	f.hook(w)
	// Scheduled retry at deactivation time.
	first := f.notice(acnA, 0)
	f.enqueue([]notice.Notice{first}, w)
	f.complete(f.claim()[0], false, "HTTP 500")
	// In flight at deactivation: finishes and is then held.
	inflight := f.notice(acnA, 0)
	f.enqueue([]notice.Notice{inflight}, w)
	job := f.claim()[0]
	f.patch(w, false)
	f.complete(job, false, "HTTP 500")
	// Arrives while inactive: created held.
	f.clock.Advance(time.Hour)
	late := f.notice(acnA, 0)
	if n := f.enqueue([]notice.Notice{late}, w); n != 1 {
		t.Fatalf("arrival while inactive created %d, want 1 (held)", n)
	}
	for _, r := range f.records(w) {
		if r.Status != delivery.Pending || r.NextAttemptAt != nil {
			t.Fatalf("while inactive: %+v; want pending and held", r)
		}
	}
	// Three days later every notice is older than the window.
	f.clock.Advance(72 * time.Hour)
	if jobs := f.claim(); len(jobs) != 0 {
		t.Fatal("held deliveries claimed before reactivation")
	}
	f.patch(w, true)
	now := notice.Timestamp(f.clock.Now())
	for _, r := range f.records(w) {
		if str(r.NextAttemptAt) != now {
			t.Fatalf("after reactivation: %+v; want due at %s", r, now)
		}
	}
	jobs := f.claim()
	if len(jobs) != 3 {
		t.Fatalf("reactivation burst claimed %d deliveries, want 3 (no window check)", len(jobs))
	}
	attempts := map[string]int{}
	for _, j := range jobs {
		attempts[j.Notice.ID] = j.Attempt
	}
	if attempts[first.ID] != 2 || attempts[inflight.ID] != 2 || attempts[late.ID] != 1 {
		t.Fatalf("attempt numbers %v: the schedule's counts must survive the hold", attempts)
	}
}

func TestManualDeactivationDoesNotCount(t *testing.T) {
	f := newQFix(t)
	w := f.watch(watchA)
	f.hook(w)
	for i := 0; i < 9; i++ {
		f.finishNotice(w, false, "HTTP 500")
	}
	f.patch(w, false)
	f.patch(w, true)
	if n := failures(t, f.s, w); n != 0 {
		t.Fatalf("reactivation left the failure count at %d, want 0", n)
	}
	f.finishNotice(w, false, "HTTP 500")
	if !f.getWatch(w).Active {
		t.Fatal("deactivated after 1 failure following a reactivation")
	}
}

func TestRotationAppliesToScheduledRetries(t *testing.T) {
	f := newQFix(t)
	w := f.watch(watchA)
	oldSecret := f.hook(w)
	f.enqueue([]notice.Notice{f.notice(acnA, 0)}, w)
	j := f.claim()[0]
	if j.Secret != oldSecret || j.URL != hookHost+w {
		t.Fatalf("job = url %s secret %s; want %s and the registered secret", j.URL, j.Secret, hookHost+w)
	}
	f.complete(j, false, "HTTP 401")
	newSecret := webhook.NewSecret()
	if _, err := f.s.RotateSecret(f.ctx, f.account, w, newSecret, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(unit)
	j = f.claim()[0]
	if j.Secret != newSecret || j.Attempt != 2 || j.DeliveryID != f.record(w).ID {
		t.Fatalf("retry after rotation: secret new=%v attempt %d; want the new secret, attempt 2, same id", j.Secret == newSecret, j.Attempt)
	}
}

func TestDeleteWebhookKillsPending(t *testing.T) {
	f := newQFix(t)
	w := f.watch(watchA)
	f.hook(w)
	delivered := f.notice(acnA, 0)
	f.enqueue([]notice.Notice{delivered}, w)
	f.complete(f.claim()[0], true, "")
	retrying := f.notice(acnA, 0)
	f.enqueue([]notice.Notice{retrying}, w)
	f.complete(f.claim()[0], false, "HTTP 500")
	flying := f.notice(acnA, 0)
	f.enqueue([]notice.Notice{flying}, w)
	inFlight := f.claim()[0]
	if err := f.s.DeleteWebhook(f.ctx, f.account, w, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.complete(inFlight, true, "") // ignored: it is dead now
	for _, r := range f.records(w) {
		switch r.NoticeID {
		case delivered.ID:
			if r.Status != delivery.Delivered {
				t.Errorf("delivered record became %s", r.Status)
			}
		default:
			if r.Status != delivery.Dead || str(r.LastError) != delivery.WebhookRemoved || r.NextAttemptAt != nil {
				t.Errorf("pending record after DELETE webhook = %+v; want dead, %q", r, delivery.WebhookRemoved)
			}
		}
	}
	if n := failures(t, f.s, w); n != 0 {
		t.Errorf("removal counted %d failed notices, want 0", n)
	}
	for _, call := range []func() error{
		func() error { return f.s.DeleteWebhook(f.ctx, f.account, w, f.clock.Now()) },
		func() error { _, err := f.s.RotateSecret(f.ctx, f.account, w, "whsec_x", f.clock.Now()); return err },
	} {
		if err := call(); !errs.Is(err, errs.NotFound) {
			t.Errorf("on a watch without webhook: %v, want not_found", err)
		}
	}
}

func TestDeleteWatchRemovesDeliveries(t *testing.T) {
	f := newQFix(t)
	w := f.watch(watchA)
	f.hook(w)
	f.enqueue([]notice.Notice{f.notice(acnA, 0), f.notice(acnA, 0)}, w)
	jobs := f.claim()
	if err := f.s.DeleteWatch(f.ctx, f.account, w); err != nil {
		t.Fatal(err)
	}
	f.complete(jobs[0], false, "HTTP 500") // a late outcome is ignored
	var n int
	if err := f.s.read.QueryRow("SELECT count(*) FROM deliveries").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d deliveries left after deleting the watch (%v)", n, err)
	}
	if _, ok, _ := f.s.NextDue(f.ctx); ok {
		t.Fatal("NextDue reports a delivery of a deleted watch")
	}
}

func TestLeaseExpiryAndRecover(t *testing.T) {
	f := newQFix(t)
	w := f.watch(watchA)
	f.hook(w)
	f.enqueue([]notice.Notice{f.notice(acnA, 0)}, w)
	j := f.claim()[0]
	if r := f.record(w); r.NextAttemptAt != nil || r.Attempts != 1 {
		t.Fatalf("in flight: %+v; want next_attempt_at null and the attempt counted as begun", r)
	}
	f.clock.Advance(lease - time.Millisecond)
	if jobs := f.claim(); len(jobs) != 0 {
		t.Fatal("claimed a delivery whose lease is live")
	}
	f.clock.Advance(time.Millisecond)
	again := f.claim()
	if len(again) != 1 || again[0].Attempt != j.Attempt+1 {
		t.Fatalf("after the lease: %+v; want the same delivery, attempt %d", again, j.Attempt+1)
	}
	// A crash: Recover at start makes it due at once and uncounts the
	// attempt it cut off (the first one's lease had expired: it counts).
	n, err := f.s.Recover(f.ctx, f.clock.Now())
	if err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v; want 1", n, err)
	}
	if r := f.record(w); str(r.NextAttemptAt) != notice.Timestamp(f.clock.Now()) || r.Attempts != 1 {
		t.Fatalf("recovered: %+v", r)
	}
	f.complete(j, false, "HTTP 500") // the stale report of the first claim: noted, schedule unchanged
	if r := f.record(w); r.Attempts != 1 || str(r.LastError) != "attempt 1: HTTP 500" || str(r.NextAttemptAt) != notice.Timestamp(f.clock.Now()) {
		t.Fatalf("after the stale report: %+v", r)
	}
	f.complete(j, false, "HTTP 500") // the same report twice changes nothing
	if r := f.record(w); r.Attempts != 1 {
		t.Fatalf("a repeated report counted: attempts = %d", r.Attempts)
	}
	// Recover holds leased deliveries of inactive watches.
	f.clock.Advance(unit)
	f.claim()
	f.patch(w, false)
	if n, _ := f.s.Recover(f.ctx, f.clock.Now()); n != 1 {
		t.Fatalf("Recover = %d, want 1", n)
	}
	if r := f.record(w); r.NextAttemptAt != nil {
		t.Fatalf("recovered delivery of an inactive watch is due at %s; want held", *r.NextAttemptAt)
	}
}

func TestClaimPerWatchBound(t *testing.T) {
	f := newQFix(t)
	a := f.watch(watchA)
	f.hook(a)
	b := f.watch(`{"identifiers": ["600000002"]}`)
	f.hook(b)
	var ns []notice.Notice
	for i := 0; i < 10; i++ {
		ns = append(ns, f.notice(acnA, 0))
	}
	f.enqueue(ns, a)
	f.clock.Advance(time.Second)
	f.enqueue([]notice.Notice{f.notice("600000002", 0), f.notice("600000002", 0)}, b)
	count := func(jobs []store.Job) map[string]int {
		m := map[string]int{}
		for _, j := range jobs {
			m[j.WatchID]++
		}
		return m
	}
	jobs, err := f.s.Claim(f.ctx, f.clock.Now(), store.ClaimRequest{Limit: 8, Lease: lease, PerWatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	if c := count(jobs); c[a] != 4 || c[b] != 2 {
		t.Fatalf("claimed %v; want 4 of a (its bound) and 2 of b", c)
	}
	jobs, _ = f.s.Claim(f.ctx, f.clock.Now(), store.ClaimRequest{Limit: 8, Lease: lease, PerWatch: 4, InFlight: map[string]int{a: 3}})
	if c := count(jobs); c[a] != 1 || len(jobs) != 1 {
		t.Fatalf("with 3 of a in flight claimed %v; want 1 of a", c)
	}
	jobs, _ = f.s.Claim(f.ctx, f.clock.Now(), store.ClaimRequest{Limit: 8, Lease: lease, PerWatch: 4, InFlight: map[string]int{a: 4}})
	if len(jobs) != 0 {
		t.Fatalf("with a at its bound claimed %d", len(jobs))
	}
	jobs, _ = f.s.Claim(f.ctx, f.clock.Now(), store.ClaimRequest{Limit: 8, Lease: lease})
	if len(jobs) != 5 {
		t.Fatalf("unbounded claim got %d, want the 5 left", len(jobs))
	}
	// Oldest due first; Job carries the notice and the watch's URL.
	if j := jobs[0]; j.Notice.ID != ns[5].ID || j.URL != hookHost+a {
		t.Fatalf("first job %s %s; want notice %s to %s", j.Notice.ID, j.URL, ns[5].ID, hookHost+a)
	}
}

func TestDeliveriesList(t *testing.T) {
	f := newQFix(t)
	w := f.watch(watchA)
	f.hook(w)
	if rs := f.records(w); len(rs) != 0 {
		t.Fatalf("a watch that matched nothing lists %d deliveries", len(rs))
	}
	var ids []string
	for i := 0; i < 5; i++ {
		n := f.notice(acnA, 0)
		f.enqueue([]notice.Notice{n}, w)
		ids = append(ids, webhook.DeliveryID(w, n.ID))
		f.clock.Advance(time.Second)
	}
	rs, err := f.s.Deliveries(f.ctx, f.account, w, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].ID != ids[4] || rs[2].ID != ids[2] {
		t.Fatalf("Deliveries(limit 3) = %v; want the 3 newest, newest first", rs)
	}
	for _, r := range rs {
		if !strings.HasPrefix(r.ID, "dlv_") || r.CreatedAt == "" || r.UpdatedAt != r.CreatedAt || r.LastError != nil {
			t.Errorf("record %+v", r)
		}
	}
	other, err := f.s.CreateAccount(f.ctx, "Other", "free")
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"Deliveries": func() error { _, err := f.s.Deliveries(f.ctx, other.AccountID, w, 10); return err },
		"SetWebhook": func() error {
			_, err := f.s.SetWebhook(f.ctx, other.AccountID, w, "https://x.example/", "whsec_x", f.clock.Now())
			return err
		},
		"RotateSecret": func() error {
			_, err := f.s.RotateSecret(f.ctx, other.AccountID, w, "whsec_x", f.clock.Now())
			return err
		},
		"DeleteWebhook": func() error { return f.s.DeleteWebhook(f.ctx, other.AccountID, w, f.clock.Now()) },
	} {
		if err := call(); !errs.Is(err, errs.NotFound) {
			t.Errorf("%s on another account's watch: %v, want not_found", name, err)
		}
	}
}

func TestNextDue(t *testing.T) {
	f := newQFix(t)
	if _, ok, err := f.s.NextDue(f.ctx); ok || err != nil {
		t.Fatalf("empty queue: ok=%v err=%v", ok, err)
	}
	w := f.watch(watchA)
	f.hook(w)
	f.enqueue([]notice.Notice{f.notice(acnA, 0)}, w)
	f.complete(f.claim()[0], false, "HTTP 500")
	next, ok, err := f.s.NextDue(f.ctx)
	if err != nil || !ok || !next.Equal(f.clock.Now().Add(unit)) {
		t.Fatalf("NextDue = %s, %v, %v; want %s", next, ok, err, f.clock.Now().Add(unit))
	}
}

// notices stores n new notices of acn published now, in one batch, and
// returns them as stored.
func (f *qfix) notices(acn string, n int) []notice.Notice {
	f.t.Helper()
	before, err := f.s.LatestSeq(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	batch := make([]notice.Notice, n)
	for i := range batch {
		batch[i] = f.newNotice(acn, f.clock.Now())
	}
	if _, err := f.s.UpsertNotices(f.ctx, batch); err != nil {
		f.t.Fatal(err)
	}
	ns, err := f.s.NoticesAfter(f.ctx, before, n)
	if err != nil || len(ns) != n {
		f.t.Fatalf("read back %d notices: %d, %v", n, len(ns), err)
	}
	return ns
}

// TestClaimDoesNotStarveOtherWatches: a watch's large backlog, all due at
// one time, must not keep another watch's due delivery from being claimed
// while the busy watch sits just under its per-watch bound.
func TestClaimDoesNotStarveOtherWatches(t *testing.T) {
	f := newQFix(t)
	a := f.watch(watchA)
	f.hook(a)
	b := f.watch(`{"identifiers": ["600000002"]}`)
	f.hook(b)
	f.enqueue(f.notices(acnA, 5000), a)
	f.clock.Advance(time.Second)
	f.enqueue([]notice.Notice{f.notice("600000002", 0)}, b)
	inFlight := map[string]int{}
	for round := 0; round < 3; round++ {
		// As the worker does: a's attempts finish one at a time, so it is
		// always one under its bound when the next claim runs.
		inFlight[a] = 3
		jobs, err := f.s.Claim(f.ctx, f.clock.Now(), store.ClaimRequest{Limit: 16, Lease: lease, PerWatch: 4, InFlight: inFlight})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.WatchID == b {
				return
			}
		}
	}
	t.Fatalf("the one due delivery of watch b was not claimed in 3 claims while watch a had a backlog of 5000")
}

// TestStaleAttemptOutcomeRecorded: a lease that expires mid-attempt and is
// claimed again gives two attempts with distinct numbers and claim tokens,
// and the outcome of each is recorded, whichever reports first.
func TestStaleAttemptOutcomeRecorded(t *testing.T) {
	twoClaims := func(t *testing.T) (*qfix, string, store.Job, store.Job) {
		f := newQFix(t)
		w := f.watch(watchA)
		f.hook(w)
		f.enqueue([]notice.Notice{f.notice(acnA, 0)}, w)
		first := f.claim()
		f.clock.Advance(lease)
		second := f.claim()
		if len(first) != 1 || len(second) != 1 {
			t.Fatalf("claims %d then %d, want 1 and 1", len(first), len(second))
		}
		j1, j2 := first[0], second[0]
		if j2.Attempt != j1.Attempt+1 || j1.Token == "" || j1.Token == j2.Token {
			t.Fatalf("the second claim after the lease expired is attempt %d token %q, the first attempt %d token %q; want the next attempt number and a new token",
				j2.Attempt, j2.Token, j1.Attempt, j1.Token)
		}
		return f, w, j1, j2
	}
	t.Run("stale failure then current success", func(t *testing.T) {
		f, w, j1, j2 := twoClaims(t)
		f.complete(j1, false, "timeout")
		if r := f.record(w); r.Status != delivery.Pending || r.Attempts != 2 || !strings.Contains(str(r.LastError), "timeout") {
			t.Fatalf("after the stale failure: %+v; want pending, 2 attempts, its error recorded", r)
		}
		f.complete(j2, true, "")
		if r := f.record(w); r.Status != delivery.Delivered || r.Attempts != 2 {
			t.Fatalf("after the current success: %+v; want delivered after 2 attempts", r)
		}
	})
	t.Run("current failure then stale success", func(t *testing.T) {
		f, w, j1, j2 := twoClaims(t)
		f.complete(j2, false, "HTTP 500")
		r := f.record(w)
		if want := notice.Timestamp(f.clock.Now().Add(2 * unit)); r.Status != delivery.Pending || r.Attempts != 2 || str(r.NextAttemptAt) != want {
			t.Fatalf("after the current failure: %+v; want pending, 2 attempts, next at %s", r, want)
		}
		f.complete(j1, true, "") // the first attempt did reach the endpoint
		if r := f.record(w); r.Status != delivery.Delivered || r.DeliveredAt == nil || r.NextAttemptAt != nil {
			t.Fatalf("after the stale success: %+v; want delivered", r)
		}
		if jobs := f.claim(); len(jobs) != 0 {
			t.Fatalf("a delivered delivery was claimed again: %+v", jobs)
		}
	})
}

// TestWebhookMatchingAgreesWithMatchesForSharedABN: an ABN held by two
// register rows with different ACNs. The webhook matcher (here through
// SetWebhook's backfill, the same matcher and resolution as arrivals) and
// /matches must find the same notices for a watch on either ACN or on the
// ABN: one rule, every register ACN of an ABN.
func TestWebhookMatchingAgreesWithMatchesForSharedABN(t *testing.T) {
	f := newQFix(t)
	shared := storetest.ABNAlpha
	storetest.LoadRegister(t, storetest.Backend{Notices: f.s, Writer: f.s, Register: f.s, Clock: f.clock}, []notice.RegisterRow{
		{CompanyName: "ALPHA MINING PTY LTD", ACN: storetest.ACNAlpha, CurrentNameIndicator: "Y", ABN: shared},
		{CompanyName: "DELTA SERVICES PTY LTD", ACN: storetest.ACNDelta, CurrentNameIndicator: "Y", ABN: shared},
	})
	acnOf, err := f.s.ResolveABNs(f.ctx, []string{shared})
	if err != nil {
		t.Fatal(err)
	}
	if got := acnOf[shared]; len(got) != 2 || got[0] != storetest.ACNAlpha || got[1] != storetest.ACNDelta {
		t.Errorf("ResolveABNs(%s) = %v; want both register ACNs, sorted", shared, got)
	}
	watches := map[string]string{
		"ACN Alpha": f.watch(`{"identifiers": ["` + storetest.ACNAlpha + `"]}`),
		"ACN Delta": f.watch(`{"identifiers": ["` + storetest.ACNDelta + `"]}`),
		"ABN":       f.watch(`{"identifiers": ["` + shared + `"]}`),
	}
	f.clock.Advance(time.Second)
	mk := func(src string, acn, abn *string) {
		n := notice.Notice{SourceID: src, PublishedAt: notice.Timestamp(f.clock.Now()), ACN: acn, ABN: abn,
			CompanyName: "X PTY LTD", NoticeType: "Appointment of liquidator", NoticeCode: "APP",
			NoticePurpose: "Appointment", State: "NSW", Status: "In Liquidation"}
		if _, err := f.s.UpsertNotices(f.ctx, []notice.Notice{n}); err != nil {
			t.Fatal(err)
		}
	}
	alpha, delta := storetest.ACNAlpha, storetest.ACNDelta
	mk("N-ALPHA", &alpha, nil)
	mk("N-DELTA", &delta, nil)
	mk("N-ABN", nil, &shared)
	for name, w := range watches {
		f.hook(w) // backfills the recent matches through the webhook matcher
		var hooked []string
		for _, r := range f.records(w) {
			hooked = append(hooked, r.NoticeID)
		}
		page, err := f.s.Matches(f.ctx, f.account, w, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var polled []string
		for _, n := range page.Notices {
			polled = append(polled, n.ID)
		}
		slices.Sort(hooked)
		slices.Sort(polled)
		if !slices.Equal(hooked, polled) || len(polled) == 0 {
			t.Errorf("watch on %s: webhook deliveries for %v, /matches %v; want the same, non-empty", name, hooked, polled)
		}
	}
}
