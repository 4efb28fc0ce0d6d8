package redisstore

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
)

var copyTmpl = notice.Notice{PublishedAt: "2026-11-20T01:00:00Z", PublishedDate: "2026-11-20", NoticePurpose: "Appointment",
	NoticeType: "Appointment of liquidator", State: "VIC", Status: "Published", CompanyName: "X PTY LTD"}

// replica opens a second store on f's namespace with an in-memory copy
// (screens read Redis while it is out of date, as in serve), and loads
// the copy.
func replica(t *testing.T, f fixture) *Store {
	t.Helper()
	r := f.sameNamespace(t, Options{ScreenCopy: true})
	if _, _, err := r.ScreenCopy().refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

// screenBoth screens ids on the replica (which must answer from its copy)
// and on f's store (Redis), and fails unless they agree.
func screenBoth(t *testing.T, f fixture, r *Store, ids []ident.ID) watch.ScreenResult {
	t.Helper()
	ctx := context.Background()
	before, _ := r.ScreenCopy().Counts()
	got, err := r.Screen(ctx, ids, noFilter())
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := r.ScreenCopy().Counts(); after != before+1 {
		t.Fatalf("the replica's screen did not answer from its copy")
	}
	want, err := f.rs.Screen(ctx, ids, noFilter())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("copy and Redis differ:\ncopy  %+v\nredis %+v", got, want)
	}
	return got
}

// screenFromRedis screens ids on the replica, which must answer from
// Redis (its copy being out of date) with f's store's answer, matched
// identifiers of them; it returns the answer.
func screenFromRedis(t *testing.T, f fixture, r *Store, ids []ident.ID, matched int, when string) watch.ScreenResult {
	t.Helper()
	ctx := context.Background()
	want, err := f.rs.Screen(ctx, ids, noFilter())
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Screen(ctx, ids, noFilter())
	if err != nil {
		t.Fatal(err)
	}
	if fromCopy, fromRedis := r.ScreenCopy().Counts(); fromCopy != 0 || fromRedis != 1 {
		t.Fatalf("%s: %d screens from the copy, %d from Redis; want the one from Redis", when, fromCopy, fromRedis)
	}
	if !reflect.DeepEqual(got, want) || got.Counts.Matched != matched {
		t.Fatalf("%s:\ngot  %+v\nwant %+v", when, got, want)
	}
	return want
}

// TestScreenCopySeesIngestAtOnce: two stores on one Redis are two
// replicas. A notice ingested through one is seen by the other's very
// next screen, answered from its copy (not from Redis); so is an
// amendment that moves a notice to another company.
func TestScreenCopySeesIngestAtOnce(t *testing.T) {
	ctx := context.Background()
	f, c := twoCompanies(t)
	r := replica(t, f)
	ids := idsOf(t, acn(1), "51"+acn(2), acn(3))
	res := screenBoth(t, f, r, ids)
	if res.Counts.Matched != 0 || res.Counts.Unmatched != 2 || res.Counts.Unresolved != 1 {
		t.Fatalf("before any notice: %+v", res.Counts)
	}
	n := genNotice(t, copyTmpl, "FIRST", 1)
	if _, err := c.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
		t.Fatal(err)
	}
	res = screenBoth(t, f, r, ids)
	if res.Counts.Matched != 1 || res.Matched[0].Identifier != acn(1) || *res.Matched[0].CompanyName != "ONE PTY LTD" {
		t.Fatalf("the screen right after the ingest: %+v", res)
	}
	// Amended: the notice now names company 2 (found by its ABN).
	a := acn(2)
	n.ACN = &a
	if _, err := c.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
		t.Fatal(err)
	}
	res = screenBoth(t, f, r, ids)
	if res.Counts.Matched != 1 || res.Matched[0].Identifier != "51"+acn(2) || *res.Matched[0].ACN != acn(2) {
		t.Fatalf("the screen right after the amendment: %+v", res)
	}
	if !reflect.DeepEqual(res.Unmatched, []string{acn(1)}) {
		t.Fatalf("the amended notice still counts for company 1: %+v", res)
	}
}

// TestScreenCopyTrimmedLog: a replica whose position the publish log was
// trimmed past (it fell behind by more than NOTICES_PUBLISH_LOG_RETENTION)
// reloads its notices from the notice source at its next screen, which
// waits for the load and answers from the copy exactly as a fresh store
// does, and says so (Loads: the counts /metrics shows).
func TestScreenCopyTrimmedLog(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	// A retention of 1 ms: every publish trims what came before it.
	f.rs.log = publog.New(f.rdb, f.ns, publog.Options{Retention: time.Millisecond})
	c := composite{notices: f.notices, rs: f.rs}
	commitRegister(t, c, notice.RegisterRow{CompanyName: "ONE PTY LTD", ACN: acn(1), ABN: "51" + acn(1), CurrentNameIndicator: "Y"})
	r := replica(t, f)
	loadsBefore, behindBefore := r.ScreenCopy().Loads()
	// 300 batches, one notice each, a few milliseconds apart: each publish
	// trims the entries before it, so the replica's next entry is gone.
	for i := 0; i < 300; i++ {
		if _, err := c.UpsertNotices(ctx, []notice.Notice{genNotice(t, copyTmpl, fmt.Sprint("T", i), 1+i%7)}); err != nil {
			t.Fatal(err)
		}
		// Arrival matching keeps up (the log is never trimmed past it).
		if err := f.rs.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if trimmed, err := f.rdb.Get(ctx, f.rs.log.Keys().Trimmed).Result(); err != nil || trimmed == "" {
		t.Fatalf("the publish log was not trimmed: %q %v", trimmed, err)
	}
	ids := idsOf(t, acn(1), acn(2), acn(7), acn(8))
	res := screenBoth(t, f, r, ids)
	loads, behind := r.ScreenCopy().Loads()
	if behind <= behindBefore || loads <= loadsBefore {
		t.Fatalf("the copy behind the trimmed log did not reload and say so: loads %d (was %d), behind %d (was %d)", loads, loadsBefore, behind, behindBefore)
	}
	if res.Counts.Matched != 3 || res.Matched[0].NoticeCount != 43 { // notices 0, 7, ..., 294 name company 1
		t.Fatalf("after the reload: %+v", res)
	}
}

// TestScreenCopyRegisterReplacement: screens run on a started replica
// while another process replaces the register. Every answer is wholly the
// old register's or wholly the new one's, never a mix; every screen begun
// after the replacement committed gives the new register's answer; and
// once reloaded, the copy answers again. The notice store is
// Elasticsearch, as in scale mode: a load marks itself pending in Redis
// before it moves the register alias, which a screen's check of its names
// relies on (sameRegister); the embedded store's loads, which the other
// fixtures use, are not marked. Without that check 80 runs in 80 failed,
// the screens without the copy mixing.
func TestScreenCopyRegisterReplacement(t *testing.T) {
	ctx := context.Background()
	rdb := redisClient(t)
	es, rs, _ := registeredScaleStores(t, rdb)
	w := storetest.Backend{Register: Ingest{Notices: es, Redis: rs}}
	const companies = 2000
	rows := func(gen string) []notice.RegisterRow {
		var out []notice.RegisterRow
		for i := 0; i < companies; i++ {
			// The old register gives company i the ABN "51"+ACN, the new
			// one "62"+ACN; names say the generation.
			abn := "51" + acn(i)
			if gen == "NEW" {
				abn = "62" + acn(i)
			}
			out = append(out, notice.RegisterRow{CompanyName: fmt.Sprint(gen, " ", i), ACN: acn(i), ABN: abn, CurrentNameIndicator: "Y"})
		}
		return out
	}
	storetest.LoadRegister(t, w, rows("OLD"))
	var ns []notice.Notice
	for i := 0; i < companies; i++ {
		ns = append(ns, genNotice(t, copyTmpl, fmt.Sprint("R", i), i))
	}
	if _, err := (Ingest{Notices: es, Redis: rs}).UpsertNotices(ctx, ns); err != nil {
		t.Fatal(err)
	}
	r, err := New(rdb, rs.name, es, Options{Secrets: testBox(t), ScreenCopy: true})
	if err != nil {
		t.Fatal(err)
	}
	cp := r.ScreenCopy()
	if _, _, err := cp.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Shutdown(context.Background()) })
	// Half ACNs, half ABNs of both forms: the old register resolves the
	// 51-ABNs, the new one the 62-ABNs.
	var vs []string
	for i := 0; i < companies; i++ {
		switch i % 3 {
		case 0:
			vs = append(vs, acn(i))
		case 1:
			vs = append(vs, "51"+acn(i))
		default:
			vs = append(vs, "62"+acn(i))
		}
	}
	ids := idsOf(t, vs...)
	// gen says which register a whole answer is from, "" for a mix.
	gen := func(res watch.ScreenResult) string {
		old := len(res.Matched) > 0 && strings.HasPrefix(*res.Matched[0].CompanyName, "OLD")
		for _, m := range res.Matched {
			if strings.HasPrefix(*m.CompanyName, "OLD") != old || (old && strings.HasPrefix(m.Identifier, "62")) ||
				(!old && strings.HasPrefix(m.Identifier, "51")) {
				return ""
			}
		}
		// Old: the 667 ACNs and 667 51-ABNs; new: the ACNs and 666 62-ABNs.
		switch {
		case old && len(res.Matched) == 1334:
			return "OLD"
		case !old && len(res.Matched) == 1333:
			return "NEW"
		}
		return ""
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[string]int{}
		stop = make(chan struct{})
	)
	// One screener on the replica (its copy holds the names once read),
	// one on a store without the copy (every screen reads the register
	// from Redis and the names from Elasticsearch, and checks them).
	for _, on := range []*Store{r, rs} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := on.Screen(ctx, ids, noFilter())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[gen(res)]++
				mu.Unlock()
			}
		}()
	}
	storetest.LoadRegister(t, w, rows("NEW"))
	// Begun after the commit: the new register, whichever path answers.
	res, err := r.Screen(ctx, ids, noFilter())
	if err != nil {
		t.Fatal(err)
	}
	if g := gen(res); g != "NEW" {
		t.Errorf("a screen begun after the replacement answered from the %q register", g)
	}
	close(stop)
	wg.Wait()
	if seen[""] > 0 {
		t.Errorf("%d screens mixed two registers (%v)", seen[""], seen)
	}
	if _, _, err := cp.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	before, _ := cp.Counts()
	if res, err = r.Screen(ctx, ids, noFilter()); err != nil {
		t.Fatal(err)
	}
	if after, _ := cp.Counts(); after != before+1 {
		t.Error("the reloaded copy did not answer")
	}
	if want, err := rs.Screen(ctx, ids, noFilter()); err != nil || !reflect.DeepEqual(res, want) {
		t.Errorf("the copy's answer differs from Redis's (%v)", err)
	}
	if gen(res) != "NEW" || res.Counts.Matched != 1333 {
		t.Errorf("after the reload: %s register, %d matched", gen(res), res.Counts.Matched)
	}
	t.Logf("screens during the replacement by register: %v; from copy/Redis: %v", seen, fmt.Sprint(cp.Counts()))
}

// TestScreenCopyNotLoadedReadsRedis: a replica whose copy is not loaded
// yet (serve just started) answers screens correctly, loading the notices
// and reading the register from Redis, without waiting for the register's
// load; once Start has loaded the register copy in the background,
// screens answer wholly from the copy.
func TestScreenCopyNotLoadedReadsRedis(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	c := composite{notices: f.notices, rs: f.rs}
	commitRegister(t, c, notice.RegisterRow{CompanyName: "ONE PTY LTD", ACN: acn(1), ABN: "51" + acn(1), CurrentNameIndicator: "Y"})
	if _, err := c.UpsertNotices(ctx, []notice.Notice{genNotice(t, copyTmpl, "LOADED", 1)}); err != nil {
		t.Fatal(err)
	}
	r := f.sameNamespace(t, Options{ScreenCopy: true})
	ids := idsOf(t, "51"+acn(1), acn(2))
	want := screenFromRedis(t, f, r, ids, 1, "before any load")
	cp := r.ScreenCopy()
	if err := cp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Shutdown(context.Background()) })
	// Wait (for a condition, not a time) until the background load has
	// made the copy current; a screen before that reads Redis.
	for i := 0; ; i++ {
		if err := cp.load(ctx, func() error { return nil }); err != nil { // the token is held by a load under way: the wait
			t.Fatal(err)
		}
		_, fromRedis := cp.Counts()
		got, err := r.Screen(ctx, ids, noFilter())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("screen %d:\ngot  %+v\nwant %+v", i, got, want)
		}
		if _, after := cp.Counts(); after == fromRedis {
			break // answered from the copy
		}
		if i == 1000 {
			t.Fatal("the started copy never answered a screen")
		}
	}
}

// TestScreenCopyParallelLookups: a large screen splits its lookups among
// the processors (lookupAll); the answer must be the one Redis gives, in
// the given order, whatever the split. parallelFrom is lowered so that a
// small screen splits, into ranges of one to a few identifiers.
func TestScreenCopyParallelLookups(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	c := composite{notices: f.notices, rs: f.rs}
	var rows []notice.RegisterRow
	var ns []notice.Notice
	var vs []string
	for i := 0; i < 40; i++ {
		rows = append(rows, notice.RegisterRow{CompanyName: fmt.Sprint("CO ", i), ACN: acn(i), ABN: "51" + acn(i), CurrentNameIndicator: "Y"})
		if i%3 != 2 {
			ns = append(ns, genNotice(t, copyTmpl, fmt.Sprint("P", i), i))
		}
		if i%2 == 0 {
			vs = append(vs, acn(i))
		} else {
			vs = append(vs, "51"+acn(i))
		}
	}
	vs = append(vs, acn(500), "51"+acn(501)) // unresolved
	commitRegister(t, c, rows...)
	if _, err := c.UpsertNotices(ctx, ns); err != nil {
		t.Fatal(err)
	}
	r := replica(t, f)
	defer func(n int) { parallelFrom = n }(parallelFrom)
	for _, from := range []int{1, 7, len(vs) + 1} {
		parallelFrom = from
		res := screenBoth(t, f, r, idsOf(t, vs...))
		if res.Counts.Matched != 27 || res.Counts.Unmatched != 13 || res.Counts.Unresolved != 2 {
			t.Fatalf("parallelFrom %d: counts %+v", from, res.Counts)
		}
	}
}

// TestScreenCopyExpandAgreesWithRedis: watch creation resolves its
// identifiers from the copy when the copy is current; the expansion (match
// keys, companies for the quota, unresolved identifiers, register
// generation) must be the one the Redis lookups give, for every kind of
// identifier: register ACNs, an ACN with two ABNs, an ABN two ACNs share,
// identifiers only notices carry, an ACN a notice was amended away from,
// and unknown ones.
func TestScreenCopyExpandAgreesWithRedis(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	c := composite{notices: f.notices, rs: f.rs}
	shared := "62" + acn(10)
	commitRegister(t, c,
		notice.RegisterRow{CompanyName: "ONE PTY LTD", ACN: acn(1), ABN: "51" + acn(1), CurrentNameIndicator: "Y"},
		notice.RegisterRow{CompanyName: "ONE PTY LTD", ACN: acn(1), ABN: "73" + acn(1), CurrentNameIndicator: "Y"},
		notice.RegisterRow{CompanyName: "TWO PTY LTD", ACN: acn(2), CurrentNameIndicator: "Y"},
		notice.RegisterRow{CompanyName: "TEN PTY LTD", ACN: acn(10), ABN: shared, CurrentNameIndicator: "Y"},
		notice.RegisterRow{CompanyName: "ELEVEN PTY LTD", ACN: acn(11), ABN: shared, CurrentNameIndicator: "Y"})
	onNotice := genNotice(t, copyTmpl, "ONLY-ON-NOTICE", 20) // ACN 20: no register row
	abnOnly := genNotice(t, copyTmpl, "ABN-ONLY", 21)
	abn := "51" + acn(21)
	abnOnly.ACN, abnOnly.ABN = nil, &abn
	moved := genNotice(t, copyTmpl, "MOVED", 30)
	if _, err := c.UpsertNotices(ctx, []notice.Notice{onNotice, abnOnly, moved}); err != nil {
		t.Fatal(err)
	}
	moved = genNotice(t, copyTmpl, "MOVED", 31) // amended: now company 31
	if _, err := c.UpsertNotices(ctx, []notice.Notice{moved}); err != nil {
		t.Fatal(err)
	}
	r := replica(t, f)
	ids := []string{acn(1), "51" + acn(1), acn(2), shared, acn(11), acn(20), abn, acn(30), acn(31),
		acn(40), "51" + acn(41)}
	want, err := f.rs.expand(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	got, done, err := r.ScreenCopy().expand(ctx, ids)
	if err != nil || !done {
		t.Fatalf("the copy did not answer: done %v, %v", done, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("copy and Redis differ:\ncopy  %+v\nredis %+v", got, want)
	}
	if u := []string{acn(30), acn(40), "51" + acn(41)}; !reflect.DeepEqual(got.unresolved, u) {
		t.Errorf("unresolved %v, want %v (an ACN a notice was amended away from counts as unknown, as in the embedded store)", got.unresolved, u)
	}
	// Indexed besides the ACN keys: the ABNs the register does not
	// resolve, a notice's among them.
	if ix := []string{"51" + acn(21), "51" + acn(41)}; !reflect.DeepEqual(got.ixABNs, ix) {
		t.Errorf("unresolved ABNs %v, want %v", got.ixABNs, ix)
	}
	for _, k := range []string{"73" + acn(1), acn(10), shared} {
		if !slices.Contains(got.keys, k) {
			t.Errorf("match keys %v lack %s", got.keys, k)
		}
	}
}

// TestScreenCopyFilters: with every kind of filter the copy's answer (its
// coded-field path for filters without q or company, the general one
// otherwise) is Redis's and the embedded store's, over the fixture's
// notices and register: deregistrations, appointment types (and none),
// states in another case, date bounds, ties broken by seq.
func TestScreenCopyFilters(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	ns := storetest.Load(t, f.backend().Backend)
	var ids []ident.ID
	seen := map[string]bool{}
	dates := []string{}
	for _, row := range storetest.RegisterRows() {
		ns = append(ns, notice.Notice{ACN: &row.ACN, ABN: &row.ABN, PublishedDate: ns[0].PublishedDate})
	}
	for _, n := range ns {
		for _, v := range []*string{n.ACN, n.ABN} {
			if v != nil && !seen[*v] {
				seen[*v] = true
				if id, ok := ident.Normalise(*v); ok {
					ids = append(ids, id)
				}
			}
		}
		dates = append(dates, n.PublishedDate)
	}
	slices.Sort(dates)
	mid := dates[len(dates)/2]
	r := replica(t, f)
	company := ids[0]
	for _, c := range []struct {
		name string
		f    notice.Filter
	}{
		{"none", notice.Filter{}},
		{"deregistration included", notice.Filter{IncludeDeregistration: true}},
		{"states, another case", notice.Filter{IncludeDeregistration: true, State: []string{"nsw", "Vic"}}},
		{"purpose", notice.Filter{NoticePurpose: []string{"APPOINTMENT"}}},
		{"appointment type", notice.Filter{AppointmentType: []string{"court liquidation", "Creditors' Voluntary Liquidation"}}},
		{"from", notice.Filter{IncludeDeregistration: true, From: mid}},
		{"to", notice.Filter{To: mid}},
		{"status and code", notice.Filter{IncludeDeregistration: true, Status: []string{"published"}, NoticeCode: []string{ns[0].NoticeCode}}},
		// A company filter (which POST /v1/match does not take) counts the
		// notices carrying the identifier itself on both scale paths but
		// also its register counterparts' in the embedded store: compared
		// between the copy and Redis only.
		{"company (general path)", notice.Filter{IncludeDeregistration: true, Company: &company}},
		{"q (general path)", notice.Filter{IncludeDeregistration: true, Q: mustQuery(t, "creditors")}},
		{"another ABN notice only", notice.Filter{IncludeDeregistration: true, NoticePurpose: []string{"deregistration"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := r.Screen(ctx, ids, c.f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := f.rs.Screen(ctx, ids, c.f)
			if err != nil {
				t.Fatal(err)
			}
			embedded, err := f.notices.Screen(ctx, ids, c.f)
			if err != nil {
				t.Fatal(err)
			}
			if c.f.Company != nil {
				embedded = want
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got, embedded) {
				t.Fatalf("copy, Redis and embedded differ:\ncopy     %+v\nredis    %+v\nembedded %+v", got, want, embedded)
			}
		})
	}
	if fromCopy, fromRedis := r.ScreenCopy().Counts(); fromRedis != 0 || fromCopy == 0 {
		t.Fatalf("screens from the copy %d, from Redis %d", fromCopy, fromRedis)
	}
}

func mustQuery(t *testing.T, q string) query.Node {
	t.Helper()
	p, err := query.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// namesHook is a notice source that calls before ahead of each read of
// register names (RegisterNames).
type namesHook struct {
	NoticeSource
	before func()
}

// RegisterNames calls before, then asks the source.
func (h namesHook) RegisterNames(ctx context.Context, acns []string) ([]string, error) {
	h.before()
	return h.NoticeSource.(RegisterNamer).RegisterNames(ctx, acns)
}

// TestScreenCopyNameReadHoldsNoLock: a screen whose register names are
// read over the network (slow at worst) holds none of the copy's locks
// meanwhile, so another replica screen, whose sync applies a new
// ingest (the write lock), runs to its end while the first screen's read
// is in flight. The hook stands in for the slow read: it runs the second
// screen inside it, where a lock held by the first would block (here:
// TryLock fails first, so the test fails rather than hangs).
func TestScreenCopyNameReadHoldsNoLock(t *testing.T) {
	ctx := context.Background()
	f, c := twoCompanies(t)
	if _, err := c.UpsertNotices(ctx, []notice.Notice{genNotice(t, copyTmpl, "FIRST", 1)}); err != nil {
		t.Fatal(err)
	}
	r := replica(t, f)
	sc := r.ScreenCopy()
	var inFlight, lockFree bool
	var during watch.ScreenResult
	r.source = namesHook{r.source, func() {
		if inFlight {
			return
		}
		inFlight = true
		if lockFree = sc.mu.TryLock(); !lockFree {
			return
		}
		sc.mu.Unlock()
		if _, err := c.UpsertNotices(ctx, []notice.Notice{genNotice(t, copyTmpl, "SECOND", 2)}); err != nil {
			t.Fatal(err)
		}
		var err error
		if during, err = r.Screen(ctx, idsOf(t, acn(2)), noFilter()); err != nil {
			t.Fatal(err)
		}
	}}
	res, err := r.Screen(ctx, idsOf(t, acn(1)), noFilter())
	if err != nil {
		t.Fatal(err)
	}
	if !inFlight {
		t.Fatal("premise: the screen read no register name over the network")
	}
	if !lockFree {
		t.Fatal("the screen read register names while holding the screen copy's lock: every screen and sync of the replica queues behind it")
	}
	for _, c := range []struct {
		what string
		res  watch.ScreenResult
		name string
	}{{"the screen in flight", res, "ONE PTY LTD"}, {"the screen run during its name read", during, "TWO PTY LTD"}} {
		if c.res.Counts.Matched != 1 || c.res.Matched[0].CompanyName == nil || *c.res.Matched[0].CompanyName != c.name {
			t.Errorf("%s: %+v; want one match named %s", c.what, c.res, c.name)
		}
	}
	if fromCopy, fromRedis := sc.Counts(); fromCopy != 2 || fromRedis != 0 {
		t.Errorf("%d screens from the copy, %d from Redis; want both from the copy", fromCopy, fromRedis)
	}
}

// twoCompanies returns a fixture whose register holds companies 1 and 2
// (ONE PTY LTD and TWO PTY LTD, each with an ABN), and its writer.
func twoCompanies(t *testing.T) (fixture, composite) {
	t.Helper()
	f := newFixture(t, Options{})
	c := composite{notices: f.notices, rs: f.rs}
	commitRegister(t, c,
		notice.RegisterRow{CompanyName: "ONE PTY LTD", ACN: acn(1), ABN: "51" + acn(1), CurrentNameIndicator: "Y"},
		notice.RegisterRow{CompanyName: "TWO PTY LTD", ACN: acn(2), ABN: "51" + acn(2), CurrentNameIndicator: "Y"})
	return f, c
}

// TestScreenCopyOddRegister: a register generation holding an ACN not of
// nine digits (ingest refuses them; RegisterLoad.Add takes them) is not
// copied: a replica that refreshes its copy before each screen
// (copyScreens) reads that generation from Redis instead, answering as a store without the copy,
// and notes the generation so as not to load it at each refresh.
func TestScreenCopyOddRegister(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	c := composite{notices: f.notices, rs: f.rs}
	commitRegister(t, c, notice.RegisterRow{CompanyName: "ONE PTY LTD", ACN: acn(1), ABN: "51" + acn(1), CurrentNameIndicator: "Y"},
		notice.RegisterRow{CompanyName: "ODD PTY LTD", ACN: "12345", ABN: "51" + acn(2), CurrentNameIndicator: "Y"})
	if _, err := c.UpsertNotices(ctx, []notice.Notice{genNotice(t, copyTmpl, "ODD", 1)}); err != nil {
		t.Fatal(err)
	}
	r := f.sameNamespace(t, Options{ScreenCopy: true})
	ids := idsOf(t, acn(1), "51"+acn(1), "51"+acn(2), acn(3))
	want, err := f.rs.Screen(ctx, ids, noFilter())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		got, err := (copyScreens{r}).Screen(ctx, ids, noFilter())
		if err != nil {
			t.Fatalf("screen %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) || got.Counts.Matched != 2 || got.Counts.Unmatched != 1 {
			t.Fatalf("screen %d:\ngot  %+v\nwant %+v", i, got, want)
		}
		if fromCopy, fromRedis := r.ScreenCopy().Counts(); fromCopy != 0 || fromRedis != int64(i+1) {
			t.Fatalf("screen %d: %d from the copy, %d from Redis; want every one from Redis", i, fromCopy, fromRedis)
		}
	}
	if r.ScreenCopy().refused == "" || r.ScreenCopy().reg.Load() != nil {
		t.Fatal("the odd generation was not refused")
	}
}

// TestScreenDuringRegisterCommitIsOneRegister: a register load stopped
// after its Elasticsearch swap and before its Redis switch leaves the
// names (Elasticsearch) on the new register and {ns}:reg:v on the old one;
// a screen then answers wholly from the new register, from the copy or
// from Redis (sameRegister sees the marker's index under the alias and
// makes it again from the marker's generation). Stopped before the swap,
// the old register answers wholly. Without the check the first answer
// resolved the old ABN and showed the new name. The stop is the test's
// kill at a Redis command of the load (killAt).
func TestScreenDuringRegisterCommitIsOneRegister(t *testing.T) {
	ctx := context.Background()
	rdb := redisClient(t)
	row := func(gen, prefix string) notice.RegisterRow {
		return notice.RegisterRow{CompanyName: gen + " PTY LTD", ACN: acn(1), ABN: prefix + acn(1), CurrentNameIndicator: "Y",
			Type: "APTY", Class: "LMSH", SubClass: "PROP", Status: "REGD", RegisteredOn: "2020-01-01"}
	}
	ids := idsOf(t, acn(1), "51"+acn(1), "62"+acn(1))
	// What each register answers: the old one knows the 51-ABN, the new one the 62-ABN.
	want := map[string][2][]string{"OLD": {{acn(1), "51" + acn(1)}, {"62" + acn(1)}}, "NEW": {{acn(1), "62" + acn(1)}, {"51" + acn(1)}}}
	for _, c := range []struct {
		name   string
		killAt func(redis.Cmder) bool
		want   string
	}{
		{"stopped after the Elasticsearch swap", runs(switchRegisterScript), "NEW"},
		{"stopped before the Elasticsearch swap", checkingPending, "OLD"},
	} {
		for _, fromCopy := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, copy %v", c.name, fromCopy), func(t *testing.T) {
				es, rs, _ := registeredScaleStores(t, rdb)
				w := Ingest{Notices: es, Redis: rs}
				storetest.LoadRegister(t, storetest.Backend{Register: w}, []notice.RegisterRow{row("OLD", "51")})
				if fromCopy {
					var err error
					if rs, err = New(rdb, rs.name, es, Options{Secrets: testBox(t), ScreenCopy: true}); err != nil {
						t.Fatal(err)
					}
					if _, _, err := rs.ScreenCopy().refresh(ctx); err != nil { // the old register's copy, no name held
						t.Fatal(err)
					}
				}
				restore := killAt(rdb, c.killAt)
				l, err := w.BeginRegister(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Add(ctx, []notice.RegisterRow{row("NEW", "62")}); err != nil {
					t.Fatal(err)
				}
				if err := l.Commit(ctx); err == nil {
					t.Fatal("the stopped load committed")
				}
				restore()
				res, err := rs.Screen(ctx, ids, noFilter())
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, u := range res.UnmatchedCompanies {
					names = append(names, *u.CompanyName)
				}
				if w := want[c.want]; !reflect.DeepEqual(res.Unmatched, w[0]) || !reflect.DeepEqual(res.Unresolved, w[1]) ||
					!reflect.DeepEqual(names, []string{c.want + " PTY LTD", c.want + " PTY LTD"}) {
					t.Errorf("unmatched %v, unresolved %v, names %v; want the %s register's: %v, %v, its names", res.Unmatched, res.Unresolved, names, c.want, w[0], w[1])
				}
				if fromCopy {
					t.Logf("from copy/Redis: %v", fmt.Sprint(rs.ScreenCopy().Counts()))
				}
			})
		}
	}
}
