package storetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/matcher"
)

// WatchBackend bundles what RunWatches exercises: a backend holding
// notices, the register, accounts and watches.
type WatchBackend struct {
	Backend
	Watches  store.Watches
	Accounts store.Accounts
}

// RunWatches runs the watch contract against backends made by open, which
// must return a fresh, empty backend each call.
func RunWatches(t *testing.T, open func(t *testing.T) WatchBackend) {
	t.Run("Quota", func(t *testing.T) { testQuota(t, open(t)) })
	t.Run("WatchLimit", func(t *testing.T) { testWatchLimit(t, open(t)) })
	t.Run("ConcurrentCreates", func(t *testing.T) { testConcurrentCreates(t, open(t)) })
	t.Run("RegisterChange", func(t *testing.T) { testRegisterChange(t, open(t)) })
	t.Run("ScreenNameless", func(t *testing.T) { testScreenNameless(t, open(t)) })
	t.Run("RegisterShapes", func(t *testing.T) { testRegisterShapes(t, open(t)) })

	b := open(t)
	ns := Load(t, b.Backend)
	t.Run("CRUD", func(t *testing.T) { testWatchCRUD(t, b) })
	t.Run("Isolation", func(t *testing.T) { testWatchIsolation(t, b) })
	t.Run("Unresolved", func(t *testing.T) { testUnresolved(t, b) })
	t.Run("Matches", func(t *testing.T) { testMatches(t, b, ns) })
	t.Run("MatchesAgreeWithMatcher", func(t *testing.T) { testMatchesAgreeWithMatcher(t, b) })
	t.Run("MatchesCursor", func(t *testing.T) { testMatchesCursor(t, b) })
	t.Run("Screen", func(t *testing.T) { testScreen(t, b) })
}

// newAccount creates an account and returns its id.
func newAccount(t *testing.T, b WatchBackend) string {
	t.Helper()
	c, err := b.Accounts.CreateAccount(context.Background(), "Watcher", "standard")
	if err != nil {
		t.Fatal(err)
	}
	return c.AccountID
}

func ids(t *testing.T, vs ...string) []ident.ID {
	t.Helper()
	out := make([]ident.ID, len(vs))
	for i, v := range vs {
		id, ok := ident.Normalise(v)
		if !ok {
			t.Fatalf("storetest: bad identifier %q", v)
		}
		out[i] = id
	}
	return out
}

func newWatch(t *testing.T, b WatchBackend, accountID string, f watch.Filters, vs ...string) watch.Watch {
	t.Helper()
	return watch.New(watch.CreateRequest{Identifiers: ids(t, vs...), Filters: f, Name: "w"}, accountID, b.Clock.Now())
}

func create(t *testing.T, b WatchBackend, plan account.Plan, w watch.Watch) watch.Watch {
	t.Helper()
	got, err := b.Watches.CreateWatch(context.Background(), w, plan)
	if err != nil {
		t.Fatalf("create watch %v: %v", w.Identifiers, err)
	}
	b.Clock.Advance(time.Millisecond)
	return got
}

func wantCode(t *testing.T, err error, code errs.Code, what string) *errs.Error {
	t.Helper()
	e, ok := errs.As(err)
	if !ok || e.Code != code {
		t.Fatalf("%s: got %v, want %s", what, err, code)
	}
	return e
}

func countWatches(t *testing.T, b WatchBackend, accountID string) int {
	t.Helper()
	list, err := b.Watches.ListWatches(context.Background(), accountID)
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

func testQuota(t *testing.T, b WatchBackend) {
	ctx := context.Background()
	Load(t, b.Backend)
	acc := newAccount(t, b)
	plan := account.Plan{Name: "tiny", Companies: 3, Watches: 10}

	// Alpha's ACN and ABN are one company.
	create(t, b, plan, newWatch(t, b, acc, watch.Filters{}, ACNAlpha, ABNAlpha))
	// Delta and Cafe are new; Alpha's ABN is counted already: 3 in all.
	bw := create(t, b, plan, newWatch(t, b, acc, watch.Filters{}, ABNAlpha, ACNDelta, ACNCafe))
	// Delta's ABN resolves to a watched ACN: adds nothing.
	create(t, b, plan, newWatch(t, b, acc, watch.Filters{}, ABNDelta))

	_, err := b.Watches.CreateWatch(ctx, newWatch(t, b, acc, watch.Filters{}, ACNBeta, ACNDelta), plan)
	e := wantCode(t, err, errs.QuotaExceeded, "a fourth company")
	for _, part := range []string{"3 companies", "watches 3", "add 1"} {
		if !strings.Contains(e.Message, part) {
			t.Errorf("quota message %q does not say %q (limit, current count, attempted addition)", e.Message, part)
		}
	}
	if n := countWatches(t, b, acc); n != 3 {
		t.Errorf("after a rejected create the account has %d watches, want 3 (nothing written)", n)
	}

	// Deleting bw frees Cafe only (Alpha and Delta are still watched).
	if err := b.Watches.DeleteWatch(ctx, acc, bw.ID); err != nil {
		t.Fatal(err)
	}
	create(t, b, plan, newWatch(t, b, acc, watch.Filters{}, ACNBeta))
	// An ABN the register does not know is a company of its own.
	_, err = b.Watches.CreateWatch(ctx, newWatch(t, b, acc, watch.Filters{}, ABNBeta), plan)
	e = wantCode(t, err, errs.QuotaExceeded, "an unregistered ABN beyond the limit")
	if !strings.Contains(e.Message, "watches 3") || !strings.Contains(e.Message, "add 1") {
		t.Errorf("quota message %q, want the current count 3 and the addition 1", e.Message)
	}
	// Filter-only watches count no company.
	create(t, b, plan, newWatch(t, b, acc, watch.Filters{State: []string{"NSW"}}))

	// Another account has its own quota.
	other := newAccount(t, b)
	create(t, b, plan, newWatch(t, b, other, watch.Filters{}, ACNBeta, ACNCafe, ACNGamma))
}

func testWatchLimit(t *testing.T, b WatchBackend) {
	ctx := context.Background()
	acc := newAccount(t, b)
	plan := account.Plan{Name: "solo", Companies: 100, Watches: 1}
	create(t, b, plan, newWatch(t, b, acc, watch.Filters{}, ACNAlpha))
	_, err := b.Watches.CreateWatch(ctx, newWatch(t, b, acc, watch.Filters{}, ACNDelta), plan)
	e := wantCode(t, err, errs.WatchLimitReached, "a second watch on a one-watch plan")
	if !strings.Contains(e.Message, "1 watch") {
		t.Errorf("watch limit message %q does not name the limit", e.Message)
	}
	// The watch limit is checked before the quota.
	_, err = b.Watches.CreateWatch(ctx, newWatch(t, b, acc, watch.Filters{}, ACNDelta), account.Plan{Name: "none", Companies: 0, Watches: 1})
	wantCode(t, err, errs.WatchLimitReached, "both limits exceeded")
	if n := countWatches(t, b, acc); n != 1 {
		t.Errorf("after rejected creates the account has %d watches, want 1", n)
	}
}

// acnN returns the n-th valid ACN of a block unknown to the fixture.
func acnN(n int) string {
	first8 := fmt.Sprintf("9%07d", n)
	return first8 + strconv.Itoa(ident.ACNCheckDigit(first8))
}

func testConcurrentCreates(t *testing.T, b WatchBackend) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		plan   account.Plan
		shared bool // every watch names the same first company
		want   int
	}{
		{"company limit", account.Plan{Name: "five", Companies: 5, Watches: 100}, false, 5},
		{"company limit with a shared company", account.Plan{Name: "five", Companies: 5, Watches: 100}, true, 4},
		{"watch limit", account.Plan{Name: "three", Companies: 1000, Watches: 3}, false, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			acc := newAccount(t, b)
			const tries = 16
			var wg sync.WaitGroup
			results := make([]error, tries)
			for i := 0; i < tries; i++ {
				vs := []string{acnN(100 + i)}
				if c.shared {
					vs = []string{acnN(1), acnN(100 + i)}
				}
				w := newWatch(t, b, acc, watch.Filters{}, vs...)
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, results[i] = b.Watches.CreateWatch(ctx, w, c.plan)
				}()
			}
			wg.Wait()
			ok := 0
			for _, err := range results {
				switch {
				case err == nil:
					ok++
				case errs.Is(err, errs.QuotaExceeded), errs.Is(err, errs.WatchLimitReached):
				default:
					t.Errorf("concurrent create: %v", err)
				}
			}
			if ok != c.want {
				t.Errorf("%d of %d concurrent creates succeeded, want exactly %d", ok, tries, c.want)
			}
			if n := countWatches(t, b, acc); n != c.want {
				t.Errorf("the account has %d watches, want %d", n, c.want)
			}
		})
	}
}

func testWatchCRUD(t *testing.T, b WatchBackend) {
	ctx := context.Background()
	acc := newAccount(t, b)
	plan := account.DefaultPlans()["standard"]
	email := "ops@example.com"
	no := false
	w := watch.New(watch.CreateRequest{
		Identifiers: ids(t, ACNAlpha, ABNDelta),
		Filters:     watch.Filters{State: []string{"NSW", "vic"}, Q: "creditors", IncludeDeregistration: &no},
		Name:        "Clients", AlertEmail: &email,
	}, acc, b.Clock.Now())
	created := create(t, b, plan, w)
	filterOnly := create(t, b, plan, newWatch(t, b, acc, watch.Filters{AppointmentType: []string{"Court Liquidation"}}))

	got, err := b.Watches.Watch(ctx, acc, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !sameWatch(got, created) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, created)
	}
	if got.Filters.IncludeDeregistration == nil || *got.Filters.IncludeDeregistration {
		t.Errorf("include_deregistration read back as %v, want false", got.Filters.IncludeDeregistration)
	}
	fo, err := b.Watches.Watch(ctx, acc, filterOnly.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(fo.Identifiers) != 0 || fo.Filters.IncludeDeregistration != nil {
		t.Errorf("filter-only watch read back as %+v; want no identifiers and include_deregistration unset", fo)
	}

	list, err := b.Watches.ListWatches(ctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != created.ID || list[1].ID != filterOnly.ID {
		t.Errorf("list: %v, want [%s %s] oldest first", watchIDs(list), created.ID, filterOnly.ID)
	}

	now := b.Clock.Now().Add(time.Hour)
	off, name := false, "Renamed"
	upd, err := b.Watches.UpdateWatch(ctx, acc, created.ID, watch.Patch{Active: &off, Name: &name, AlertEmailSet: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	if upd.Active || upd.DeactivatedReason != watch.ManualDeactivationReason || upd.Name != name || upd.AlertEmail != nil ||
		!upd.UpdatedAt.Equal(now.Truncate(time.Millisecond)) || !upd.CreatedAt.Equal(created.CreatedAt) {
		t.Errorf("after update: %+v", upd)
	}
	again, _ := b.Watches.Watch(ctx, acc, created.ID)
	if !sameWatch(again, upd) {
		t.Errorf("update not stored: read\n%+v\nwant\n%+v", again, upd)
	}
	on := true
	upd, err = b.Watches.UpdateWatch(ctx, acc, created.ID, watch.Patch{Active: &on}, now)
	if err != nil || !upd.Active || upd.DeactivatedReason != "" {
		t.Errorf("reactivate: %+v, %v", upd, err)
	}

	if err := b.Watches.DeleteWatch(ctx, acc, created.ID); err != nil {
		t.Fatal(err)
	}
	_, err = b.Watches.Watch(ctx, acc, created.ID)
	wantCode(t, err, errs.NotFound, "a deleted watch")
	err = b.Watches.DeleteWatch(ctx, acc, created.ID)
	wantCode(t, err, errs.NotFound, "deleting twice")
	if err := b.Watches.DeleteWatch(ctx, acc, filterOnly.ID); err != nil {
		t.Fatal(err)
	}
}

func sameWatch(a, b watch.Watch) bool {
	aj, _ := a.MarshalJSON()
	bj, _ := b.MarshalJSON()
	return string(aj) == string(bj) && a.AccountID == b.AccountID &&
		fmt.Sprint(a.Filters.IncludeDeregistration == nil) == fmt.Sprint(b.Filters.IncludeDeregistration == nil)
}

func watchIDs(ws []watch.Watch) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.ID
	}
	return out
}

func testWatchIsolation(t *testing.T, b WatchBackend) {
	ctx := context.Background()
	owner, intruder := newAccount(t, b), newAccount(t, b)
	w := create(t, b, account.DefaultPlans()["standard"], newWatch(t, b, owner, watch.Filters{}, ACNAlpha))
	on := true
	missing := watch.IDPrefix + "doesnotexist"
	for _, c := range []struct {
		name string
		call func(id string) error
	}{
		{"Watch", func(id string) error { _, err := b.Watches.Watch(ctx, intruder, id); return err }},
		{"UpdateWatch", func(id string) error {
			_, err := b.Watches.UpdateWatch(ctx, intruder, id, watch.Patch{Active: &on}, b.Clock.Now())
			return err
		}},
		{"Matches", func(id string) error { _, err := b.Watches.Matches(ctx, intruder, id, 0, 10); return err }},
		{"DeleteWatch", func(id string) error { return b.Watches.DeleteWatch(ctx, intruder, id) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			theirs := wantCode(t, c.call(w.ID), errs.NotFound, "another account's watch")
			none := wantCode(t, c.call(missing), errs.NotFound, "a missing watch")
			if strings.ReplaceAll(theirs.Message, w.ID, "ID") != strings.ReplaceAll(none.Message, missing, "ID") {
				t.Errorf("messages differ: %q vs %q; another account's watch must look missing", theirs.Message, none.Message)
			}
		})
	}
	if n := countWatches(t, b, intruder); n != 0 {
		t.Errorf("the intruder lists %d watches", n)
	}
	if _, err := b.Watches.Watch(ctx, owner, w.ID); err != nil {
		t.Errorf("the owner's watch after the intruder's attempts: %v", err)
	}
}

func testUnresolved(t *testing.T, b WatchBackend) {
	acc := newAccount(t, b)
	unknown := acnN(7)
	w := create(t, b, account.DefaultPlans()["standard"], newWatch(t, b, acc, watch.Filters{},
		ACNDelta, unknown, ACNBadCheck, ABNGamma, ACNGamma, ABNDelta, ABNBeta))
	// Delta is in the register; the bad-check-digit ACN, ABNGamma and
	// ABNBeta are on notices; ACNGamma (ABNGamma's last nine digits) is on
	// no notice and the register does not resolve ABNGamma.
	want := []string{unknown, ACNGamma}
	if !slices.Equal(w.Unresolved, want) {
		t.Errorf("unresolved %v, want %v in the caller's order", w.Unresolved, want)
	}
	got, err := b.Watches.Watch(context.Background(), acc, w.ID)
	if err != nil || !slices.Equal(got.Unresolved, want) {
		t.Errorf("unresolved read back as %v (%v), want %v", got.Unresolved, err, want)
	}
}

// allMatches polls a watch to the end with the given page size.
func allMatches(t *testing.T, b WatchBackend, acc, id string, since int64, limit int) []notice.Notice {
	t.Helper()
	var out []notice.Notice
	for page := 0; ; page++ {
		p, err := b.Watches.Matches(context.Background(), acc, id, since, limit)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Notices...)
		if len(p.Notices) > limit {
			t.Fatalf("page of %d notices, limit %d", len(p.Notices), limit)
		}
		if !p.HasMore {
			if len(p.Notices) == 0 && p.NextSince != since {
				t.Errorf("empty page: next_since %d, want since %d", p.NextSince, since)
			}
			return out
		}
		if p.NextSince != p.Notices[len(p.Notices)-1].Seq {
			t.Fatalf("next_since %d, want the last notice's seq %d", p.NextSince, p.Notices[len(p.Notices)-1].Seq)
		}
		since = p.NextSince
		if page > 100 {
			t.Fatal("paging does not end")
		}
	}
}

func testMatches(t *testing.T, b WatchBackend, ns []notice.Notice) {
	acc := newAccount(t, b)
	plan := account.DefaultPlans()["standard"]
	no := false
	for _, c := range []struct {
		name string
		ids  []string
		f    watch.Filters
		want []string // source ids, ascending seq
	}{
		{"ACN: its notices, the ABN-only one through the register, deregistration included", []string{ACNAlpha}, watch.Filters{}, []string{"S-001", "S-002", "S-006"}},
		{"ABN resolves to its ACN", []string{ABNAlpha}, watch.Filters{}, []string{"S-001", "S-002", "S-006"}},
		{"both identifiers of one company: each notice once", []string{ACNAlpha, ABNAlpha}, watch.Filters{}, []string{"S-001", "S-002", "S-006"}},
		{"deregistration excluded on request", []string{ACNAlpha}, watch.Filters{IncludeDeregistration: &no}, []string{"S-001", "S-002"}},
		{"unregistered company by ACN", []string{ACNBeta}, watch.Filters{}, []string{"S-003"}},
		{"unregistered company by ABN", []string{ABNBeta}, watch.Filters{}, []string{"S-003"}},
		{"ABN the register does not resolve", []string{ABNGamma}, watch.Filters{}, []string{"S-007"}},
		{"its last nine digits are not its ACN", []string{ACNGamma}, watch.Filters{}, nil},
		{"bad check digit", []string{ACNBadCheck}, watch.Filters{}, []string{"S-008"}},
		{"register company without notices", []string{ACNDelta, ABNDelta}, watch.Filters{}, nil},
		{"every filter must pass", []string{ACNAlpha, ACNCafe}, watch.Filters{AppointmentType: []string{"creditors' voluntary liquidation"}, State: []string{"NSW"}}, []string{"S-002"}},
		{"filter-only, case-insensitive", nil, watch.Filters{State: []string{"nsw"}}, []string{"S-001", "S-002", "S-006"}},
		{"filter-only q", nil, watch.Filters{Q: "creditors"}, []string{"S-001", "S-002", "S-007"}},
		{"filter-only q and filter", nil, watch.Filters{Q: "creditors", State: []string{"WA"}}, []string{"S-007"}},
		{"identifiers and q", []string{ACNAlpha}, watch.Filters{Q: "liquidator"}, []string{"S-001"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := create(t, b, plan, newWatch(t, b, acc, c.f, c.ids...))
			got := sourceIDs(allMatches(t, b, acc, w.ID, 0, 100))
			if !slices.Equal(got, c.want) && (len(got) != 0 || len(c.want) != 0) {
				t.Errorf("matches %v, want %v", got, c.want)
			}
			if err := b.Watches.DeleteWatch(context.Background(), acc, w.ID); err != nil {
				t.Fatal(err)
			}
		})
	}

	t.Run("full notice objects", func(t *testing.T) {
		w := create(t, b, plan, newWatch(t, b, acc, watch.Filters{}, ACNBeta))
		p, err := b.Watches.Matches(context.Background(), acc, w.ID, 0, 10)
		if err != nil || len(p.Notices) != 1 {
			t.Fatalf("%+v, %v", p, err)
		}
		one, err := b.Notices.Notice(context.Background(), p.Notices[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(one, p.Notices[0]) {
			t.Errorf("match %+v\ndiffers from the notice %+v", p.Notices[0], one)
		}
	})

	t.Run("a notice arriving later is the next poll", func(t *testing.T) {
		// A company nothing knows yet, so the other tests' fixture is intact.
		late := acnN(11)
		w := create(t, b, plan, newWatch(t, b, acc, watch.Filters{}, late))
		p, err := b.Watches.Matches(context.Background(), acc, w.ID, 0, 10)
		if err != nil || len(p.Notices) != 0 || p.HasMore || p.NextSince != 0 {
			t.Fatalf("before: %+v, %v", p, err)
		}
		n := ns[0]
		n.SourceID, n.ID = "S-LATE", notice.IDFor("S-LATE")
		n.ACN, n.ABN = &late, nil
		if _, err := b.Writer.UpsertNotices(context.Background(), []notice.Notice{n}); err != nil {
			t.Fatal(err)
		}
		p, err = b.Watches.Matches(context.Background(), acc, w.ID, p.NextSince, 10)
		if err != nil || len(p.Notices) != 1 || p.Notices[0].SourceID != "S-LATE" || p.NextSince != p.Notices[0].Seq {
			t.Fatalf("after: %+v, %v", p, err)
		}
		p, err = b.Watches.Matches(context.Background(), acc, w.ID, p.NextSince, 10)
		if err != nil || len(p.Notices) != 0 {
			t.Errorf("polling again repeats: %+v, %v", p, err)
		}
	})
}

// testMatchesAgreeWithMatcher checks Matches against package matcher, the
// one definition of matching, over every fixture notice.
func testMatchesAgreeWithMatcher(t *testing.T, b WatchBackend) {
	ctx := context.Background()
	acc := newAccount(t, b)
	plan := account.DefaultPlans()["standard"]
	all, err := b.Notices.Search(ctx, notice.SearchQuery{Filter: notice.Filter{IncludeDeregistration: true}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	abnToACN := map[string]string{}
	for _, r := range RegisterRows() {
		if r.ABN != "" {
			abnToACN[r.ABN] = r.ACN
		}
	}
	resolve := func(abn string) []string {
		if acn, ok := abnToACN[abn]; ok {
			return []string{acn}
		}
		return nil
	}
	no := false
	sets := [][]string{{ACNAlpha}, {ABNAlpha}, {ABNDelta, ACNCafe}, {ABNBeta}, {ACNGamma, ABNGamma}, {ACNBadCheck, ACNBeta}, nil}
	filters := []watch.Filters{
		{},
		{IncludeDeregistration: &no},
		{NoticePurpose: []string{"appointment", "Meeting"}},
		{Q: "creditors OR dividend"},
		{Q: "-deregistered"},
		{Status: []string{"in liquidation"}, State: []string{"nsw", "QLD"}},
	}
	for _, set := range sets {
		for _, f := range filters {
			if len(set) == 0 && f.Empty() {
				continue
			}
			w := create(t, b, plan, newWatch(t, b, acc, f, set...))
			nf, err := f.NoticeFilter()
			if err != nil {
				t.Fatal(err)
			}
			entry := matcher.Entry{WatchID: w.ID, Identifiers: slices.Clone(set), Filter: nf}
			for _, v := range set {
				entry.Identifiers = append(entry.Identifiers, resolve(v)...)
			}
			var ix matcher.Index
			if err := ix.Add(entry); err != nil {
				t.Fatal(err)
			}
			var want []string
			for i := len(all.Notices) - 1; i >= 0; i-- { // ascending seq
				n := all.Notices[i]
				if len(ix.Match(&n, resolve)) == 1 {
					want = append(want, n.SourceID)
				}
			}
			slices.Sort(want)
			got := sourceIDs(allMatches(t, b, acc, w.ID, 0, 3))
			slices.Sort(got)
			if !slices.Equal(got, want) && (len(got) != 0 || len(want) != 0) {
				t.Errorf("watch %v %+v: store matches %v, matcher %v", set, f, got, want)
			}
			_ = b.Watches.DeleteWatch(ctx, acc, w.ID)
		}
	}
}

func testMatchesCursor(t *testing.T, b WatchBackend) {
	acc := newAccount(t, b)
	w := create(t, b, account.DefaultPlans()["standard"], newWatch(t, b, acc, watch.Filters{NoticePurpose: []string{"Appointment", "Dividend", "Meeting", "Deregistration"}}))
	full := allMatches(t, b, acc, w.ID, 0, 100)
	if len(full) < 5 {
		t.Fatalf("only %d matches; the fixture should give more", len(full))
	}
	for i := 1; i < len(full); i++ {
		if full[i].Seq <= full[i-1].Seq {
			t.Fatalf("matches not ascending by seq: %d then %d", full[i-1].Seq, full[i].Seq)
		}
	}
	for _, limit := range []int{1, 2, 3} {
		paged := allMatches(t, b, acc, w.ID, 0, limit)
		if !slices.Equal(sourceIDs(paged), sourceIDs(full)) {
			t.Errorf("limit %d pages give %v, want %v", limit, sourceIDs(paged), sourceIDs(full))
		}
	}
	mid := full[2].Seq
	rest := allMatches(t, b, acc, w.ID, mid, 100)
	if !slices.Equal(sourceIDs(rest), sourceIDs(full[3:])) {
		t.Errorf("since %d gives %v, want %v", mid, sourceIDs(rest), sourceIDs(full[3:]))
	}
	p, err := b.Watches.Matches(context.Background(), acc, w.ID, full[len(full)-1].Seq+1000, 10)
	if err != nil || len(p.Notices) != 0 || p.HasMore || p.NextSince != full[len(full)-1].Seq+1000 {
		t.Errorf("beyond the end: %+v, %v", p, err)
	}
	p, err = b.Watches.Matches(context.Background(), acc, w.ID, 0, 2)
	if err != nil || len(p.Notices) != 2 || !p.HasMore || p.NextSince != full[1].Seq {
		t.Errorf("first page of 2: %+v, %v", p, err)
	}
}

// testRegisterChange: an identifier unknown at creation stays watched and
// matches once a new register resolves it.
func testRegisterChange(t *testing.T, b WatchBackend) {
	ctx := context.Background()
	ns := Load(t, b.Backend)
	acc := newAccount(t, b)
	w := create(t, b, account.DefaultPlans()["standard"], newWatch(t, b, acc, watch.Filters{}, ABNGamma))
	rows := append(RegisterRows(), notice.RegisterRow{CompanyName: "GAMMA HOLDINGS PTY LTD", ACN: ACNGamma,
		Type: "APTY", Status: "REGD", CurrentNameIndicator: "Y", ABN: ABNGamma})
	LoadRegister(t, b.Backend, rows)
	n := ns[0]
	n.SourceID, n.ID = "S-GAMMA-ACN", notice.IDFor("S-GAMMA-ACN")
	g := ACNGamma
	n.ACN, n.ABN = &g, nil
	if _, err := b.Writer.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
		t.Fatal(err)
	}
	got := sourceIDs(allMatches(t, b, acc, w.ID, 0, 10))
	if want := []string{"S-007", "S-GAMMA-ACN"}; !slices.Equal(got, want) {
		t.Errorf("after the register learnt ABNGamma -> ACNGamma: matches %v, want %v", got, want)
	}
	res, err := b.Watches.Screen(ctx, ids(t, ABNGamma, ACNGamma), notice.Filter{IncludeDeregistration: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matched) != 2 || res.Matched[0].NoticeCount != 2 || res.Matched[1].NoticeCount != 2 {
		t.Errorf("screen after the register change: %+v", res)
	}
}

func testScreen(t *testing.T, b WatchBackend) {
	ctx := context.Background()
	unknown := acnN(9)
	submitted := []string{ACNDelta, ACNAlpha, unknown, ABNAlpha, ABNDelta, ACNBeta, ABNGamma, ACNGamma, ACNBadCheck, ACNCafe}
	// ins is the latest insolvency notice ("" for none), purposes the
	// notice purposes joined with "|".
	// unmatchedCompanies is what the screen says of each identifier when
	// it is unmatched: its ACN and the register's name (<nil> for none:
	// a company the register lacks has neither, though a notice names it).
	unmatchedCompanies := map[string]string{
		ACNDelta: ACNDelta + " DELTA SERVICES PTY LTD", ABNDelta: ACNDelta + " DELTA SERVICES PTY LTD",
		ACNBeta: ACNBeta + " <nil>", ABNGamma: "<nil> <nil>", ACNBadCheck: ACNBadCheck + " <nil>", ACNCafe: ACNCafe + " CAFÉ SOCIÉTÉ PTY LTD",
	}
	type m struct {
		id, acn, name string
		count         int
		latest, ins   string
		purposes      string
	}
	for _, c := range []struct {
		name       string
		f          notice.Filter
		matched    []m
		unmatched  []string
		unresolved []string
	}{
		{"defaults (deregistration included)", notice.Filter{IncludeDeregistration: true},
			[]m{
				// The latest notice a deregistration, the insolvency notice before it beside it.
				{ACNAlpha, ACNAlpha, "ALPHA MINING PTY LTD", 3, "S-006", "S-002", "Appointment|DEREGISTRATION|meeting"},
				{ABNAlpha, ACNAlpha, "ALPHA MINING PTY LTD", 3, "S-006", "S-002", "Appointment|DEREGISTRATION|meeting"},
				// Only a deregistration: no insolvency notice.
				{ACNBeta, ACNBeta, "BETA TRADING PTY LTD", 1, "S-003", "", "Deregistration"},
				{ABNGamma, "", "GAMMA HOLDINGS PTY LTD", 1, "S-007", "S-007", "Appointment"},
				{ACNBadCheck, ACNBadCheck, "EPSILON PTY LTD", 1, "S-008", "S-008", "Appointment"},
				// Two notices published at the same instant: the later seq.
				{ACNCafe, ACNCafe, "CAFÉ SOCIÉTÉ PTY LTD", 2, "S-005", "S-005", "Dividend"},
			},
			[]string{ACNDelta, ABNDelta},
			[]string{unknown, ACNGamma}},
		{"without deregistration: a company whose only notice fails is unmatched", notice.Filter{},
			[]m{
				{ACNAlpha, ACNAlpha, "ALPHA MINING PTY LTD", 2, "S-002", "S-002", "Appointment|meeting"},
				{ABNAlpha, ACNAlpha, "ALPHA MINING PTY LTD", 2, "S-002", "S-002", "Appointment|meeting"},
				{ABNGamma, "", "GAMMA HOLDINGS PTY LTD", 1, "S-007", "S-007", "Appointment"},
				{ACNBadCheck, ACNBadCheck, "EPSILON PTY LTD", 1, "S-008", "S-008", "Appointment"},
				{ACNCafe, ACNCafe, "CAFÉ SOCIÉTÉ PTY LTD", 2, "S-005", "S-005", "Dividend"},
			},
			[]string{ACNDelta, ABNDelta, ACNBeta},
			[]string{unknown, ACNGamma}},
		{"q and a filter", notice.Filter{IncludeDeregistration: true, Q: mustParse(t, "creditors"), State: []string{"nsw"}},
			[]m{
				{ACNAlpha, ACNAlpha, "ALPHA MINING PTY LTD", 2, "S-002", "S-002", "Appointment|meeting"},
				{ABNAlpha, ACNAlpha, "ALPHA MINING PTY LTD", 2, "S-002", "S-002", "Appointment|meeting"},
			},
			[]string{ACNDelta, ABNDelta, ACNBeta, ABNGamma, ACNBadCheck, ACNCafe},
			[]string{unknown, ACNGamma}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := b.Watches.Screen(ctx, ids(t, submitted...), c.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []m
			for _, x := range res.Matched {
				g := m{id: x.Identifier, count: x.NoticeCount, purposes: strings.Join(x.NoticePurposes, "|")}
				if x.ACN != nil {
					g.acn = *x.ACN
				}
				if x.CompanyName != nil {
					g.name = *x.CompanyName
				}
				n, err := b.Notices.Notice(ctx, x.LatestNotice.ID)
				if err != nil {
					t.Fatalf("latest notice %q of %s: %v", x.LatestNotice.ID, x.Identifier, err)
				}
				g.latest = n.SourceID
				describes(t, x.Identifier+" latest_notice", x.LatestNotice, n)
				if x.Insolvency != (x.LatestInsolvencyNotice != nil) {
					t.Errorf("%s insolvency %v with latest_insolvency_notice %+v", x.Identifier, x.Insolvency, x.LatestInsolvencyNotice)
				}
				if li := x.LatestInsolvencyNotice; li != nil {
					n, err := b.Notices.Notice(ctx, li.ID)
					if err != nil {
						t.Fatalf("latest insolvency notice %q of %s: %v", li.ID, x.Identifier, err)
					}
					g.ins = n.SourceID
					describes(t, x.Identifier+" latest_insolvency_notice", *li, n)
				}
				got = append(got, g)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.matched) {
				t.Errorf("matched\n%v\nwant\n%v", got, c.matched)
			}
			if !slices.Equal(res.Unmatched, c.unmatched) {
				t.Errorf("unmatched %v, want %v", res.Unmatched, c.unmatched)
			}
			// Each unmatched identifier with the register's ACN and name.
			var companies []string
			for _, u := range res.UnmatchedCompanies {
				companies = append(companies, u.Identifier+" "+deref(u.ACN)+" "+deref(u.CompanyName))
			}
			var wantCompanies []string
			for _, id := range c.unmatched {
				wantCompanies = append(wantCompanies, id+" "+unmatchedCompanies[id])
			}
			if !slices.Equal(companies, wantCompanies) {
				t.Errorf("unmatched_companies %q, want %q", companies, wantCompanies)
			}
			if !slices.Equal(res.Unresolved, c.unresolved) {
				t.Errorf("unresolved %v, want %v", res.Unresolved, c.unresolved)
			}
			want := watch.ScreenCounts{Submitted: len(submitted), Matched: len(c.matched), Unmatched: len(c.unmatched), Unresolved: len(c.unresolved)}
			if res.Counts != want {
				t.Errorf("counts %+v, want %+v", res.Counts, want)
			}
		})
	}
	t.Run("nothing submitted", func(t *testing.T) {
		res, err := b.Watches.Screen(ctx, nil, notice.Filter{IncludeDeregistration: true})
		if err != nil || len(res.Matched)+len(res.Unmatched)+len(res.Unresolved) != 0 {
			t.Errorf("%+v, %v", res, err)
		}
	})
}

// describes checks that the screen's summary ln describes the notice n.
func describes(t *testing.T, what string, ln watch.LatestNotice, n notice.Notice) {
	t.Helper()
	if ln.Seq != n.Seq || ln.PublishedDate != n.PublishedDate || ln.NoticeType != n.NoticeType ||
		ln.NoticePurpose != n.NoticePurpose || deref(ln.AppointmentType) != deref(n.AppointmentType) {
		t.Errorf("%s %+v does not describe %s", what, ln, n.SourceID)
	}
}

// testScreenNameless: a company named neither by the register nor by its
// notices is matched with company_name null (not "").
func testScreenNameless(t *testing.T, b WatchBackend) {
	ctx := context.Background()
	ns := Load(t, b.Backend)
	nameless := acnN(7)
	n := ns[0]
	n.SourceID, n.ID = "S-NAMELESS", notice.IDFor("S-NAMELESS")
	n.ACN, n.ABN, n.CompanyName = &nameless, nil, ""
	if _, err := b.Writer.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
		t.Fatal(err)
	}
	res, err := b.Watches.Screen(ctx, ids(t, nameless), notice.Filter{IncludeDeregistration: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matched) != 1 || res.Matched[0].NoticeCount != 1 {
		t.Fatalf("screen of a company known only by a nameless notice: %+v", res)
	}
	if cn := res.Matched[0].CompanyName; cn != nil {
		t.Errorf("company_name %q, want null", *cn)
	}
}

func mustParse(t *testing.T, q string) query.Node {
	t.Helper()
	n, err := query.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
