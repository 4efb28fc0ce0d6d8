package sqlite

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/watch"
)

// loadRegisterRows replaces the register of s with rows.
func loadRegisterRows(t *testing.T, s *Store, rows []notice.RegisterRow) {
	t.Helper()
	ctx := context.Background()
	l, err := s.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// Identifiers of the screen corpus outside the synthetic pool.
const (
	// otherABNACN is a register company whose ABN is not its ACN with two
	// digits in front; otherABN is that ABN.
	otherABNACN = "999999990"
	otherABN    = "51824753556"
	// strayABN is on notices but in no register row.
	strayABN = "33102417032"
)

// screenCorpus stores a synthetic corpus with the awkward cases of the
// screen: values in odd case, a NULL appointment_type, notices published at
// the same instant, ids not of the ntc_ form, companies outside the
// register, an ABN the register does not derive from its ACN, one on
// notices only. It returns the store and every identifier worth screening.
func screenCorpus(t *testing.T, notices int) (*Store, []ident.ID) {
	t.Helper()
	ctx := context.Background()
	s := openTest(t)
	g := newSynth(11, notices)
	g.companies = notices / 4
	var batch []notice.Notice
	var prev notice.Notice
	for i := 0; i < notices; i++ {
		n := g.notice(i)
		switch i % 11 {
		case 1:
			n.State = strings.ToLower(n.State)
		case 2:
			if n.NoticePurpose == notice.DeregistrationPurpose {
				n.NoticePurpose = "DEREGISTRATION"
			} else {
				n.NoticePurpose = strings.ToUpper(n.NoticePurpose)
			}
		case 3:
			n.AppointmentType = nil
		case 4:
			n.PublishedAt, n.PublishedDate = prev.PublishedAt, prev.PublishedDate
		case 5:
			if n.AppointmentType != nil {
				a := strings.ToLower(*n.AppointmentType)
				n.AppointmentType = &a
			}
			n.NoticeCode = strings.ToLower(n.NoticeCode)
			n.Status = strings.ToUpper(n.Status)
		}
		if i%97 == 0 {
			n.ID = fmt.Sprintf("custom-%d", i)
		}
		switch i % 13 {
		case 0:
			abn := otherABN
			n.ACN, n.ABN = nil, &abn
		case 1:
			abn := strayABN
			n.ACN, n.ABN = nil, &abn
		}
		batch, prev = append(batch, n), n
	}
	if _, err := s.UpsertNotices(ctx, batch); err != nil {
		t.Fatal(err)
	}
	// Two thirds of the companies are in the register (a fifth of them
	// with a former name first).
	rows := g.registerRows(g.companies * 2 / 3)
	rows = append(rows, notice.RegisterRow{CompanyName: "OTHER ABN PTY LTD", ACN: otherABNACN, Type: "APTY",
		Status: "REGD", CurrentNameIndicator: "Y", ABN: otherABN})
	loadRegisterRows(t, s, rows)

	var ids []ident.ID
	add := func(v string) {
		id, ok := ident.Normalise(v)
		if !ok {
			t.Fatalf("bad identifier %q", v)
		}
		ids = append(ids, id)
	}
	for c := 0; c < g.companies+50; c++ {
		acn := g.companyACN(c)
		if c%3 == 0 {
			add(ident.ABNFromACN(acn))
		}
		add(acn)
	}
	add(otherABNACN)
	add(otherABN)
	add(strayABN)
	add("123456789") // bad check digit, unknown
	return s, ids
}

// TestScreenMemoryAgreesWithSQL: the in-memory screen gives exactly what
// the SQL filters and reads give, for a table of filters.
func TestScreenMemoryAgreesWithSQL(t *testing.T) {
	s, ids := screenCorpus(t, 4000)
	ctx := context.Background()
	q := func(s string) query.Node { return mustParseQ(t, s) }
	for _, c := range []struct {
		name string
		f    notice.Filter
	}{
		{"everything", notice.Filter{IncludeDeregistration: true}},
		{"without deregistration", notice.Filter{}},
		{"states in any case", notice.Filter{IncludeDeregistration: true, State: []string{"nsw", "Vic"}}},
		{"purpose", notice.Filter{IncludeDeregistration: true, NoticePurpose: []string{"appointment"}}},
		{"purpose deregistration, excluded", notice.Filter{NoticePurpose: []string{"Deregistration", "Meeting"}}},
		{"appointment type", notice.Filter{IncludeDeregistration: true, AppointmentType: []string{"COURT LIQUIDATION", "Receivership"}}},
		{"code and status", notice.Filter{NoticeCode: []string{"lq", "DV"}, Status: []string{"in liquidation"}}},
		{"from", notice.Filter{IncludeDeregistration: true, From: "2025-06-01"}},
		{"to", notice.Filter{To: "2024-12-31"}},
		{"from and to", notice.Filter{IncludeDeregistration: true, From: "2024-03-01", To: "2024-09-30", State: []string{"QLD", "WA", "SA"}}},
		{"from after to", notice.Filter{IncludeDeregistration: true, From: "2025-01-01", To: "2024-01-01"}},
		{"a value nothing has", notice.Filter{IncludeDeregistration: true, AppointmentType: []string{"Nothing Like It"}}},
		{"q by the full-text index", notice.Filter{IncludeDeregistration: true, Q: q("creditors OR liquidator"), State: []string{"nsw"}}},
		{"q FTS5 cannot express (SQL filters)", notice.Filter{Q: q("-deregistered")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem, err := s.screen(ctx, ids, c.f, screenMemory)
			if err != nil {
				t.Fatal(err)
			}
			viaSQL, err := s.screen(ctx, ids, c.f, screenSQL)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(mem, viaSQL) {
				t.Errorf("in memory and SQL differ:\n%s", screenDiff(mem, viaSQL))
			}
			if n := len(ids); mem.Counts.Submitted != n || mem.Counts.Matched+mem.Counts.Unmatched+mem.Counts.Unresolved != n {
				t.Errorf("counts %+v for %d identifiers", mem.Counts, n)
			}
		})
	}
	snap, err := s.companies.current(ctx, s.read)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.fields {
		t.Fatal("the index holds no fields: the comparison above compared SQL with itself")
	}
	if mf := snap.compileFilter(notice.Filter{State: []string{"NSW"}, From: "2024-01-01"}); mf.state == nil || mf.date == nil || mf.purpose == nil {
		t.Errorf("filters not compiled: %+v", mf)
	}
	// The corpus exercises what it is meant to.
	res, err := s.Screen(ctx, ids, notice.Filter{IncludeDeregistration: true})
	if err != nil {
		t.Fatal(err)
	}
	var custom, noName, viaNotice, nullAppt int
	for _, m := range res.Matched {
		if strings.HasPrefix(m.LatestNotice.ID, "custom-") {
			custom++
		}
		if m.ACN == nil {
			noName++
		}
		if m.Identifier == strayABN && m.CompanyName != nil {
			viaNotice++
		}
		if m.LatestNotice.AppointmentType == nil && m.LatestNotice.NoticePurpose != notice.DeregistrationPurpose {
			nullAppt++
		}
	}
	if custom == 0 || noName == 0 || viaNotice == 0 || nullAppt == 0 || res.Counts.Unmatched == 0 || res.Counts.Unresolved == 0 {
		t.Errorf("the corpus misses a case: %d odd ids, %d without ACN, %d named from a notice, %d NULL appointment types, counts %+v",
			custom, noName, viaNotice, nullAppt, res.Counts)
	}
}

// screenDiff describes the first differences of two screen results.
func screenDiff(a, b watch.ScreenResult) string {
	var out []string
	if a.Counts != b.Counts {
		out = append(out, fmt.Sprintf("counts %+v vs %+v", a.Counts, b.Counts))
	}
	show := func(m watch.Matched) string {
		s := func(p *string) string {
			if p == nil {
				return "<nil>"
			}
			return *p
		}
		return fmt.Sprintf("%s acn=%s name=%s count=%d latest=%+v appt=%s", m.Identifier, s(m.ACN), s(m.CompanyName),
			m.NoticeCount, m.LatestNotice, s(m.LatestNotice.AppointmentType))
	}
	for i := 0; i < min(len(a.Matched), len(b.Matched)) && len(out) < 5; i++ {
		if !reflect.DeepEqual(a.Matched[i], b.Matched[i]) {
			out = append(out, show(a.Matched[i])+"\n  vs "+show(b.Matched[i]))
		}
	}
	if !reflect.DeepEqual(a.Unmatched, b.Unmatched) {
		out = append(out, "unmatched lists differ")
	}
	if !reflect.DeepEqual(a.Unresolved, b.Unresolved) {
		out = append(out, "unresolved lists differ")
	}
	return strings.Join(out, "\n")
}

// TestScreenFollowsChanges: a notice changed in place (any field the index
// holds, even in case only), a newer notice and a new register are all seen
// by the next screen, as by SQL.
func TestScreenFollowsChanges(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	acn := "004085616"
	id, _ := ident.Normalise(acn)
	appt := "Court Liquidation"
	base := notice.Notice{SourceID: "S-1", PublishedAt: "2026-11-02T01:00:00.000Z", ACN: &acn, CompanyName: "ALPHA",
		NoticeType: "Appointment of Liquidator", NoticeCode: "LQ", NoticePurpose: "Appointment",
		AppointmentType: &appt, State: "NSW", Status: "In Liquidation", Practitioners: []notice.Practitioner{}}
	upsert := func(ns ...notice.Notice) {
		t.Helper()
		if _, err := s.UpsertNotices(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	screen := func(f notice.Filter) watch.ScreenResult {
		t.Helper()
		mem, err := s.Screen(ctx, []ident.ID{id}, f)
		if err != nil {
			t.Fatal(err)
		}
		viaSQL, err := s.screen(ctx, []ident.ID{id}, f, screenSQL)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(mem, viaSQL) {
			t.Fatalf("in memory and SQL differ:\n%s", screenDiff(mem, viaSQL))
		}
		return mem
	}
	all := notice.Filter{IncludeDeregistration: true}
	upsert(base)
	loadRegisterRows(t, s, []notice.RegisterRow{{CompanyName: "ALPHA MINING PTY LTD", ACN: acn, Type: "APTY",
		Status: "REGD", CurrentNameIndicator: "Y", ABN: "53" + acn}, {CompanyName: "BETA TRADING PTY LTD",
		ACN: "600000002", Type: "APTY", Status: "REGD", CurrentNameIndicator: "Y", ABN: "43600000002"}})
	latest := func(r watch.ScreenResult) watch.LatestNotice {
		t.Helper()
		if len(r.Matched) != 1 {
			t.Fatalf("want one match, got %+v", r)
		}
		return r.Matched[0].LatestNotice
	}
	if got := latest(screen(all)); got.NoticePurpose != "Appointment" || *got.AppointmentType != "Court Liquidation" {
		t.Fatalf("first screen: %+v", got)
	}
	version := func() string { return s.metaValue("notice_keys_version") }
	before := version()
	upsert(base) // unchanged: the index stays
	if v := version(); v != before {
		t.Errorf("re-ingesting an unchanged notice bumped notice_keys_version %s -> %s", before, v)
	}

	steps := []struct {
		name   string
		change func(n *notice.Notice)
		check  func(t *testing.T)
	}{
		{"purpose, case only", func(n *notice.Notice) { n.NoticePurpose = "APPOINTMENT" }, func(t *testing.T) {
			if got := latest(screen(all)); got.NoticePurpose != "APPOINTMENT" {
				t.Errorf("notice_purpose %q, want APPOINTMENT", got.NoticePurpose)
			}
		}},
		{"state", func(n *notice.Notice) { n.State = "VIC" }, func(t *testing.T) {
			if r := screen(notice.Filter{IncludeDeregistration: true, State: []string{"nsw"}}); len(r.Unmatched) != 1 {
				t.Errorf("moved to VIC, still matches NSW: %+v", r)
			}
		}},
		{"appointment type to NULL", func(n *notice.Notice) { n.AppointmentType = nil }, func(t *testing.T) {
			if got := latest(screen(all)); got.AppointmentType != nil {
				t.Errorf("appointment_type %v, want null", *got.AppointmentType)
			}
		}},
		{"type and code", func(n *notice.Notice) { n.NoticeType, n.NoticeCode = "Notice of Meeting", "MC" }, func(t *testing.T) {
			if got := latest(screen(notice.Filter{IncludeDeregistration: true, NoticeCode: []string{"mc"}})); got.NoticeType != "Notice of Meeting" {
				t.Errorf("notice_type %q", got.NoticeType)
			}
		}},
		{"status", func(n *notice.Notice) { n.Status = "Deregistered" }, func(t *testing.T) {
			screen(notice.Filter{IncludeDeregistration: true, Status: []string{"in liquidation"}})
		}},
		{"to deregistration", func(n *notice.Notice) { n.NoticePurpose = "deregistration" }, func(t *testing.T) {
			if r := screen(notice.Filter{}); len(r.Unmatched) != 1 {
				t.Errorf("a deregistration notice passes the default filter: %+v", r)
			}
		}},
	}
	n := base
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			before := version()
			st.change(&n)
			upsert(n)
			if version() == before {
				t.Errorf("changing %s did not bump notice_keys_version", st.name)
			}
			st.check(t)
		})
	}
	// A newer notice becomes the latest.
	newer := base
	newer.SourceID, newer.PublishedAt = "S-2", "2026-11-03T01:00:00.000Z"
	upsert(newer)
	if r := screen(all); r.Matched[0].NoticeCount != 2 || r.Matched[0].LatestNotice.ID != notice.IDFor("S-2") {
		t.Errorf("after a newer notice: %+v", r.Matched[0])
	}
	// A register company's first notice, carrying its ABN only.
	beta := func() watch.ScreenResult {
		t.Helper()
		r, err := s.Screen(ctx, []ident.ID{{Value: "600000002", Kind: ident.ACN}, {Value: "43600000002", Kind: ident.ABN}}, all)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := beta(); r.Counts.Unmatched != 2 {
		t.Fatalf("Beta before its notice: %+v", r)
	}
	first := base
	betaABN := "43600000002"
	first.SourceID, first.ACN, first.ABN = "S-BETA", nil, &betaABN
	upsert(first)
	if r := beta(); r.Counts.Matched != 2 || *r.Matched[0].ACN != "600000002" || *r.Matched[1].CompanyName != "BETA TRADING PTY LTD" {
		t.Errorf("Beta after its first notice: %+v", r)
	}
	// A new register name.
	loadRegisterRows(t, s, []notice.RegisterRow{{CompanyName: "ALPHA RENAMED PTY LTD", ACN: acn, Type: "APTY",
		Status: "REGD", CurrentNameIndicator: "Y", ABN: "53" + acn}})
	if r := screen(all); *r.Matched[0].CompanyName != "ALPHA RENAMED PTY LTD" {
		t.Errorf("after a new register: name %q", *r.Matched[0].CompanyName)
	}
}

// TestScreenWithoutFields: when the index cannot code every value (more
// distinct values than codes), the screen reads them with SQL and stays
// exact.
func TestScreenWithoutFields(t *testing.T) {
	defer func(n int) { maxInterned = n }(maxInterned)
	maxInterned = 20
	s, ids := screenCorpus(t, 600)
	ctx := context.Background()
	snap, err := s.companies.current(ctx, s.read)
	if err != nil {
		t.Fatal(err)
	}
	if snap.fields {
		t.Fatalf("%d values fit %d codes; the test needs more", len(snap.values), maxInterned)
	}
	for _, f := range []notice.Filter{{IncludeDeregistration: true}, {State: []string{"NSW"}}} {
		mem, err := s.Screen(ctx, ids, f)
		if err != nil {
			t.Fatal(err)
		}
		viaSQL, err := s.screen(ctx, ids, f, screenSQL)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(mem, viaSQL) || mem.Counts.Matched == 0 {
			t.Errorf("%+v: without fields the screen differs from SQL or matches nothing:\n%s", f, screenDiff(mem, viaSQL))
		}
	}
}

func TestNoticeIDPacking(t *testing.T) {
	for _, c := range []struct {
		id   string
		pack bool
	}{
		{notice.IDFor("S-1"), true},
		{notice.IDFor("another"), true},
		{"custom-1", false},
		{"ntc_ABCDEFGHIJKLMNOP", false}, // upper case: not what IDFor makes
		{"ntc_abcdefghijklmno1", false}, // 1 is not base32
		{"ntc_abcdefghijklmnop", true},
		{"ntc_abcdefghijklmnopq", false},
	} {
		t.Run(c.id, func(t *testing.T) {
			var b [noticeIDBytes]byte
			if got := packNoticeID(b[:], []byte(c.id)); got != c.pack {
				t.Fatalf("packed %v, want %v", got, c.pack)
			}
			if !c.pack {
				return
			}
			snap := &companySnap{ids: b[:]}
			if got := string(snap.appendNoticeID([]byte("x"), 0)); got != "x"+c.id {
				t.Errorf("appended %q", got)
			}
		})
	}
}

func TestAppendACN(t *testing.T) {
	for _, c := range []struct {
		acn  uint32
		want string
	}{{0, "000000000"}, {4085616, "004085616"}, {999999999, "999999999"}} {
		if got := string(appendACN([]byte("#"), c.acn)); got != "#"+c.want {
			t.Errorf("appendACN(%d) = %q", c.acn, got)
		}
		if got := acnString(c.acn); got != c.want {
			t.Errorf("acnString(%d) = %q", c.acn, got)
		}
	}
}

// TestFullTextMatches: the notices the screen takes as matching a q are
// exactly those the full-text index returns.
func TestFullTextMatches(t *testing.T) {
	s, _ := screenCorpus(t, 600)
	ctx := context.Background()
	var maxSeq int64
	var lastName string
	if err := s.read.QueryRow("SELECT seq, company_name FROM notices ORDER BY seq DESC LIMIT 1").Scan(&maxSeq, &lastName); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"creditors", strings.Fields(lastName)[0], "liquidator -court", `"hereby given"`, "zzzznothing"} {
		t.Run(q, func(t *testing.T) {
			node, err := query.Parse(q)
			if err != nil {
				t.Fatal(err)
			}
			expr, _ := query.FTS5(node)
			rows, err := s.read.Query("SELECT rowid FROM notices_fts WHERE notices_fts MATCH ?", qMatch(expr))
			if err != nil {
				t.Fatal(err)
			}
			want := map[int64]bool{}
			for rows.Next() {
				var seq int64
				if err := rows.Scan(&seq); err != nil {
					t.Fatal(err)
				}
				want[seq] = true
			}
			rows.Close()
			tx, err := s.read.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			got, ok, err := fullTextMatches(ctx, tx, node, maxSeq)
			if err != nil || !ok {
				t.Fatalf("ok %v, err %v", ok, err)
			}
			for seq := int64(0); seq <= maxSeq; seq++ {
				if got.has(seq) != want[seq] {
					t.Errorf("notice %d: matched %v, want %v", seq, got.has(seq), want[seq])
				}
			}
			if q == strings.Fields(lastName)[0] && !got.has(maxSeq) {
				t.Errorf("the last notice (%q) does not match %q", lastName, q)
			}
		})
	}
	if _, ok, err := fullTextMatches(ctx, nil, mustParseQ(t, "-creditors"), maxSeq); ok || err != nil {
		t.Errorf("a q FTS5 cannot express: ok %v, err %v; want false, nil", ok, err)
	}
}

func mustParseQ(t *testing.T, q string) query.Node {
	t.Helper()
	n, err := query.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestScreenWhileNoticesArrive: screens running while notices arrive (the
// index merging them into arrays its older snapshots share) see each
// company's notice count only grow, and end with all of them. Run with
// -race, it also checks the sharing is free of data races.
func TestScreenWhileNoticesArrive(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	acn := "004085616"
	id, _ := ident.Normalise(acn)
	loadRegisterRows(t, s, []notice.RegisterRow{{CompanyName: "ALPHA MINING PTY LTD", ACN: acn, Type: "APTY",
		Status: "REGD", CurrentNameIndicator: "Y", ABN: "53" + acn}})
	const batches = 30
	done := make(chan error, 1)
	go func() {
		for i := 0; i < batches; i++ {
			n := notice.Notice{SourceID: fmt.Sprintf("S-%d", i), PublishedAt: fmt.Sprintf("2026-11-%02dT01:00:00.000Z", 1+i%28),
				ACN: &acn, NoticeType: fmt.Sprintf("Type %d", i), NoticePurpose: "Appointment", State: "NSW",
				Practitioners: []notice.Practitioner{}}
			if _, err := s.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	last := 0
	screen := func() int {
		t.Helper()
		res, err := s.Screen(ctx, []ident.ID{id}, notice.Filter{IncludeDeregistration: true, State: []string{"nsw"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Matched) == 0 {
			return 0
		}
		return res.Matched[0].NoticeCount
	}
	for writing := true; writing; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			writing = false
		default:
		}
		n := screen()
		if n < last {
			t.Fatalf("notice count went from %d to %d", last, n)
		}
		last = n
	}
	if n := screen(); n != batches {
		t.Errorf("after every notice arrived: count %d, want %d", n, batches)
	}
}

// TestFiltersMemoryAgreesWithSQL: /v1/filters with a q counted from the
// in-memory company index gives exactly what the SQL grouping gives, on the
// screen's awkward corpus (odd case, NULL appointment types, deregistration
// spellings).
func TestFiltersMemoryAgreesWithSQL(t *testing.T) {
	s, _ := screenCorpus(t, 4000)
	ctx := context.Background()
	if err := s.WarmCompanyIndex(ctx); err != nil {
		t.Fatal(err)
	}
	q := func(s string) query.Node { return mustParseQ(t, s) }
	for _, c := range []struct {
		name string
		f    notice.Filter
	}{
		{"common word", notice.Filter{Q: q("creditors")}},
		{"common word with deregistration", notice.Filter{Q: q("creditors"), IncludeDeregistration: true}},
		{"or, with states in odd case", notice.Filter{Q: q("creditors OR liquidator"), State: []string{"nsw", "Vic"}}},
		{"with purpose and dates", notice.Filter{Q: q("notice"), NoticePurpose: []string{"appointment"}, From: "2024-03-01", To: "2025-06-30"}},
		{"codes and status", notice.Filter{Q: q("creditors"), NoticeCode: []string{"lq", "DV"}, Status: []string{"in liquidation"}, IncludeDeregistration: true}},
		{"appointment type", notice.Filter{Q: q("creditors OR liquidator"), AppointmentType: []string{"court liquidation", "Receivership"}}},
		{"nothing matches", notice.Filter{Q: q("zzzzqqq")}},
		{"q FTS5 cannot express", notice.Filter{Q: q("-deregistered")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem, err := s.Filters(ctx, c.f)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { filtersMemory = true }()
			filtersMemory = false
			viaSQL, err := s.Filters(ctx, c.f)
			if err != nil {
				t.Fatal(err)
			}
			// Which spelling names a group of case variants is not
			// specified (the first seen); the counts must agree exactly.
			if fm, fs := foldCounts(mem), foldCounts(viaSQL); !reflect.DeepEqual(fm, fs) {
				t.Errorf("in memory %+v\nSQL       %+v", fm, fs)
			}
			if mem.Total == 0 && c.name != "nothing matches" {
				t.Errorf("nothing counted; the case proves nothing")
			}
		})
	}
}

// foldCounts lower-cases every value of fc (ASCII), keeping the order.
func foldCounts(fc notice.FilterCounts) notice.FilterCounts {
	for _, l := range [][]notice.ValueCount{fc.AppointmentType, fc.NoticePurpose, fc.NoticeCode, fc.State, fc.Status} {
		for i := range l {
			l[i].Value = strings.ToLower(l[i].Value)
		}
	}
	return fc
}

// TestSearchTotalMemoryAgreesWithSQL: a q search's total counted from the
// in-memory company index equals the SQL count, and the page is the same.
func TestSearchTotalMemoryAgreesWithSQL(t *testing.T) {
	s, _ := screenCorpus(t, 4000)
	ctx := context.Background()
	if err := s.WarmCompanyIndex(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q string
		f notice.Filter
	}{
		{"creditors", notice.Filter{State: []string{"nsw"}}},
		{"creditors OR liquidator", notice.Filter{NoticePurpose: []string{"appointment", "MEETING"}, From: "2024-03-01"}},
		{"notice", notice.Filter{IncludeDeregistration: true, Status: []string{"registered"}}},
		{"creditors", notice.Filter{AppointmentType: []string{"court liquidation"}, NoticeCode: []string{"lq"}}},
	} {
		t.Run(c.q, func(t *testing.T) {
			c.f.Q = mustParseQ(t, c.q)
			sq := notice.SearchQuery{Filter: c.f, Limit: 20, Page: 1}
			mem, err := s.Search(ctx, sq)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { filtersMemory = true }()
			filtersMemory = false
			viaSQL, err := s.Search(ctx, sq)
			if err != nil {
				t.Fatal(err)
			}
			if mem.Total != viaSQL.Total || mem.Total == 0 || !reflect.DeepEqual(mem.Notices, viaSQL.Notices) {
				t.Errorf("in memory total %d, SQL %d (pages equal: %v); want equal and non-zero",
					mem.Total, viaSQL.Total, reflect.DeepEqual(mem.Notices, viaSQL.Notices))
			}
		})
	}
}
