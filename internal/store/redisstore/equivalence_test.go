package redisstore

import (
	"context"
	"reflect"
	"testing"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/watch"
)

// TestSharedABNMatchesEmbedded: the register gives one ABN to the rows of
// two ACNs (and one ACN two ABNs). The bulk screen and a watch's matches
// use every register ACN of the ABN and every ABN of the ACNs, and give
// the embedded store's answers: the same three lists, counts, latest
// notices and company ACNs, and the same matched notices.
func TestSharedABNMatchesEmbedded(t *testing.T) { forScreenModes(t, testSharedABN) }

func testSharedABN(t *testing.T, o Options) {
	ctx := context.Background()
	f := newFixture(t, o)
	c := composite{notices: f.notices, rs: f.rs}
	shared := "51" + acn(1) // formed from acn(1), also held by acn(2)'s rows
	other := "62" + acn(3)  // a second ABN of acn(3)
	rows := []notice.RegisterRow{
		{CompanyName: "TWO PTY LTD", ACN: acn(2), ABN: shared, CurrentNameIndicator: "Y"},
		{CompanyName: "ONE PTY LTD", ACN: acn(1), ABN: shared, CurrentNameIndicator: "Y"},
		{CompanyName: "THREE PTY LTD", ACN: acn(3), ABN: "51" + acn(3), CurrentNameIndicator: "Y"},
		{CompanyName: "THREE OLD NAME", ACN: acn(3), ABN: other, CurrentName: "THREE PTY LTD"},
		{CompanyName: "FIVE PTY LTD", ACN: acn(5), ABN: "99" + acn(6), CurrentNameIndicator: "Y"},
		{CompanyName: "SIX PTY LTD", ACN: acn(6), ABN: "99" + acn(6), CurrentNameIndicator: "Y"},
	}
	commitRegister(t, c, rows...)
	tmpl := notice.Notice{PublishedAt: "2026-11-20T01:00:00Z", PublishedDate: "2026-11-20", NoticePurpose: "Appointment",
		NoticeType: "Appointment of liquidator", State: "VIC", Status: "Published", CompanyName: "X PTY LTD"}
	var batch []notice.Notice
	for i, co := range []int{1, 2, 2, 3, 4, 5, 6} {
		batch = append(batch, genNotice(t, tmpl, "S"+acn(i), co))
	}
	withABN := genNotice(t, tmpl, "SABN", 9)
	withABN.ACN, withABN.ABN = nil, &other
	batch = append(batch, withABN)
	if _, err := c.UpsertNotices(ctx, batch); err != nil {
		t.Fatal(err)
	}
	ids := idsOf(t, shared, acn(1), acn(2), acn(3), other, "51"+acn(3), "99"+acn(6), acn(5), acn(6), acn(4))
	vic := noFilter()
	vic.State = []string{"VIC"}
	for _, flt := range []notice.Filter{noFilter(), vic} {
		want, err := f.notices.Screen(ctx, ids, flt)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.screen(ctx, ids, flt)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("screen with %+v differs from the embedded store:\nredis    %+v\nembedded %+v", flt, got, want)
		}
	}
	want, err := f.notices.Screen(ctx, ids, noFilter())
	if err != nil {
		t.Fatal(err)
	}
	if want.Counts.Matched == 0 || want.Matched[0].NoticeCount != 3 {
		t.Errorf("the shared ABN should match the notices of both its ACNs: %+v", want.Matched)
	}

	plan := account.Plan{Companies: 100, Watches: 10}
	ea, ra := bothAccounts(t, f)
	for _, vs := range [][]string{{shared}, {acn(3)}, {"99" + acn(6)}, {acn(5)}} {
		ew, rw := createBoth(t, f, ea, ra, watch.CreateRequest{Identifiers: idsOf(t, vs...)}, plan)
		em, err := f.notices.Matches(ctx, ea.AccountID, ew, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		rm, err := f.rs.Matches(ctx, ra.AccountID, rw, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if e, r := seqsOf(em.Notices), seqsOf(rm.Notices); !reflect.DeepEqual(e, r) || len(e) == 0 {
			t.Errorf("watch on %v: redis matches %v, embedded %v", vs, r, e)
		}
	}
}

func seqsOf(ns []notice.Notice) []int64 {
	out := make([]int64, len(ns))
	for i, n := range ns {
		out[i] = n.Seq
	}
	return out
}

// TestScreenNoticeCarryingBoth: a company whose only notice carries both
// its ACN and its ABN is matched (once) when screened by either, as in the
// embedded store. (The two seq lists are then equal strings; the screen
// once took the ACN's own list for the counterpart's and skipped it.)
func TestScreenNoticeCarryingBoth(t *testing.T) { forScreenModes(t, testScreenCarryingBoth) }

func testScreenCarryingBoth(t *testing.T, o Options) {
	ctx := context.Background()
	f := newFixture(t, o)
	c := composite{notices: f.notices, rs: f.rs}
	abn := "51" + acn(1)
	commitRegister(t, c, notice.RegisterRow{CompanyName: "ONE PTY LTD", ACN: acn(1), ABN: abn, CurrentNameIndicator: "Y"})
	n := genNotice(t, notice.Notice{PublishedAt: "2026-11-20T01:00:00Z", PublishedDate: "2026-11-20", NoticePurpose: "Appointment", State: "QLD"}, "BOTH", 1)
	n.ABN = &abn
	if _, err := c.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
		t.Fatal(err)
	}
	ids := idsOf(t, acn(1), abn)
	want, err := f.notices.Screen(ctx, ids, noFilter())
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.screen(ctx, ids, noFilter())
	if err != nil {
		t.Fatal(err)
	}
	if got.Counts.Matched != 2 || !reflect.DeepEqual(got, want) {
		t.Errorf("redis %+v\nembedded %+v", got, want)
	}
}

// TestMatchesFollowChangesAsEmbedded: a watch's matches give the embedded
// store's answer after the data changes under them: a register load that
// removes the ABN a logged match came by, an amendment that makes a notice
// match, and one that makes a logged notice fail the watch's filter.
func TestMatchesFollowChangesAsEmbedded(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	c := composite{notices: f.notices, rs: f.rs}
	abn := "51" + acn(1)
	register := func(rows ...notice.RegisterRow) {
		t.Helper()
		commitRegister(t, c, rows...)
		if _, err := f.notices.RefreshWatchKeys(ctx); err != nil { // as `noticesd ingest register` does
			t.Fatal(err)
		}
	}
	register(notice.RegisterRow{CompanyName: "ONE PTY LTD", ACN: acn(1), ABN: abn, CurrentNameIndicator: "Y"},
		notice.RegisterRow{CompanyName: "TWO PTY LTD", ACN: acn(2), CurrentNameIndicator: "Y"})
	tmpl := notice.Notice{PublishedAt: "2026-11-20T01:00:00Z", PublishedDate: "2026-11-20", NoticePurpose: "Appointment", State: "VIC"}
	byABN := genNotice(t, tmpl, "BY-ABN", 1)
	byABN.ACN, byABN.ABN = nil, &abn
	direct := genNotice(t, tmpl, "DIRECT", 1)
	elsewhere := genNotice(t, tmpl, "ELSEWHERE", 2)
	if _, err := c.UpsertNotices(ctx, []notice.Notice{byABN, direct, elsewhere}); err != nil {
		t.Fatal(err)
	}
	ea, ra := bothAccounts(t, f)
	plan := account.Plan{Companies: 100, Watches: 10}
	ew, rw := createBoth(t, f, ea, ra, watch.CreateRequest{Identifiers: idsOf(t, acn(1)), Filters: watch.Filters{State: []string{"VIC"}}}, plan)
	same := func(step string, wantLen int) {
		t.Helper()
		for _, since := range []int64{0, 1} {
			em, err := f.notices.Matches(ctx, ea.AccountID, ew, since, 100)
			if err != nil {
				t.Fatal(err)
			}
			rm, err := f.rs.Matches(ctx, ra.AccountID, rw, since, 100)
			if err != nil {
				t.Fatal(err)
			}
			e, r := seqsOf(em.Notices), seqsOf(rm.Notices)
			if !reflect.DeepEqual(e, r) || em.NextSince != rm.NextSince || em.HasMore != rm.HasMore {
				t.Errorf("%s, since %d: redis %v (next %d), embedded %v (next %d)", step, since, r, rm.NextSince, e, em.NextSince)
			}
			if since == 0 && len(e) != wantLen {
				t.Errorf("%s: embedded matches %v, want %d notices (the test proves little otherwise)", step, e, wantLen)
			}
		}
	}
	same("at creation", 2)
	// The register no longer gives acn(1) an ABN: the notice that carried
	// only the ABN is no longer the watch's.
	register(notice.RegisterRow{CompanyName: "ONE PTY LTD", ACN: acn(1), CurrentNameIndicator: "Y"},
		notice.RegisterRow{CompanyName: "TWO PTY LTD", ACN: acn(2), CurrentNameIndicator: "Y"})
	same("after a register load removed the ABN", 1)
	// Amendments: elsewhere now names acn(1); direct moves to NSW.
	a1 := acn(1)
	elsewhere.ACN = &a1
	direct.State = "NSW"
	if _, err := c.UpsertNotices(ctx, []notice.Notice{elsewhere, direct}); err != nil {
		t.Fatal(err)
	}
	same("after amendments", 1)
	rm, err := f.rs.Matches(ctx, ra.AccountID, rw, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.Notices) != 1 || rm.Notices[0].SourceID != "ELSEWHERE" {
		t.Errorf("after the amendments the watch shows %v, want only the notice amended to its company", seqsOf(rm.Notices))
	}
}

// createBoth creates the watch req in the embedded store for account e
// and in Redis for account r, and returns the two watch ids.
func createBoth(t *testing.T, f fixture, e, r account.Created, req watch.CreateRequest, plan account.Plan) (string, string) {
	t.Helper()
	ctx := context.Background()
	ew, err := f.notices.CreateWatch(ctx, watch.New(req, e.AccountID, f.clock.Now()), plan)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := f.rs.CreateWatch(ctx, watch.New(req, r.AccountID, f.clock.Now()), plan)
	if err != nil {
		t.Fatal(err)
	}
	return ew.ID, rw.ID
}

// commitRegister loads rows as the whole register through c.
func commitRegister(t testing.TB, c composite, rows ...notice.RegisterRow) {
	t.Helper()
	ctx := context.Background()
	load, err := c.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := load.Add(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := load.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// bothAccounts creates an account in the embedded store and one in Redis,
// for watches compared between the two.
func bothAccounts(t *testing.T, f fixture) (embedded, redis account.Created) {
	t.Helper()
	ctx := context.Background()
	embedded, err := f.notices.CreateAccount(ctx, "e", "standard")
	if err != nil {
		t.Fatal(err)
	}
	if redis, err = f.rs.CreateAccount(ctx, "r", "standard"); err != nil {
		t.Fatal(err)
	}
	return embedded, redis
}

// TestIndexByACNMatchesArrivalsAsEmbedded: watches index a register
// company by its ACN alone (indexKeysOf) and arrival matching resolves a
// notice's ABN through the register, so notices that arrive after the
// watches, carrying only an ABN (shared by two ACNs, a second ABN of an
// ACN, an ABN the register does not know), are matched as the embedded
// store matches them. The reverse index holds no register ABN; deleting
// a watch removes its entries, also for a watch written before ixabn
// existed (indexed by every match key).
func TestIndexByACNMatchesArrivalsAsEmbedded(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	c := composite{notices: f.notices, rs: f.rs}
	shared := "51" + acn(1) // held by the rows of acn(1) and acn(2)
	other := "62" + acn(3)  // a second ABN of acn(3)
	stranger := "77" + acn(40)
	commitRegister(t, c,
		notice.RegisterRow{CompanyName: "TWO PTY LTD", ACN: acn(2), ABN: shared, CurrentNameIndicator: "Y"},
		notice.RegisterRow{CompanyName: "ONE PTY LTD", ACN: acn(1), ABN: shared, CurrentNameIndicator: "Y"},
		notice.RegisterRow{CompanyName: "THREE PTY LTD", ACN: acn(3), ABN: "51" + acn(3), CurrentNameIndicator: "Y"},
		notice.RegisterRow{CompanyName: "THREE OLD NAME", ACN: acn(3), ABN: other, CurrentName: "THREE PTY LTD"})
	plan := account.Plan{Companies: 100, Watches: 10}
	ea, ra := bothAccounts(t, f)
	books := [][]string{{shared}, {acn(2)}, {acn(3)}, {"51" + acn(3)}, {stranger}, {acn(40)}}
	type pair struct{ e, r string }
	var ws []pair
	for _, vs := range books {
		ew, rw := createBoth(t, f, ea, ra, watch.CreateRequest{Identifiers: idsOf(t, vs...)}, plan)
		ws = append(ws, pair{ew, rw})
	}
	for _, k := range []string{shared, other, "51" + acn(3)} {
		if v, _ := f.rdb.HGet(ctx, f.rs.key(rixKey, rixBucket(k)), k).Result(); v != "" {
			t.Errorf("register ABN %s is in the reverse index (watch %s); register companies are indexed by ACN", k, v)
		}
	}
	if v, _ := f.rdb.HGet(ctx, f.rs.key(rixKey, rixBucket(stranger)), stranger).Result(); v != ws[4].r {
		t.Errorf("the unresolved ABN %s is indexed for %q, want its watch %s", stranger, v, ws[4].r)
	}
	// Notices arrive after the watches: only ABNs, or only the ACN.
	tmpl := notice.Notice{PublishedAt: "2026-11-20T01:00:00Z", PublishedDate: "2026-11-20", NoticePurpose: "Appointment",
		NoticeType: "Appointment of liquidator", State: "VIC", Status: "Published", CompanyName: "X PTY LTD"}
	var batch []notice.Notice
	for i, abn := range []string{shared, other, "51" + acn(3), stranger} {
		n := genNotice(t, tmpl, "ABN-"+acn(i), 0)
		n.ACN, n.ABN = nil, &abn
		batch = append(batch, n)
	}
	batch = append(batch, genNotice(t, tmpl, "ACN-2", 2), genNotice(t, tmpl, "ACN-40", 40))
	if _, err := c.UpsertNotices(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := f.rs.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		em, err := f.notices.Matches(ctx, ea.AccountID, w.e, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(em.Notices) == 0 {
			t.Errorf("watch on %v: the embedded store matches nothing (the test proves little)", books[i])
		}
		logged, err := f.rdb.ZCard(ctx, f.wkey(t, matchLogKey, w.r)).Result()
		if err != nil {
			t.Fatal(err)
		}
		rm, err := f.rs.Matches(ctx, ra.AccountID, w.r, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if e, r := seqsOf(em.Notices), seqsOf(rm.Notices); !reflect.DeepEqual(e, r) || int(logged) != len(e) {
			t.Errorf("watch on %v: redis matches %v (%d logged by arrival matching), embedded %v", books[i], r, logged, e)
		}
	}
	// A watch written before ixabn existed: every match key indexed.
	old := ws[0].r
	keys, err := f.rdb.Get(ctx, f.wkey(t, watchKey, old, "keys")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.HDel(ctx, f.wkey(t, watchKey, old), "ixabn").Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.rs.indexKeys(ctx, old, splitList(keys), nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if err := f.rs.DeleteWatch(ctx, ra.AccountID, w.r); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range append(splitList(keys), acn(1), acn(2), acn(3), acn(40), stranger) {
		if v, _ := f.rdb.HGet(ctx, f.rs.key(rixKey, rixBucket(k)), k).Result(); v != "" {
			t.Errorf("after every watch was deleted, key %s is still indexed for %s", k, v)
		}
		if n, _ := f.rdb.SCard(ctx, f.rs.key(rixsKey, k)).Result(); n != 0 {
			t.Errorf("after every watch was deleted, key %s still has %d further watches", k, n)
		}
	}
}
