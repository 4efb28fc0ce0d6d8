package redisstore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
)

// acn returns the n-th valid ACN of a block the fixture does not use.
func acn(n int) string {
	first8 := fmt.Sprintf("8%07d", n)
	return first8 + strconv.Itoa(ident.ACNCheckDigit(first8))
}

func idsOf(t testing.TB, vs ...string) []ident.ID {
	t.Helper()
	out := make([]ident.ID, len(vs))
	for i, v := range vs {
		id, ok := ident.Normalise(v)
		if !ok {
			t.Fatalf("bad identifier %q", v)
		}
		out[i] = id
	}
	return out
}

// genNotice returns a notice of company acn(company) with a unique source id.
func genNotice(t testing.TB, tmpl notice.Notice, source string, company int) notice.Notice {
	n := tmpl
	n.SourceID, n.ID = source, notice.IDFor(source)
	a := acn(company)
	n.ACN, n.ABN = &a, nil
	n.Seq, n.CollectedAt = 0, ""
	return n
}

// recent returns n published at now, within the delivery window, so its
// matches are owed deliveries.
func recent(n notice.Notice, now time.Time) notice.Notice {
	n.PublishedAt = now.UTC().Format(time.RFC3339)
	return n
}

// sameNamespace opens a second Store on its own client over f's namespace
// and notice source, as another process would.
func (f fixture) sameNamespace(t testing.TB, o Options) *Store {
	t.Helper()
	if o.Clock == nil {
		// One clock for every process, as NTP gives real ones: create
		// leases are compared across processes.
		o.Clock = f.clock.Now
	}
	rs, err := New(redisClient(t), f.ns, f.notices, o)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestQuotaAcrossProcesses: 50 concurrent creates spread over two store
// instances, each with its own Redis client (two API processes), never
// overshoot a plan, and every refusal is the documented error.
func TestQuotaAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	other := f.sameNamespace(t, Options{})
	stores := []*Store{f.rs, other}
	for _, c := range []struct {
		name      string
		plan      account.Plan
		companies func(i int) []string
		want      int
		code      errs.Code
	}{
		{"companies", account.Plan{Name: "ten", Companies: 10, Watches: 500},
			func(i int) []string { return []string{acn(1000 + 2*i), acn(1001 + 2*i)} }, 5, errs.QuotaExceeded},
		{"companies, one shared by all", account.Plan{Name: "ten", Companies: 10, Watches: 500},
			func(i int) []string { return []string{acn(1), acn(1000 + i)} }, 9, errs.QuotaExceeded},
		{"watches", account.Plan{Name: "seven", Companies: 1000, Watches: 7},
			func(i int) []string { return []string{acn(1000 + i)} }, 7, errs.WatchLimitReached},
	} {
		t.Run(c.name, func(t *testing.T) {
			acc, err := f.rs.CreateAccount(ctx, "Racer", "standard")
			if err != nil {
				t.Fatal(err)
			}
			const tries = 50
			results := make([]error, tries)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := 0; i < tries; i++ {
				w := watch.New(watch.CreateRequest{Identifiers: idsOf(t, c.companies(i)...), Name: "w"}, acc.AccountID, f.clock.Now())
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, results[i] = stores[i%2].CreateWatch(ctx, w, c.plan)
				}()
			}
			close(start)
			wg.Wait()
			ok := 0
			for _, err := range results {
				if err == nil {
					ok++
				} else if !errs.Is(err, c.code) {
					t.Errorf("refusal %v, want %s", err, c.code)
				}
			}
			if ok != c.want {
				t.Errorf("%d creates succeeded, want exactly %d", ok, c.want)
			}
			for _, s := range stores {
				list, err := s.ListWatches(ctx, acc.AccountID)
				if err != nil || len(list) != c.want {
					t.Errorf("listed %d watches (%v), want %d from either process", len(list), err, c.want)
				}
			}
			n, err := f.rdb.SCard(ctx, f.rs.akey(acc.AccountID, companiesKey)).Result()
			if err != nil || n > int64(c.plan.Companies) {
				t.Errorf("the account counts %d companies (%v), over the plan's %d", n, err, c.plan.Companies)
			}
		})
	}
}

// CatchUp matches every published notice not yet matched (what a read
// of matches does first, unbounded).
func (s *Store) CatchUp(ctx context.Context) error {
	_, err := s.catchUpSome(ctx, math.MaxInt)
	return err
}

// TestGaplessMatches: two ingesters store notices while two workers match
// arrivals and a poller follows next_since on two watches (one created
// before the ingest, one during it); the union of the pages is exactly the
// expected set, ascending, with no repeat, and each (watch, notice) pair is
// handed to delivery exactly once.
func TestGaplessMatches(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{NoMatchOnRead: true})
	tmpl := recent(storetest.Notices(t)[0], f.clock.Now())
	writer := composite{notices: f.notices, rs: f.rs}
	acc, err := f.rs.CreateAccount(ctx, "Poller", "standard")
	if err != nil {
		t.Fatal(err)
	}
	plan := account.DefaultPlans()["standard"]
	watched := func(company int) bool { return company%3 == 0 }
	var vs []string
	for c := 0; c < 30; c++ {
		if watched(c) {
			vs = append(vs, acn(c))
		}
	}
	early, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, vs...), Name: "early"}, acc.AccountID, f.clock.Now()), plan)
	if err != nil {
		t.Fatal(err)
	}
	f.hook(t, acc.AccountID, early.ID)

	const perIngester, ingesters = 150, 2
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // a failed test ends after its ingesters and workers
	var ingested atomic.Int64
	for g := 0; g < ingesters; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perIngester; i++ {
				n := genNotice(t, tmpl, fmt.Sprintf("G%d-%d", g, i), (i*7+g)%30)
				if _, err := writer.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
					t.Error(err)
					return
				}
				ingested.Add(1)
			}
		}()
	}
	// Two workers match arrivals in a loop, as noticesd worker's
	// schedulers do, 7 log entries a commit.
	mctx, stopMatching := context.WithCancel(ctx)
	var matchers sync.WaitGroup
	for w := 0; w < 2; w++ {
		rs := f.sameNamespace(t, Options{NoMatchOnRead: true})
		matchers.Go(func() {
			for mctx.Err() == nil {
				moved, err := rs.MatchArrivals(mctx, 7)
				if err != nil && mctx.Err() == nil {
					t.Error(err)
				}
				if moved == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	t.Cleanup(func() { stopMatching(); matchers.Wait() })
	// A watch created mid-ingest: backfill and arrival matching together
	// (an ingester that failed ends the wait: it stopped short).
	for ingested.Load() < perIngester && !t.Failed() {
	}
	late, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, vs...), Name: "late"}, acc.AccountID, f.clock.Now()), plan)
	if err != nil {
		t.Fatal(err)
	}
	f.hook(t, acc.AccountID, late.ID)

	poll := func(id string, since int64) ([]notice.Notice, int64) {
		p, err := f.rs.Matches(ctx, acc.AccountID, id, since, 5)
		if err != nil {
			t.Fatal(err)
		}
		return p.Notices, p.NextSince
	}
	got := map[string][]notice.Notice{}
	cursor := map[string]int64{}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		for _, id := range []string{early.ID, late.ID} {
			ns, next := poll(id, cursor[id])
			got[id] = append(got[id], ns...)
			cursor[id] = next
		}
	}
	// Ingest is over: let the workers finish, then poll to the end.
	for {
		m, _ := f.rdb.Get(ctx, f.rs.log.Keys().MatchThrough).Int64()
		top, _ := f.notices.LatestSeq(ctx)
		if m >= top || t.Failed() {
			break
		}
	}
	stopMatching()
	matchers.Wait()
	for _, id := range []string{early.ID, late.ID} {
		for {
			ns, next := poll(id, cursor[id])
			got[id] = append(got[id], ns...)
			cursor[id] = next
			if len(ns) == 0 {
				break
			}
		}
	}

	all, err := f.notices.NoticesAfter(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != perIngester*ingesters {
		t.Fatalf("%d notices stored, want %d", len(all), perIngester*ingesters)
	}
	var want []int64
	for _, n := range all {
		c, _ := strconv.Atoi((*n.ACN)[1:8])
		if watched(c) {
			want = append(want, n.Seq)
		}
	}
	for _, id := range []string{early.ID, late.ID} {
		seqs := make([]int64, len(got[id]))
		for i, n := range got[id] {
			seqs[i] = n.Seq
		}
		if !slices.IsSorted(seqs) || len(slices.Compact(slices.Clone(seqs))) != len(seqs) {
			t.Errorf("watch %s: pages not strictly ascending: %v", id, seqs)
		}
		if !slices.Equal(seqs, want) {
			t.Errorf("watch %s: polled %d matches, want %d\n got %v\nwant %v", id, len(seqs), len(want), seqs, want)
		}
	}

	// Handoff: every pair of the early watch exactly once (all arrived
	// after it); the late watch's pairs only for notices matched after it.
	handed := deliveredPairs(t, f, early.ID, late.ID)
	for k, n := range handed {
		if n != 1 {
			t.Errorf("pair %s handed to delivery %d times", k, n)
		}
	}
	for _, seq := range want {
		if handed[fmt.Sprint(early.ID, "/", seq)] != 1 {
			t.Errorf("pair (%s, %d) not handed to delivery", early.ID, seq)
		}
	}
	// The late watch: exactly the notices that arrived after it was created.
	eseq, err := f.rdb.HGet(ctx, f.rs.akey(acc.AccountID, watchKey, late.ID), "eseq").Int64()
	if err != nil {
		t.Fatal(err)
	}
	lateWant := 0
	for _, seq := range want {
		if seq > eseq {
			lateWant++
			if handed[fmt.Sprint(late.ID, "/", seq)] != 1 {
				t.Errorf("pair (%s, %d) arrived after the watch and was not handed to delivery", late.ID, seq)
			}
		}
	}
	lateGot := 0
	for k := range handed {
		if len(k) > len(late.ID) && k[:len(late.ID)] == late.ID {
			lateGot++
		}
	}
	if lateGot != lateWant {
		t.Errorf("late watch: %d pairs handed to delivery, want %d (those after seq %d)", lateGot, lateWant, eseq)
	}
}

func noFilter() notice.Filter { return notice.Filter{IncludeDeregistration: true} }

// TestStaleBatchCommitsNothing: a worker that matched a batch and stalled
// (or died) before committing: another worker commits the range, and the
// stale commit, when it comes, writes nothing; each pair is in the log and
// handed to delivery once.
func TestStaleBatchCommitsNothing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{NoMatchOnRead: true})
	acc, err := f.rs.CreateAccount(ctx, "Once", "standard")
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, acn(1))}, acc.AccountID, f.clock.Now()),
		account.DefaultPlans()["standard"])
	if err != nil {
		t.Fatal(err)
	}
	tmpl := recent(storetest.Notices(t)[0], f.clock.Now())
	for i := 0; i < 3; i++ {
		if _, err := (composite{f.notices, f.rs}).UpsertNotices(ctx, []notice.Notice{genNotice(t, tmpl, fmt.Sprint("ONCE-", i), 1)}); err != nil {
			t.Fatal(err)
		}
	}
	f.hook(t, acc.AccountID, w.ID)
	// Worker A matches the range, then stalls.
	es, _, err := f.rs.log.Read(ctx, "0-0", 10)
	if err != nil || len(es) != 3 {
		t.Fatalf("publish log holds %d entries (%v), want 3", len(es), err)
	}
	sums, isNew, _, err := summariesOf(es)
	if err != nil {
		t.Fatal(err)
	}
	wsv, _ := f.rdb.Get(ctx, f.rs.key(watchSetKey)).Int64()
	now := f.clock.Now()
	byAcct, err := f.rs.commitArgs(ctx, sums, isNew, now)
	if err != nil || len(byAcct) != 1 || byAcct[acc.AccountID] == nil || len(byAcct[acc.AccountID].keys) != 12 {
		t.Fatalf("worker A matched %v, %v; want 3 pairs of the account", byAcct, err)
	}
	// Worker B commits the range.
	other := f.sameNamespace(t, Options{NoMatchOnRead: true})
	if err := other.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	// Worker A's stale commit: the account's script changes nothing
	// twice (the counts below), still answering the 3 pairs owed a
	// delivery (so a commit again notes the account), and the cursor's
	// refuses.
	c, a := byAcct[acc.AccountID], func(parts ...string) string { return f.rs.akey(acc.AccountID, parts...) }
	keys := append([]string{a(outboxKey), a(dstatKey), a(ddueKey)}, c.keys...)
	if n, err := commitScript.Run(ctx, f.rdb, keys, append([]any{now.UnixMilli()}, c.args...)...).Int(); err != nil || n != 3 {
		t.Errorf("stale account commit answered %d pairs owed a delivery (%v), want 3", n, err)
	}
	k := f.rs.log.Keys()
	res, err := advanceScript.Run(ctx, f.rdb, []string{k.MatchAt, k.MatchThrough, f.rs.key(watchSetKey)}, "0-0", es[2].ID, sums[2].Seq, wsv).Int()
	if err != nil || res != -1 {
		t.Errorf("stale commit returned %d, %v; want -1 (refused)", res, err)
	}
	if n, _ := f.rdb.ZCard(ctx, a(matchLogKey, w.ID)).Result(); n != 3 {
		t.Errorf("match log holds %d, want 3", n)
	}
	if got := deliveredPairs(t, f, w.ID); len(got) != 3 {
		t.Errorf("deliveries recorded for %v, want the 3 notices once each", got)
	}
	if n, _ := f.rdb.ZCard(ctx, a(outboxKey)).Result(); n != 3 {
		t.Errorf("outbox holds %d, want 3", n)
	}
}

// failingBackfill is the real notice source whose backfill query fails, as
// a notice backend that goes away mid-create would.
type failingBackfill struct{ NoticeSource }

func (failingBackfill) MatchingSeqs(context.Context, []string, notice.Filter, int64, int64, int) ([]int64, error) {
	return nil, fmt.Errorf("the notice backend went away")
}

// TestCreateFailingLateWritesNothing: a create that fails after its quota
// script (here in the backfill) is undone: no watch, no quota used.
func TestCreateFailingLateWritesNothing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	f.rs.source = failingBackfill{f.notices}
	acc, err := f.rs.CreateAccount(ctx, "Unlucky", "standard")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, acn(1), acn(2))}, acc.AccountID, f.clock.Now()),
		account.DefaultPlans()["standard"])
	if err == nil {
		t.Fatal("create succeeded with a failing backfill")
	}
	if list, _ := f.rs.ListWatches(ctx, acc.AccountID); len(list) != 0 {
		t.Errorf("the failed create left %d watches", len(list))
	}
	if n, _ := f.rdb.SCard(ctx, f.rs.akey(acc.AccountID, companiesKey)).Result(); n != 0 {
		t.Errorf("the failed create left %d companies counted", n)
	}
	if v, _ := f.rdb.HGet(ctx, f.rs.key(rixKey, rixBucket(acn(1))), acn(1)).Result(); v != "" {
		t.Errorf("the failed create left reverse-index entry %q", v)
	}
}

// TestMatchesReadDoesBoundedWork: with no worker running, a matches read
// catches up arrival matching itself, but at most maxReadCatchUp batches
// per read: one poll after a load of 5,000 notices matches 4,000 of them
// and says has_more, and polling on with next_since returns every
// matching notice exactly once. Without the bound the first read matched
// the whole load.
func TestMatchesReadDoesBoundedWork(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	tmpl := storetest.Notices(t)[0]
	writer := composite{notices: f.notices, rs: f.rs}
	acc, err := f.rs.CreateAccount(ctx, "Bounded", "standard")
	if err != nil {
		t.Fatal(err)
	}
	var vs []string
	for c := range 10 {
		vs = append(vs, acn(c))
	}
	w, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, vs...), Name: "bounded"}, acc.AccountID, f.clock.Now()), account.DefaultPlans()["standard"])
	if err != nil {
		t.Fatal(err)
	}
	const total = 5000
	for b := 0; b < total; b += 500 {
		batch := make([]notice.Notice, 0, 500)
		for i := b; i < b+500; i++ {
			batch = append(batch, genNotice(t, tmpl, fmt.Sprint("BW-", i), i%20)) // half the companies watched
		}
		if _, err := writer.UpsertNotices(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	through := func() int64 {
		n, _ := f.rdb.Get(ctx, f.rs.key("match", "through")).Int64()
		return n
	}
	before := through()
	p, err := f.rs.Matches(ctx, acc.AccountID, w.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if moved, bound := through()-before, int64(maxReadCatchUp*ArrivalBatch); moved > bound {
		t.Fatalf("one matches read matched %d arrivals; it may match at most %d", moved, bound)
	}
	if !p.HasMore {
		t.Error("a read that left arrivals unmatched said has_more false")
	}
	seen := map[string]int{}
	since := int64(0)
	for polls := 0; ; polls++ {
		if polls > 200 {
			t.Fatal("polling did not finish in 200 reads")
		}
		p, err := f.rs.Matches(ctx, acc.AccountID, w.ID, since, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range p.Notices {
			seen[n.SourceID]++
		}
		since = p.NextSince
		if !p.HasMore {
			break
		}
	}
	if len(seen) != total/2 {
		t.Errorf("polling returned %d distinct notices, want %d", len(seen), total/2)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("notice %s returned %d times", id, k)
		}
	}
}
