package sqlite

import (
	"context"
	"math"
	"testing"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
)

func openWatches(t *testing.T) (*Store, storetest.WatchBackend) {
	t.Helper()
	clock := storetest.NewClock(storetest.Start)
	s := openTest(t, WithClock(clock.Now))
	return s, storetest.WatchBackend{
		Backend:  storetest.Backend{Notices: s, Writer: s, Register: s, Clock: clock},
		Watches:  s,
		Accounts: s,
	}
}

func TestWatchesContract(t *testing.T) {
	open := func(t *testing.T) storetest.WatchBackend {
		_, b := openWatches(t)
		return b
	}
	storetest.RunWatches(t, open)
	// Again with every identifier watch taking the large-watch path of
	// Matches: a seq-order walk of a few notices, then key by key.
	t.Run("LargeWatchPath", func(t *testing.T) {
		defer func(k int, w int64) { keyDrivenMax, matchScanWindow = k, w }(keyDrivenMax, matchScanWindow)
		keyDrivenMax, matchScanWindow = 0, 3
		storetest.RunWatches(t, open)
	})
}

func TestRegisterVersionFollowsLoads(t *testing.T) {
	s, b := openWatches(t)
	ctx := context.Background()
	v0, err := registerVersion(ctx, s.read)
	if err != nil || v0 == "" {
		t.Fatalf("register version of a new store: %q, %v; RegisterLoad.Commit's index naming changed?", v0, err)
	}
	storetest.LoadRegister(t, b.Backend, storetest.RegisterRows())
	v1, err := registerVersion(ctx, s.read)
	if err != nil || v1 == "" || v1 == v0 {
		t.Errorf("register version after a load: %q (before %q), %v", v1, v0, err)
	}
}

// TestRefreshWatchKeys: keys expanded against an old register are rewritten
// against the new one, and Matches agrees before and after.
func TestRefreshWatchKeys(t *testing.T) {
	s, b := openWatches(t)
	ctx := context.Background()
	ns := storetest.Load(t, b.Backend)
	acc, err := s.CreateAccount(ctx, "A", "standard")
	if err != nil {
		t.Fatal(err)
	}
	gamma, _ := ident.Normalise(storetest.ABNGamma)
	w, err := s.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: []ident.ID{gamma}}, acc.AccountID, b.Clock.Now()), account.DefaultPlans()["standard"])
	if err != nil {
		t.Fatal(err)
	}
	keys := func() []string {
		rows, err := s.read.Query("SELECT key FROM watch_keys WHERE watch_id = ? ORDER BY key", w.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var k string
			rows.Scan(&k)
			out = append(out, k)
		}
		return out
	}
	if got := keys(); len(got) != 1 || got[0] != storetest.ABNGamma {
		t.Fatalf("keys at creation %v, want just the ABN", got)
	}
	storetest.LoadRegister(t, b.Backend, append(storetest.RegisterRows(), notice.RegisterRow{
		CompanyName: "GAMMA", ACN: storetest.ACNGamma, CurrentNameIndicator: "Y", ABN: storetest.ABNGamma}))
	n := ns[0]
	n.SourceID, n.ID = "S-G", notice.IDFor("S-G")
	acn := storetest.ACNGamma
	n.ACN, n.ABN = &acn, nil
	if _, err := s.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
		t.Fatal(err)
	}
	before, err := s.Matches(ctx, acc.AccountID, w.ID, 0, 10)
	if err != nil || len(before.Notices) != 2 {
		t.Fatalf("stale keys: %d matches, %v; want 2", len(before.Notices), err)
	}
	done, err := s.RefreshWatchKeys(ctx)
	if err != nil || done != 1 {
		t.Fatalf("refreshed %d, %v; want 1", done, err)
	}
	if got := keys(); len(got) != 2 || got[0] != storetest.ACNGamma || got[1] != storetest.ABNGamma {
		t.Errorf("keys after refresh %v, want the ABN and its ACN", got)
	}
	after, err := s.Matches(ctx, acc.AccountID, w.ID, 0, 10)
	if err != nil || len(after.Notices) != 2 {
		t.Errorf("refreshed keys: %d matches, %v; want 2", len(after.Notices), err)
	}
	if done, err := s.RefreshWatchKeys(ctx); err != nil || done != 0 {
		t.Errorf("second refresh rewrote %d, %v; want 0", done, err)
	}
}

// TestCompanyIndexFollowsChanges: the in-memory index sees new notices, a
// notice whose identifiers change in place, and a new register.
func TestCompanyIndexFollowsChanges(t *testing.T) {
	s, b := openWatches(t)
	ctx := context.Background()
	ns := storetest.Load(t, b.Backend)
	delta, _ := ident.Normalise(storetest.ACNDelta)
	screen := func() watch.ScreenResult {
		t.Helper()
		res, err := s.Screen(ctx, []ident.ID{delta}, notice.Filter{IncludeDeregistration: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := screen(); len(res.Unmatched) != 1 {
		t.Fatalf("Delta before its notice: %+v", res)
	}
	// A new notice for Delta.
	n := ns[0]
	n.SourceID, n.ID = "S-D", notice.IDFor("S-D")
	d := storetest.ACNDelta
	n.ACN = &d
	if _, err := s.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
		t.Fatal(err)
	}
	if res := screen(); len(res.Matched) != 1 || res.Matched[0].NoticeCount != 1 {
		t.Fatalf("Delta after a new notice: %+v", res)
	}
	// The same notice re-ingested under another company: Delta loses it.
	other := storetest.ACNCafe
	n.ACN = &other
	if _, err := s.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
		t.Fatal(err)
	}
	if res := screen(); len(res.Unmatched) != 1 {
		t.Fatalf("Delta after its notice moved to another company: %+v", res)
	}
	// A register without Delta: unresolved.
	storetest.LoadRegister(t, b.Backend, storetest.RegisterRows()[:1])
	if res := screen(); len(res.Unresolved) != 1 {
		t.Fatalf("Delta after leaving the register: %+v", res)
	}
}

func TestDirectorySearch(t *testing.T) {
	keys := []uint64{3, 3, 7, 100, 101, 5000, 5000, 5000, 1 << 40}
	d := newDirectory(keys)
	for _, k := range []uint64{0, 3, 4, 7, 99, 100, 101, 102, 4999, 5000, 5001, 1 << 40, 1<<40 + 1, 1 << 50} {
		want, wantOK := binarySearch(keys, k)
		got, ok := dirSearch(d, keys, k)
		if got != want || ok != wantOK {
			t.Errorf("search %d: (%d, %v), want (%d, %v)", k, got, ok, want, wantOK)
		}
	}
	if i, ok := dirSearch(newDirectory([]uint64(nil)), []uint64(nil), uint64(5)); i != 0 || ok {
		t.Errorf("empty: (%d, %v)", i, ok)
	}
}

func binarySearch(keys []uint64, k uint64) (int, bool) {
	i := 0
	for i < len(keys) && keys[i] < k {
		i++
	}
	return i, i < len(keys) && keys[i] == k
}

// TestMatchesHugeSinceOnLargeWatchPath: a since within matchScanWindow of
// the int64 maximum must not overflow the scan window's end (the page
// would restart from seq 1 and next_since go backwards).
func TestMatchesHugeSinceOnLargeWatchPath(t *testing.T) {
	defer func(k int) { keyDrivenMax = k }(keyDrivenMax)
	keyDrivenMax = 0 // every identifier watch takes the large-watch path
	s, b := openWatches(t)
	ctx := context.Background()
	storetest.Load(t, b.Backend)
	acc, err := s.CreateAccount(ctx, "A", "standard")
	if err != nil {
		t.Fatal(err)
	}
	alpha, _ := ident.Normalise(storetest.ACNAlpha)
	w, err := s.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: []ident.ID{alpha}}, acc.AccountID, b.Clock.Now()), account.DefaultPlans()["standard"])
	if err != nil {
		t.Fatal(err)
	}
	if all, err := s.Matches(ctx, acc.AccountID, w.ID, 0, 10); err != nil || len(all.Notices) == 0 {
		t.Fatalf("the watch matches nothing from 0 (%v); the test needs matches", err)
	}
	for _, since := range []int64{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - matchScanWindow + 1, math.MaxInt64 - 2*matchScanWindow} {
		page, err := s.Matches(ctx, acc.AccountID, w.ID, since, 10)
		if err != nil {
			t.Fatalf("since %d: %v", since, err)
		}
		if len(page.Notices) != 0 || page.NextSince != since || page.HasMore {
			t.Errorf("since %d: %d notices, next_since %d, has_more %v; want none, next_since unchanged", since, len(page.Notices), page.NextSince, page.HasMore)
		}
	}
}
