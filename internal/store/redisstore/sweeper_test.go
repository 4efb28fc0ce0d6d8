package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/redis/go-redis/v9"
)

// sweepResult is one sweep's outcome, as the Sweeper reports it to a test.
type sweepResult struct {
	n   int
	err error
}

// startSweeper starts f's Sweeper on ticks the test sends: sweep ticks it
// once (at the fixture's clock) and returns that sweep's outcome.
func startSweeper(t *testing.T, f fixture) (sweep func() sweepResult) {
	t.Helper()
	ticks := make(chan time.Time)
	swept := make(chan sweepResult)
	sw := f.rs.Sweeper(slog.New(slog.DiscardHandler))
	sw.ticks = func() (<-chan time.Time, func()) { return ticks, func() {} }
	sw.swept = func(n int, err error) { swept <- sweepResult{n, err} }
	if err := sw.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sw.Shutdown(context.Background()) })
	return func() sweepResult {
		ticks <- f.clock.Now()
		return <-swept
	}
}

// TestSweeperUndoesDeadCreate: a create whose process died after its first
// step (the watch written and counted, its create not finished) counts
// against its account only until the Sweeper every serve replica runs
// next looks after the create's lease: under 10 s after the create's last
// lease, with no other create of the account and no worker's Reconcile
// (every 30 s) needed. A live create held in its last step three times as
// long as the lease, renewing, is never undone and finishes.
func TestSweeperUndoesDeadCreate(t *testing.T) {
	if createLease+sweepEvery >= 10*time.Second {
		t.Fatalf("createLease %v + sweepEvery %v: a dead create must stop counting within 10 s", createLease, sweepEvery)
	}
	ctx := context.Background()
	f := newFixture(t, Options{})
	// Renewals every 50 ms of real time (each call may take that long),
	// not every 1.5 s: advance waits for one after each step of the clock.
	f.rs.leaseRenewal = 50 * time.Millisecond
	acc, err := f.rs.CreateAccount(ctx, "Killed", "standard")
	if err != nil {
		t.Fatal(err)
	}
	plan := account.Plan{Name: "two", Companies: 100, Watches: 2}
	newWatch := func(v string) watch.Watch {
		return watch.New(watch.CreateRequest{Identifiers: idsOf(t, v)}, acc.AccountID, f.clock.Now())
	}
	counted := func() (int64, []string) {
		t.Helper()
		co := f.rdb.SMembers(ctx, f.rs.akey(acc.AccountID, companiesKey)).Val()
		slices.Sort(co)
		return f.rdb.ZCard(ctx, f.rs.akey(acc.AccountID, watchesKey)).Val(), co
	}
	sweep := startSweeper(t, f)
	began := f.clock.Now()

	restore := killAt(f.rdb, runs(activateScript))
	if _, err := f.rs.CreateWatch(ctx, newWatch(acn(1)), plan); !errors.Is(err, errKilled) {
		t.Fatalf("the create that dies: %v; want errKilled", err)
	}
	restore()
	// The live create waits in its last step until the test lets it go.
	held, release := make(chan struct{}), make(chan struct{})
	restore = onCommand(f.rdb, func(cmd redis.Cmder) error {
		if runOf(cmd, finishCreateScript) {
			close(held)
			<-release
		}
		return nil
	})
	type created struct {
		w   watch.Watch
		err error
	}
	live := make(chan created, 1)
	go func() {
		w, err := f.rs.CreateWatch(ctx, newWatch(acn(2)), plan)
		live <- created{w, err}
	}()
	<-held
	if n, co := counted(); n != 2 || !slices.Equal(co, []string{acn(1), acn(2)}) {
		t.Fatalf("during both creates the account counts %d watches, companies %v; want 2 and both", n, co)
	}
	liveID := func() string {
		ids := f.rdb.ZRange(ctx, f.rs.akey(acc.AccountID, createsKey), 0, -1).Val()
		for _, id := range ids {
			if f.rdb.SIsMember(ctx, f.rs.akey(acc.AccountID, watchKey, id, "co"), acn(2)).Val() {
				return id
			}
		}
		return ""
	}()
	if liveID == "" {
		t.Fatal("the live create is not in wpend")
	}
	// advance moves the clock on and waits for the live create's next
	// renewal, so its lease is ahead of the new time as a live creator's is.
	advance := func(d time.Duration) {
		t.Helper()
		f.clock.Advance(d)
		want := float64(f.clock.Now().Add(createLease).UnixMilli())
		for deadline := time.Now().Add(10 * time.Second); ; {
			sc, err := f.rdb.ZScore(ctx, f.rs.akey(acc.AccountID, createsKey), liveID).Result()
			if err != nil {
				t.Fatalf("the live create's wpend entry: %v (undone)", err)
			}
			if sc >= want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the live create did not renew its lease within 10 s")
			}
			time.Sleep(time.Millisecond)
		}
	}

	// Within the dead create's lease it may still be working: it counts.
	advance(createLease - time.Second)
	if r := sweep(); r.err != nil || r.n != 0 {
		t.Fatalf("a sweep within the lease = %d, %v; want nothing undone", r.n, r.err)
	}
	if n, co := counted(); n != 2 || len(co) != 2 {
		t.Fatalf("within the dead create's lease the account counts %d watches, %v; want 2 and 2", n, co)
	}
	// The first sweep after its lease undoes it, under 10 s after it.
	advance(began.Add(createLease + sweepEvery).Sub(f.clock.Now()))
	if r := sweep(); r.err != nil || r.n != 1 {
		t.Fatalf("the first sweep after the dead create's lease = %d, %v; want it undone", r.n, r.err)
	}
	if n, co := counted(); n != 1 || !slices.Equal(co, []string{acn(2)}) {
		t.Fatalf("%v after the dead create the account counts %d watches, companies %v; want the live one alone (%s)",
			f.clock.Now().Sub(began), n, co, acn(2))
	}
	// The live create, renewing, outlives its lease three times over.
	for f.clock.Now().Sub(began) < 3*createLease {
		advance(sweepEvery)
		if r := sweep(); r.err != nil || r.n != 0 {
			t.Fatalf("a sweep at +%v during the live create = %d, %v; want nothing undone", f.clock.Now().Sub(began), r.n, r.err)
		}
	}
	close(release)
	got := <-live
	if got.err != nil {
		t.Fatalf("the live create, held %v: %v; want it made", f.clock.Now().Sub(began), got.err)
	}
	restore()
	if _, err := f.rs.Watch(ctx, acc.AccountID, got.w.ID); err != nil {
		t.Fatalf("the live create's watch: %v", err)
	}
	if n, co := counted(); n != 1 || !slices.Equal(co, []string{acn(2)}) {
		t.Fatalf("at the end the account counts %d watches, companies %v; want 1 and [%s]", n, co, acn(2))
	}
	if k := f.rdb.ZCard(ctx, f.rs.akey(acc.AccountID, createsKey)).Val(); k != 0 {
		t.Fatalf("%d creates left in wpend", k)
	}
}

// TestSweeperFinishesDeadDelete: a delete whose process died after its
// first step has made the watch gone but its companies still count; the
// Sweeper's first sweep after the deleter's lease frees them.
func TestSweeperFinishesDeadDelete(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	acc, err := f.rs.CreateAccount(ctx, "Deleter", "standard")
	if err != nil {
		t.Fatal(err)
	}
	plan := account.Plan{Name: "one", Companies: 1, Watches: 5}
	w, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, acn(7))}, acc.AccountID, f.clock.Now()), plan)
	if err != nil {
		t.Fatal(err)
	}
	sweep := startSweeper(t, f)
	restore := killAt(f.rdb, after(deleteScript))
	if err := f.rs.DeleteWatch(ctx, acc.AccountID, w.ID); !errors.Is(err, errKilled) {
		t.Fatalf("the delete that dies: %v; want errKilled", err)
	}
	restore()
	companies := func() int64 { return f.rdb.SCard(ctx, f.rs.akey(acc.AccountID, companiesKey)).Val() }
	if c := companies(); c != 1 {
		t.Fatalf("after the dead delete's first step the account counts %d companies; want 1 (not yet freed)", c)
	}
	f.clock.Advance(createLease - time.Second)
	if r := sweep(); r.err != nil || r.n != 0 {
		t.Fatalf("a sweep within the deleter's lease = %d, %v; want nothing", r.n, r.err)
	}
	f.clock.Advance(time.Second + sweepEvery)
	if r := sweep(); r.err != nil || r.n != 1 {
		t.Fatalf("the first sweep after the deleter's lease = %d, %v; want the delete finished", r.n, r.err)
	}
	if c := companies(); c != 0 {
		t.Fatalf("after the sweep the account counts %d companies; want 0", c)
	}
	if _, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, acn(8))}, acc.AccountID, f.clock.Now()), plan); err != nil {
		t.Fatalf("a create on the freed quota: %v", err)
	}
}

// TestCreateOutlivesItsLease: a creator that stalls past its create lease
// at any step, while a sweep (another replica) undoes its create, leaves
// nothing behind and never answers 201 for a watch that is gone: no
// reverse-index entry or match log names a missing watch, and the account
// counts exactly its watches' companies. "claimed" stalls the sweep after
// it claimed the lapsed create and lets the creator's last step run.
func TestCreateOutlivesItsLease(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(*redis.Script) func(redis.Cmder) bool
		step *redis.Script
	}{
		{"index", after, createScript},
		{"activate", runs, activateScript},
		{"backfill", runs, addLogScript},
		{"finish", runs, finishCreateScript},
		{"claimed", runs, finishCreateScript},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, Options{})
			f.rs.leaseRenewal = time.Hour // the stalled creator renews nothing
			other := f.sameNamespace(t, Options{})
			tmpl := storetest.Notices(t)[0]
			if _, err := (composite{notices: f.notices, rs: f.rs}).UpsertNotices(ctx, []notice.Notice{genNotice(t, tmpl, "H-2", 2)}); err != nil {
				t.Fatal(err)
			}
			acc, err := f.rs.CreateAccount(ctx, "Stalled", "standard")
			if err != nil {
				t.Fatal(err)
			}
			plan := account.Plan{Name: "some", Companies: 100, Watches: 5}
			create := func(vs ...string) (watch.Watch, error) {
				return f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, vs...)}, acc.AccountID, f.clock.Now()), plan)
			}
			if _, err := create(acn(1)); err != nil { // holds rix of acn(1): the stalled one goes to rixs
				t.Fatal(err)
			}
			swept := make(chan sweepResult, 1)
			claimed, release := make(chan struct{}), make(chan struct{})
			at := tc.at(tc.step)
			var once sync.Once
			restore := onCommand(f.rdb, func(cmd redis.Cmder) error {
				if !at(cmd) {
					return nil
				}
				once.Do(func() {
					f.clock.Advance(createLease + sweepEvery)
					if tc.name != "claimed" {
						n, err := other.SweepStalled(ctx, f.clock.Now())
						swept <- sweepResult{n, err}
						return
					}
					var held sync.Once
					claim := after(lapsedScript)
					restoreOther := onCommand(other.rdb, func(cmd redis.Cmder) error {
						if claim(cmd) {
							held.Do(func() { close(claimed); <-release })
						}
						return nil
					})
					go func() {
						n, err := other.SweepStalled(ctx, f.clock.Now())
						restoreOther()
						swept <- sweepResult{n, err}
					}()
					<-claimed
				})
				return nil
			})
			w, createErr := create(acn(1), acn(2))
			restore()
			if tc.name == "claimed" {
				close(release)
			}
			if r := <-swept; r.err != nil || r.n != 1 {
				t.Fatalf("the sweep during the create = %d, %v; want the create undone", r.n, r.err)
			}
			f.clock.Advance(createLease + sweepEvery)
			if _, err := other.SweepStalled(ctx, f.clock.Now()); err != nil {
				t.Fatal(err)
			}
			_, err = f.rs.Watch(ctx, acc.AccountID, w.ID)
			if createErr == nil && err != nil {
				t.Errorf("the create answered 201 but its watch is %v", err)
			}
			if createErr != nil && err == nil {
				t.Errorf("the create failed (%v) but its watch exists", createErr)
			}
			assertNoOrphans(t, f, acc.AccountID)
		})
	}
}

// assertNoOrphans checks that every reverse-index entry and match log of
// f's namespace names an existing watch, that no create or delete is left
// unfinished, and that the account counts exactly its watches' companies.
func assertNoOrphans(t *testing.T, f fixture, accountID string) {
	t.Helper()
	ctx := context.Background()
	exists := func(id string) bool { return f.rdb.Exists(ctx, f.rs.akey(accountID, watchKey, id)).Val() == 1 }
	var keys []string
	for _, prefix := range []string{f.rs.key(""), f.rs.akey(accountID, "")} {
		if err := scanKeys(ctx, f.rdb, prefix+"*", 1000, func(ks []string) error { keys = append(keys, ks...); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		var names []string
		prefix := f.rs.key("")
		if !strings.HasPrefix(k, prefix) {
			prefix = f.rs.akey(accountID, "")
		}
		switch family, rest, _ := strings.Cut(strings.TrimPrefix(k, prefix), ":"); family {
		case rixKey:
			for _, id := range f.rdb.HGetAll(ctx, k).Val() {
				names = append(names, id)
			}
		case rixsKey:
			names = f.rdb.SMembers(ctx, k).Val()
		case matchLogKey:
			names = []string{rest}
		case createsKey, trashKey:
			if n := f.rdb.ZCard(ctx, k).Val(); rest == "" && n != 0 {
				t.Errorf("%s holds %d unfinished changes", k, n)
			}
		}
		for _, id := range names {
			if !exists(id) {
				t.Errorf("%s names watch %s, which does not exist", k, id)
			}
		}
	}
	var want []string
	for _, id := range f.rdb.ZRange(ctx, f.rs.akey(accountID, watchesKey), 0, -1).Val() {
		want = append(want, f.rdb.SMembers(ctx, f.rs.akey(accountID, watchKey, id, "co")).Val()...)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	got := f.rdb.SMembers(ctx, f.rs.akey(accountID, companiesKey)).Val()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the account counts companies %v; its watches hold %v", got, want)
	}
}
