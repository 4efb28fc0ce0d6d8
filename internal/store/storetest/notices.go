package storetest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// RunNotices runs the notice contract against backends made by open, which
// must return a fresh, empty backend each call.
func RunNotices(t *testing.T, open func(t *testing.T) Backend) {
	t.Run("Upsert", func(t *testing.T) { testUpsert(t, open(t)) })
	t.Run("Register", func(t *testing.T) { testRegister(t, open(t)) })
	t.Run("Empty", func(t *testing.T) { testEmpty(t, open(t)) })
	t.Run("Relevance", func(t *testing.T) { testRelevance(t, open(t)) })
	t.Run("Spellings", func(t *testing.T) { testSpellings(t, open(t)) })
	t.Run("Names", func(t *testing.T) { testNames(t, open(t)) })

	b := open(t)
	Load(t, b)
	t.Run("Notice", func(t *testing.T) { testNotice(t, b) })
	t.Run("Search", func(t *testing.T) { testSearch(t, b) })
	t.Run("Paging", func(t *testing.T) { testPaging(t, b) })
	t.Run("Q", func(t *testing.T) { testQ(t, b) })
	t.Run("Company", func(t *testing.T) { testCompany(t, b) })
	t.Run("Filters", func(t *testing.T) { testFilters(t, b) })
	t.Run("Stats", func(t *testing.T) { testStats(t, b) })
	t.Run("IndexStatus", func(t *testing.T) { testIndexStatus(t, b) })
}

func sourceIDs(ns []notice.Notice) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.SourceID
	}
	return out
}

func str(s string) *string { return &s }

func id(s string) *ident.ID {
	v, ok := ident.Normalise(s)
	if !ok {
		panic("storetest: bad identifier " + s)
	}
	return &v
}

func testUpsert(t *testing.T, b Backend) {
	ctx := context.Background()
	ns := Notices(t)
	first := ns[:3]
	res, err := b.Writer.UpsertNotices(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 3 || res.Updated != 0 {
		t.Fatalf("first batch: got %+v, want 3 inserted 0 updated", res)
	}
	before := map[string]notice.Notice{}
	for _, n := range first {
		got, err := b.Notices.Notice(ctx, n.ID)
		if err != nil {
			t.Fatalf("notice %s after insert: %v", n.SourceID, err)
		}
		if got.CollectedAt != notice.Timestamp(Start) {
			t.Errorf("%s collected_at = %q, want the clock's now %q", n.SourceID, got.CollectedAt, notice.Timestamp(Start))
		}
		before[n.SourceID] = got
	}
	t.Run("seq strictly increasing in arrival order", func(t *testing.T) {
		a, b2, c := before["S-001"].Seq, before["S-002"].Seq, before["S-003"].Seq
		if !(a > 0 && a < b2 && b2 < c) {
			t.Errorf("seqs %d, %d, %d are not strictly increasing", a, b2, c)
		}
	})

	b.Clock.Advance(time.Hour)
	changed := append([]notice.Notice(nil), first...)
	changed[0].Text = "Rewritten body mentioning zeppelins."
	changed[0].State = "VIC"
	// A known source_id twice, a new one twice: one insert, three updates.
	batch := []notice.Notice{changed[0], ns[3], changed[1], ns[3]}
	res, err = b.Writer.UpsertNotices(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 1 || res.Updated != 3 {
		t.Fatalf("second batch: got %+v, want 1 inserted 3 updated", res)
	}
	t.Run("update keeps id, seq and collected_at", func(t *testing.T) {
		for _, sid := range []string{"S-001", "S-002"} {
			old := before[sid]
			got, err := b.Notices.Notice(ctx, old.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != old.ID || got.Seq != old.Seq || got.CollectedAt != old.CollectedAt {
				t.Errorf("%s: id/seq/collected_at changed from %s/%d/%s to %s/%d/%s", sid,
					old.ID, old.Seq, old.CollectedAt, got.ID, got.Seq, got.CollectedAt)
			}
		}
		got, _ := b.Notices.Notice(ctx, before["S-001"].ID)
		if got.Text != changed[0].Text || got.State != "VIC" {
			t.Errorf("S-001 not updated in place: text %q state %q", got.Text, got.State)
		}
	})
	t.Run("new notice after updates gets a higher seq and the new time", func(t *testing.T) {
		got, err := b.Notices.Notice(ctx, ns[3].ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Seq <= before["S-003"].Seq {
			t.Errorf("S-004 seq %d not above S-003's %d", got.Seq, before["S-003"].Seq)
		}
		if want := notice.Timestamp(Start.Add(time.Hour)); got.CollectedAt != want {
			t.Errorf("S-004 collected_at %q, want %q", got.CollectedAt, want)
		}
	})
	t.Run("full-text index follows the update", func(t *testing.T) {
		for _, c := range []struct {
			word string
			want []string
		}{{"zeppelins", []string{"S-001"}}, {"federal", []string{}}} {
			page, err := b.Notices.Search(ctx, notice.SearchQuery{Filter: notice.Filter{Q: query.Term{Text: c.word}},
				Sort: notice.SortRelevance, Limit: 20, Page: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got := sourceIDs(page.Notices); !reflect.DeepEqual(got, c.want) {
				t.Errorf("q=%s: got %v, want %v", c.word, got, c.want)
			}
		}
	})
	t.Run("re-upsert of an identical batch updates only", func(t *testing.T) {
		res, err := b.Writer.UpsertNotices(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		if res.Inserted != 0 || res.Updated != 4 {
			t.Errorf("got %+v, want 0 inserted 4 updated", res)
		}
		st, err := b.Notices.IndexStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Notices != 4 {
			t.Errorf("%d notices stored, want 4", st.Notices)
		}
	})
	// Both backends number new notices consecutively: an update takes no
	// notice_seq, wherever it falls in the batch (SQLite's AUTOINCREMENT
	// spends one on every INSERT that turns into an update).
	t.Run("updates use up no notice_seq", func(t *testing.T) {
		s3, s4 := before["S-003"].Seq, seqOf(t, b, ns[3].ID)
		if s4 != s3+1 {
			t.Errorf("S-004 (new, after an update in its batch) has seq %d; want %d, next after S-003", s4, s3+1)
		}
		res, err := b.Writer.UpsertNotices(ctx, []notice.Notice{changed[1], ns[4], changed[0], ns[5], ns[3]})
		if err != nil {
			t.Fatal(err)
		}
		if res.Inserted != 2 || res.Updated != 3 {
			t.Fatalf("got %+v, want 2 inserted 3 updated", res)
		}
		if s5, s6 := seqOf(t, b, ns[4].ID), seqOf(t, b, ns[5].ID); s5 != s4+1 || s6 != s4+2 {
			t.Errorf("S-005 and S-006 (new, between updates) have seqs %d and %d; want %d and %d", s5, s6, s4+1, s4+2)
		}
		st, err := b.Notices.IndexStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.LatestNoticeSeq != s4+2 {
			t.Errorf("latest notice_seq %d; want %d", st.LatestNoticeSeq, s4+2)
		}
	})
	t.Run("empty batch", func(t *testing.T) {
		res, err := b.Writer.UpsertNotices(ctx, nil)
		if err != nil || res.Inserted != 0 || res.Updated != 0 {
			t.Errorf("got %+v, %v; want nothing done", res, err)
		}
	})
}

// seqOf is the stored notice_seq of notice id.
func seqOf(t *testing.T, b Backend, id string) int64 {
	t.Helper()
	n, err := b.Notices.Notice(context.Background(), id)
	if err != nil {
		t.Fatalf("notice %s: %v", id, err)
	}
	return n.Seq
}

func testRegister(t *testing.T, b Backend) {
	ctx := context.Background()
	LoadRegister(t, b, RegisterRows())
	delta := *id(ACNDelta)
	if _, err := b.Notices.Company(ctx, delta); err != nil {
		t.Fatalf("Delta after first load: %v", err)
	}
	t.Run("old register visible until commit, rollback keeps it", func(t *testing.T) {
		l, err := b.Register.BeginRegister(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Add(ctx, RegisterRows()[:1]); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Notices.Company(ctx, delta); err != nil {
			t.Errorf("Delta during a load: %v, want the old register", err)
		}
		if err := l.Rollback(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Notices.Company(ctx, delta); err != nil {
			t.Errorf("Delta after rollback: %v, want the old register", err)
		}
	})
	t.Run("commit replaces the whole register", func(t *testing.T) {
		l, err := b.Register.BeginRegister(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Add(ctx, RegisterRows()[:1]); err != nil {
			t.Fatal(err)
		}
		if err := l.Add(ctx, RegisterRows()[2:3]); err != nil {
			t.Fatal(err)
		}
		if err := l.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Notices.Company(ctx, delta); !errs.Is(err, errs.NotFound) {
			t.Errorf("Delta after a register without it: %v, want not_found", err)
		}
		c, err := b.Notices.Company(ctx, *id(ABNAlpha))
		if err != nil {
			t.Fatal(err)
		}
		if c.Name == nil || *c.Name != "ALPHA MINING PTY LTD" || c.Register == nil ||
			!reflect.DeepEqual(c.Register.FormerNames, []string{"ALPHA EXPLORATION PTY LTD"}) {
			t.Errorf("Alpha after reload: %+v", c)
		}
	})
}

// testRelevance: notices of identical text score alike however the
// backend spreads them (Elasticsearch's shards each hold their own term
// statistics), so a relevance order puts them in notice_seq descending
// order, as ties. The other notices make the share of matches differ from
// one part of an index to another.
func testRelevance(t *testing.T, b Backend) {
	ctx := context.Background()
	var ns []notice.Notice
	var want []string
	for i := range 60 {
		n := AlphaNotice(fmt.Sprintf("R-%03d", i), Start.Add(time.Duration(i)*time.Minute))
		if i%5 == 0 {
			n.CompanyName = "QUOKKA HOLDINGS PTY LTD"
			want = append([]string{n.SourceID}, want...)
		} else {
			n.CompanyName = fmt.Sprintf("FILLER %d TRADING PTY LTD", i)
		}
		ns = append(ns, n)
	}
	if _, err := b.Writer.UpsertNotices(ctx, ns); err != nil {
		t.Fatal(err)
	}
	page, err := b.Notices.Search(ctx, notice.SearchQuery{Filter: notice.Filter{Q: query.Term{Text: "quokka"}},
		Sort: notice.SortRelevance, Limit: 20, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := sourceIDs(page.Notices); !reflect.DeepEqual(got, want) {
		t.Errorf("q=quokka by relevance: got %v, want the identical notices newest first %v", got, want)
	}
}

func testEmpty(t *testing.T, b Backend) {
	ctx := context.Background()
	page, err := b.Notices.Search(ctx, notice.SearchQuery{Sort: notice.SortPublishedDesc, Limit: 20, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 0 || len(page.Notices) != 0 {
		t.Errorf("empty search: %+v", page)
	}
	st, err := b.Notices.IndexStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Notices != 0 || st.LatestNoticeSeq != 0 || st.LatestPublishedDate != nil {
		t.Errorf("empty index status: %+v", st)
	}
	fc, err := b.Notices.Filters(ctx, notice.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if fc.Total != 0 || len(fc.State) != 0 {
		t.Errorf("empty filters: %+v", fc)
	}
}

func testNotice(t *testing.T, b Backend) {
	ctx := context.Background()
	want := Notices(t)[0]
	got, err := b.Notices.Notice(ctx, want.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq <= 0 || got.CollectedAt == "" {
		t.Errorf("seq %d collected_at %q not assigned", got.Seq, got.CollectedAt)
	}
	want.Seq, want.CollectedAt = got.Seq, got.CollectedAt
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if got.PublishedDate != "2026-03-02" {
		t.Errorf("published_date %q, want the Sydney date 2026-03-02", got.PublishedDate)
	}
	empty, err := b.Notices.Notice(ctx, Notices(t)[2].ID)
	if err != nil {
		t.Fatal(err)
	}
	if empty.Practitioners == nil || empty.AppointmentType != nil || empty.SourceURL != nil {
		t.Errorf("S-003: practitioners %v (want empty, not nil), appointment_type %v and source_url %v (want nil)",
			empty.Practitioners, empty.AppointmentType, empty.SourceURL)
	}
	if _, err := b.Notices.Notice(ctx, "ntc_doesnotexist0000"); !errs.Is(err, errs.NotFound) {
		t.Errorf("unknown id: %v, want not_found", err)
	}
}

func testSearch(t *testing.T, b Backend) {
	desc, asc := notice.SortPublishedDesc, notice.SortPublishedAsc
	for _, c := range []struct {
		name string
		f    notice.Filter
		sort string
		want []string
	}{
		{"default excludes deregistration, newest first, ties seq desc", notice.Filter{}, desc,
			[]string{"S-008", "S-002", "S-001", "S-005", "S-004", "S-007"}},
		{"published_asc, ties still seq desc", notice.Filter{}, asc,
			[]string{"S-007", "S-005", "S-004", "S-001", "S-002", "S-008"}},
		{"relevance without q is published_desc", notice.Filter{}, notice.SortRelevance,
			[]string{"S-008", "S-002", "S-001", "S-005", "S-004", "S-007"}},
		{"include_deregistration (purpose in any case)", notice.Filter{IncludeDeregistration: true}, desc,
			[]string{"S-006", "S-008", "S-003", "S-002", "S-001", "S-005", "S-004", "S-007"}},
		{"state case-insensitive", notice.Filter{State: []string{"nsw"}}, desc, []string{"S-002", "S-001"}},
		{"state several values", notice.Filter{State: []string{"NSW", "qld"}}, desc,
			[]string{"S-002", "S-001", "S-005", "S-004"}},
		{"absent value matches nothing", notice.Filter{State: []string{"XX"}}, desc, []string{}},
		{"notice_purpose", notice.Filter{NoticePurpose: []string{"APPOINTMENT"}}, desc, []string{"S-008", "S-001", "S-007"}},
		{"notice_purpose deregistration needs include_deregistration", notice.Filter{NoticePurpose: []string{"deregistration"}}, desc, []string{}},
		{"notice_purpose deregistration included", notice.Filter{NoticePurpose: []string{"deregistration"}, IncludeDeregistration: true}, desc,
			[]string{"S-006", "S-003"}},
		{"appointment_type", notice.Filter{AppointmentType: []string{"creditors' voluntary liquidation"}}, desc,
			[]string{"S-002", "S-005", "S-004"}},
		{"notice_code", notice.Filter{NoticeCode: []string{"lq"}}, desc, []string{"S-008", "S-001"}},
		{"status", notice.Filter{Status: []string{"IN LIQUIDATION"}}, desc, []string{"S-008", "S-002", "S-001", "S-005", "S-004"}},
		{"filters combine", notice.Filter{State: []string{"NSW", "TAS"}, NoticeCode: []string{"LQ"}}, desc, []string{"S-008", "S-001"}},
		{"from/to inclusive on the Sydney date (both sides of midnight)", notice.Filter{From: "2026-03-02", To: "2026-03-02", IncludeDeregistration: true}, desc,
			[]string{"S-002", "S-001"}},
		{"from only", notice.Filter{From: "2026-03-03", IncludeDeregistration: true}, desc, []string{"S-006", "S-008", "S-003"}},
		{"to only", notice.Filter{To: "2026-02-10"}, desc, []string{"S-005", "S-004", "S-007"}},
		// The last days of year 9999: no whole month follows them, and
		// the count must not fall back to every month.
		{"from in the last month of 9999", notice.Filter{From: "9999-12-02", IncludeDeregistration: true}, desc, []string{}},
		{"from on the last day of 9999", notice.Filter{From: "9999-12-31"}, desc, []string{}},
		{"to on the first day of year 1", notice.Filter{To: "0001-01-01", IncludeDeregistration: true}, desc, []string{}},
		{"company by ACN includes notices carrying its ABN", notice.Filter{Company: id(ACNAlpha)}, desc, []string{"S-002", "S-001"}},
		{"company by ABN includes notices carrying its ACN", notice.Filter{Company: id(ABNAlpha), IncludeDeregistration: true}, desc,
			[]string{"S-006", "S-002", "S-001"}},
		{"company by ACN not resolvable without register", notice.Filter{Company: id(ACNGamma)}, desc, []string{}},
		{"company by ABN on the notice", notice.Filter{Company: id(ABNGamma)}, desc, []string{"S-007"}},
		{"company with bad check digit", notice.Filter{Company: id(ACNBadCheck)}, desc, []string{"S-008"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			page, err := b.Notices.Search(context.Background(), notice.SearchQuery{Filter: c.f, Sort: c.sort, Limit: 100, Page: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got := sourceIDs(page.Notices); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
			if page.Total != int64(len(c.want)) {
				t.Errorf("total %d, want %d", page.Total, len(c.want))
			}
		})
	}
}

func testPaging(t *testing.T, b Backend) {
	all := []string{"S-006", "S-008", "S-003", "S-002", "S-001", "S-005", "S-004", "S-007"}
	for _, c := range []struct {
		limit, page int
		want        []string
	}{
		{3, 1, all[0:3]}, {3, 2, all[3:6]}, {3, 3, all[6:8]}, {3, 4, []string{}}, {8, 1, all}, {1, 8, all[7:8]}, {4, 2, all[4:8]},
	} {
		page, err := b.Notices.Search(context.Background(), notice.SearchQuery{
			Filter: notice.Filter{IncludeDeregistration: true}, Sort: notice.SortPublishedDesc, Limit: c.limit, Page: c.page})
		if err != nil {
			t.Fatal(err)
		}
		if got := sourceIDs(page.Notices); !reflect.DeepEqual(got, c.want) || page.Total != 8 {
			t.Errorf("limit %d page %d: got %v total %d, want %v total 8", c.limit, c.page, got, page.Total, c.want)
		}
	}
}

func testQ(t *testing.T, b Backend) {
	term := func(s string) query.Term { return query.Term{Text: s} }
	for _, c := range []struct {
		name string
		q    query.Node
		f    notice.Filter
		want []string // as a set
	}{
		{"word in notice_type and text", term("liquidator"), notice.Filter{}, []string{"S-001", "S-008"}},
		{"word in company name, case folded", term("alpha"), notice.Filter{}, []string{"S-001", "S-002"}},
		{"word in company name with deregistration", term("alpha"), notice.Filter{IncludeDeregistration: true}, []string{"S-001", "S-002", "S-006"}},
		{"diacritics folded in company name", term("cafe"), notice.Filter{}, []string{"S-004", "S-005"}},
		{"diacritics folded in query", term("société"), notice.Filter{}, []string{"S-004", "S-005"}},
		{"practitioner name", term("zoe"), notice.Filter{}, []string{"S-004", "S-005"}},
		{"practitioner firm", term("wong"), notice.Filter{}, []string{"S-007"}},
		{"practitioner role is not searched", term("administrator"), notice.Filter{}, []string{"S-007"}},
		{"phrase", query.Phrase{Words: []string{"federal", "court"}}, notice.Filter{}, []string{"S-001"}},
		{"phrase order matters", query.Phrase{Words: []string{"court", "federal"}}, notice.Filter{}, []string{}},
		{"prefix", query.Term{Text: "liquid", Prefix: true}, notice.Filter{}, []string{"S-001", "S-008"}},
		{"prefix on a whole word", query.Term{Text: "administrat", Prefix: true}, notice.Filter{}, []string{"S-007"}},
		{"implicit and", query.And{Children: []query.Node{term("creditors"), term("meeting")}}, notice.Filter{}, []string{"S-002", "S-007"}},
		{"or", query.Or{Children: []query.Node{term("federal"), term("video")}}, notice.Filter{}, []string{"S-001", "S-002"}},
		{"and not", query.And{Children: []query.Node{term("creditors"), query.Not{Child: term("proofs")}}}, notice.Filter{}, []string{"S-002", "S-007"}},
		{"not alone", query.Not{Child: term("creditors")}, notice.Filter{}, []string{"S-004", "S-005", "S-008"}},
		{"nested", query.And{Children: []query.Node{
			query.Or{Children: []query.Node{term("dividend"), term("members")}},
			query.Not{Child: term("solvent")}}}, notice.Filter{}, []string{"S-004", "S-005"}},
		{"q with filters", term("creditors"), notice.Filter{State: []string{"wa"}}, []string{"S-007"}},
		{"q with company", term("meeting"), notice.Filter{Company: id(ACNAlpha)}, []string{"S-002"}},
		{"q with dates", term("creditors"), notice.Filter{From: "2026-03-01"}, []string{"S-001", "S-002"}},
		{"no match", term("zzzz"), notice.Filter{}, []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.f
			f.Q = c.q
			for _, sortKey := range []string{notice.SortRelevance, notice.SortPublishedDesc} {
				page, err := b.Notices.Search(context.Background(), notice.SearchQuery{Filter: f, Sort: sortKey, Limit: 100, Page: 1})
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]bool{}
				for _, id := range sourceIDs(page.Notices) {
					got[id] = true
				}
				want := map[string]bool{}
				for _, id := range c.want {
					want[id] = true
				}
				if !reflect.DeepEqual(got, want) || len(page.Notices) != len(c.want) || page.Total != int64(len(c.want)) {
					t.Errorf("sort %s: got %v total %d, want %v", sortKey, sourceIDs(page.Notices), page.Total, c.want)
				}
			}
		})
	}
	t.Run("relevance ties break on seq desc", func(t *testing.T) {
		page, err := b.Notices.Search(context.Background(), notice.SearchQuery{Filter: notice.Filter{Q: term("dividend")},
			Sort: notice.SortRelevance, Limit: 10, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := sourceIDs(page.Notices); !reflect.DeepEqual(got, []string{"S-005", "S-004"}) {
			t.Errorf("got %v, want [S-005 S-004]", got)
		}
	})
	t.Run("published_asc with q", func(t *testing.T) {
		page, err := b.Notices.Search(context.Background(), notice.SearchQuery{Filter: notice.Filter{Q: term("creditors")},
			Sort: notice.SortPublishedAsc, Limit: 10, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := sourceIDs(page.Notices); !reflect.DeepEqual(got, []string{"S-007", "S-001", "S-002"}) {
			t.Errorf("got %v, want [S-007 S-001 S-002]", got)
		}
	})
}

func testCompany(t *testing.T, b Backend) {
	ctx := context.Background()
	type want struct {
		acn, abn, name *string
		register       bool
		former         []string
		notices        []string
	}
	for _, c := range []struct {
		name string
		id   string
		want want
	}{
		{"ACN in register, notices by ACN and ABN, deregistration included", ACNAlpha,
			want{str(ACNAlpha), str(ABNAlpha), str("ALPHA MINING PTY LTD"), true, []string{"ALPHA EXPLORATION PTY LTD"}, []string{"S-006", "S-002", "S-001"}}},
		{"ABN resolves to the ACN through the register", ABNAlpha,
			want{str(ACNAlpha), str(ABNAlpha), str("ALPHA MINING PTY LTD"), true, []string{"ALPHA EXPLORATION PTY LTD"}, []string{"S-006", "S-002", "S-001"}}},
		{"register only: notice_count 0", ACNDelta,
			want{str(ACNDelta), str(ABNDelta), str("DELTA SERVICES PTY LTD"), true, []string{}, []string{}}},
		{"register only by ABN", ABNDelta,
			want{str(ACNDelta), str(ABNDelta), str("DELTA SERVICES PTY LTD"), true, []string{}, []string{}}},
		{"register without ABN", ACNCafe,
			want{str(ACNCafe), nil, str("CAFÉ SOCIÉTÉ PTY LTD"), true, []string{}, []string{"S-005", "S-004"}}},
		{"notices only, ABN from the notice", ACNBeta,
			want{str(ACNBeta), str(ABNBeta), str("BETA TRADING PTY LTD"), false, nil, []string{"S-003"}}},
		{"notices only by ABN, ACN from the notice", ABNBeta,
			want{str(ACNBeta), str(ABNBeta), str("BETA TRADING PTY LTD"), false, nil, []string{"S-003"}}},
		{"ABN-only notice", ABNGamma,
			want{nil, str(ABNGamma), str("GAMMA HOLDINGS PTY LTD"), false, nil, []string{"S-007"}}},
		{"bad check digit looked up like any other", ACNBadCheck,
			want{str(ACNBadCheck), nil, str("EPSILON PTY LTD"), false, nil, []string{"S-008"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := b.Notices.Company(ctx, *id(c.id))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.ACN, c.want.acn) || !reflect.DeepEqual(got.ABN, c.want.abn) || !reflect.DeepEqual(got.Name, c.want.name) {
				t.Errorf("acn/abn/name = %v/%v/%v, want %v/%v/%v", deref(got.ACN), deref(got.ABN), deref(got.Name),
					deref(c.want.acn), deref(c.want.abn), deref(c.want.name))
			}
			if (got.Register != nil) != c.want.register {
				t.Fatalf("register = %+v, want present %v", got.Register, c.want.register)
			}
			if got.Register != nil && !reflect.DeepEqual(got.Register.FormerNames, c.want.former) {
				t.Errorf("former_names %q, want %q", got.Register.FormerNames, c.want.former)
			}
			if ids := sourceIDs(got.Notices); !reflect.DeepEqual(ids, c.want.notices) || got.NoticeCount != len(c.want.notices) {
				t.Errorf("notices %v count %d, want %v", ids, got.NoticeCount, c.want.notices)
			}
			if got.Notices == nil {
				t.Error("notices is nil, want an empty list")
			}
		})
	}
	t.Run("register block from the current-name row", func(t *testing.T) {
		got, err := b.Notices.Company(ctx, *id(ACNAlpha))
		if err != nil {
			t.Fatal(err)
		}
		r := got.Register
		if r.Name != "ALPHA MINING PTY LTD" || r.Status != "EXAD" || r.Type != "APTY" || r.Class != "LMSH" || r.SubClass != "PROP" ||
			deref(r.RegisteredOn) != "1990-05-01" || r.DeregisteredOn != nil || r.CurrentName != nil {
			t.Errorf("register block %+v", *r)
		}
		d, _ := b.Notices.Company(ctx, *id(ACNDelta))
		if deref(d.Register.PreviousState) != "VIC" || deref(d.Register.StateRegistrationNumber) != "C0012345" {
			t.Errorf("Delta register block %+v", *d.Register)
		}
	})
	for _, unknown := range []string{ACNGamma, "999999999", "99999999999"} {
		t.Run("not found "+unknown, func(t *testing.T) {
			_, err := b.Notices.Company(ctx, *id(unknown))
			if !errs.Is(err, errs.NotFound) {
				t.Fatalf("got %v, want not_found", err)
			}
			if !strings.Contains(err.Error(), unknown) {
				t.Errorf("message %q does not name %s", err, unknown)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func testFilters(t *testing.T, b Backend) {
	ctx := context.Background()
	vc := func(pairs ...any) []notice.ValueCount {
		out := []notice.ValueCount{}
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, notice.ValueCount{Value: pairs[i].(string), Count: int64(pairs[i+1].(int))})
		}
		return out
	}
	got, err := b.Notices.Filters(ctx, notice.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != 6 {
		t.Errorf("total %d, want 6", got.Total)
	}
	if want := vc("Creditors' Voluntary Liquidation", 3, "Court Liquidation", 1, "Members' Voluntary Liquidation", 1, "Voluntary Administration", 1); !reflect.DeepEqual(got.AppointmentType, want) {
		t.Errorf("appointment_type %v, want %v", got.AppointmentType, want)
	}
	if want := vc("Appointment", 3, "Dividend", 2, "meeting", 1); !reflect.DeepEqual(got.NoticePurpose, want) {
		t.Errorf("notice_purpose %v, want %v", got.NoticePurpose, want)
	}
	if want := vc("DV", 2, "LQ", 2, "MC", 1, "VA", 1); !reflect.DeepEqual(got.NoticeCode, want) {
		t.Errorf("notice_code %v, want %v", got.NoticeCode, want)
	}
	// NSW and nsw are one value; which spelling is shown is not specified.
	if len(got.State) != 4 || !strings.EqualFold(got.State[0].Value, "NSW") || got.State[0].Count != 2 ||
		!reflect.DeepEqual(got.State[1:], vc("QLD", 2, "TAS", 1, "WA", 1)) {
		t.Errorf("state %v, want NSW 2, QLD 2, TAS 1, WA 1", got.State)
	}
	if len(got.Status) != 2 || !strings.EqualFold(got.Status[0].Value, "In Liquidation") || got.Status[0].Count != 5 ||
		!reflect.DeepEqual(got.Status[1:], vc("Under Administration", 1)) {
		t.Errorf("status %v, want In Liquidation 5, Under Administration 1", got.Status)
	}

	withDereg, err := b.Notices.Filters(ctx, notice.Filter{IncludeDeregistration: true, State: []string{"nsw"}})
	if err != nil {
		t.Fatal(err)
	}
	if withDereg.Total != 3 || len(withDereg.NoticePurpose) != 3 || withDereg.NoticePurpose[0].Count != 1 {
		t.Errorf("NSW with deregistration: %+v, want total 3 over 3 purposes", withDereg)
	}
	late, err := b.Notices.Filters(ctx, notice.Filter{From: "9999-12-31", IncludeDeregistration: true})
	if err != nil {
		t.Fatal(err)
	}
	if late.Total != 0 || len(late.State) != 0 || len(late.NoticePurpose) != 0 {
		t.Errorf("from 9999-12-31: %+v, want total 0 and no values", late)
	}
	withQ, err := b.Notices.Filters(ctx, notice.Filter{Q: query.Term{Text: "creditors"}})
	if err != nil {
		t.Fatal(err)
	}
	if withQ.Total != 3 || len(withQ.State) != 2 || !strings.EqualFold(withQ.State[0].Value, "NSW") || withQ.State[0].Count != 2 ||
		!reflect.DeepEqual(withQ.State[1:], vc("WA", 1)) {
		t.Errorf("q=creditors: %+v, want total 3, state NSW 2 WA 1", withQ)
	}
}

func testStats(t *testing.T, b Backend) {
	ctx := context.Background()
	asMap := func(s notice.Stats) map[string]int64 {
		m := map[string]int64{}
		for _, bk := range s.Data {
			m[bk.Key] += bk.Count
		}
		return m
	}
	for _, c := range []struct {
		name  string
		q     notice.StatsQuery
		total int64
		want  map[string]int64
	}{
		{"month", notice.StatsQuery{GroupBy: "month"}, 6, map[string]int64{"2026-01": 1, "2026-02": 2, "2026-03": 3}},
		{"month with deregistration", notice.StatsQuery{GroupBy: "month", Filter: notice.Filter{IncludeDeregistration: true}}, 8,
			map[string]int64{"2026-01": 1, "2026-02": 2, "2026-03": 4, "2026-04": 1}},
		{"month within dates", notice.StatsQuery{GroupBy: "month", Filter: notice.Filter{From: "2026-02-01", To: "2026-03-02"}}, 4,
			map[string]int64{"2026-02": 2, "2026-03": 2}},
		{"notice_purpose", notice.StatsQuery{GroupBy: "notice_purpose"}, 6, map[string]int64{"Appointment": 3, "Dividend": 2, "meeting": 1}},
		{"notice_code with q", notice.StatsQuery{GroupBy: "notice_code", Filter: notice.Filter{Q: query.Term{Text: "creditors"}}}, 3,
			map[string]int64{"LQ": 1, "MC": 1, "VA": 1}},
		{"appointment_type leaves out notices without one", notice.StatsQuery{GroupBy: "appointment_type", Filter: notice.Filter{IncludeDeregistration: true, State: []string{"VIC"}}}, 1,
			map[string]int64{}},
		{"state", notice.StatsQuery{GroupBy: "state", Filter: notice.Filter{Company: id(ABNAlpha)}}, 2, nil},
		{"state from the last month of 9999", notice.StatsQuery{GroupBy: "state", Filter: notice.Filter{From: "9999-12-02", IncludeDeregistration: true}}, 0,
			map[string]int64{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := b.Notices.Stats(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if got.GroupBy != c.q.GroupBy || got.Total != c.total {
				t.Errorf("group_by %q total %d, want %q %d", got.GroupBy, got.Total, c.q.GroupBy, c.total)
			}
			if c.want != nil && !reflect.DeepEqual(asMap(got), c.want) {
				t.Errorf("buckets %v, want %v", got.Data, c.want)
			}
			if c.want == nil && (len(got.Data) != 1 || !strings.EqualFold(got.Data[0].Key, "NSW") || got.Data[0].Count != 2) {
				t.Errorf("buckets %v, want one NSW bucket of 2", got.Data)
			}
		})
	}
}

func testIndexStatus(t *testing.T, b Backend) {
	st, err := b.Notices.IndexStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	last, err := b.Notices.Notice(context.Background(), Notices(t)[7].ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Notices != 8 || st.LatestNoticeSeq != last.Seq || deref(st.LatestPublishedDate) != "2026-04-20" {
		t.Errorf("index status %d/%d/%s, want 8/%d/2026-04-20", st.Notices, st.LatestNoticeSeq, deref(st.LatestPublishedDate), last.Seq)
	}
}
