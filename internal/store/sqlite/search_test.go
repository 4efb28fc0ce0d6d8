package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/sample"
)

// The search paths of this backend (counts from notice_counts with partial
// months counted from the notices, full-text counts without the notices,
// probing in publication order, relevance from the full-text index alone)
// are checked here against a reference computed in Go from every notice,
// on a realistic sample large enough that every path is taken.

// sampleStore is a store loaded with a small realistic sample, and all its
// notices.
func sampleStore(t *testing.T) (*Store, []notice.Notice) {
	t.Helper()
	dir := t.TempDir()
	files, err := sample.WriteFiles(sample.Options{Notices: 3000, Companies: 3000, Seed: 7,
		Now: time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC), Years: 2}, filepath.Join(dir, "sample"))
	if err != nil {
		t.Fatal(err)
	}
	s := openTest(t)
	clear(refDocs)
	ctx := context.Background()
	if _, err := ingest.Notices(ctx, s, []string{files.Notices}, ingest.Options{BatchSize: 700}); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Register(ctx, s, files.Register, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	return s, allNotices(t, s)
}

func allNotices(t *testing.T, s *Store) []notice.Notice {
	t.Helper()
	tx, err := s.read.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	seqs, err := querySeqList(context.Background(), tx, "SELECT seq FROM notices ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	ns, err := noticesBySeq(context.Background(), tx, seqs)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// companyABNs are the register's ABNs of the ACN a reference filter names
// (the company filter also takes notices carrying only one of them).
var companyABNs = map[string]bool{}

// refDocs caches the tokenised text of the sample's notices by seq.
var refDocs = map[int64]*query.Doc{}

// refMatch is the reference filter, written from API.md.
func refMatch(f notice.Filter, n notice.Notice) bool {
	in := func(vals []string, v *string) bool {
		if len(vals) == 0 {
			return true
		}
		if v == nil {
			return false
		}
		for _, x := range vals {
			if strings.EqualFold(x, *v) {
				return true
			}
		}
		return false
	}
	if !f.IncludeDeregistration && strings.EqualFold(n.NoticePurpose, "deregistration") {
		return false
	}
	if !in(f.AppointmentType, n.AppointmentType) || !in(f.NoticePurpose, &n.NoticePurpose) ||
		!in(f.NoticeCode, &n.NoticeCode) || !in(f.State, &n.State) || !in(f.Status, &n.Status) {
		return false
	}
	if (f.From != "" && n.PublishedDate < f.From) || (f.To != "" && n.PublishedDate > f.To) {
		return false
	}
	if f.Company != nil {
		id := f.Company.Value
		if (n.ACN == nil || *n.ACN != id) && (n.ABN == nil || *n.ABN != id) &&
			!(f.Company.Kind == ident.ACN && n.ABN != nil && companyABNs[*n.ABN]) {
			return false
		}
	}
	if f.Q != nil {
		d := refDocs[n.Seq]
		if d == nil {
			d = query.NewDoc(n.CompanyName, n.NoticeType, n.Text, notice.PractitionerText(n.Practitioners))
			refDocs[n.Seq] = d
		}
		if !query.Match(f.Q, d) {
			return false
		}
	}
	return true
}

func refSearch(all []notice.Notice, f notice.Filter, sortKey string) []string {
	var out []notice.Notice
	for _, n := range all {
		if refMatch(f, n) {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.PublishedAt != b.PublishedAt {
			if sortKey == notice.SortPublishedAsc {
				return a.PublishedAt < b.PublishedAt
			}
			return a.PublishedAt > b.PublishedAt
		}
		return a.Seq > b.Seq
	})
	ids := make([]string, len(out))
	for i, n := range out {
		ids[i] = n.ID
	}
	return ids
}

func ids(ns []notice.Notice) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

func mustParse(t *testing.T, q string) query.Node {
	t.Helper()
	n, err := query.Parse(q)
	if err != nil {
		t.Fatalf("parse %q: %v", q, err)
	}
	return n
}

// referenceFilters are filters covering whole and partial months, ranges
// within one month, empty ranges, case variants, absent values and q of
// every shape (common and rare words, phrases, prefixes, negations).
func referenceFilters(t *testing.T, s *Store, all []notice.Notice) []notice.Filter {
	// A registered ACN with several notices, some carrying only its ABN.
	var acn string
	err := s.read.QueryRow(`SELECT n.acn FROM notices n JOIN register r ON r.acn = n.acn AND r.abn <> ''
		WHERE EXISTS (SELECT 1 FROM notices m WHERE m.abn = r.abn AND m.acn IS NULL)
		GROUP BY n.acn ORDER BY count(*) DESC, n.acn LIMIT 1`).Scan(&acn)
	if err != nil {
		t.Fatal(err)
	}
	clear(companyABNs)
	rows, err := s.read.Query("SELECT abn FROM register WHERE acn = ? AND abn <> ''", acn)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var abn string
		if err := rows.Scan(&abn); err != nil {
			t.Fatal(err)
		}
		companyABNs[abn] = true
	}
	rows.Close()
	type f = notice.Filter
	out := []notice.Filter{
		{}, {IncludeDeregistration: true},
		{State: []string{"nsw"}}, {State: []string{"VIC", "qld"}, IncludeDeregistration: true},
		{AppointmentType: []string{"court liquidation"}}, {AppointmentType: []string{""}}, {AppointmentType: []string{"", "Voluntary Administration"}},
		{NoticePurpose: []string{"Deregistration"}}, {NoticePurpose: []string{"deregistration"}, IncludeDeregistration: true},
		{NoticeCode: []string{"apl", "DIV"}}, {Status: []string{"In Liquidation"}, State: []string{"WA"}},
		{State: []string{"XX"}},
		{From: "2026-03-01", To: "2026-05-31"},                                             // whole months
		{From: "2026-03-15", To: "2026-05-10"},                                             // both edges partial
		{From: "2026-03-15", To: "2026-04-10", IncludeDeregistration: true},                // adjacent partial months
		{From: "2026-04-03", To: "2026-04-21", State: []string{"NSW"}},                     // within one month
		{From: "2026-04-01", To: "2026-04-30"},                                             // one whole month
		{From: "2026-02-01", To: "2026-02-28", IncludeDeregistration: true},                // February
		{From: "2026-06-01"}, {From: "2026-06-02"}, {To: "2026-01-31"}, {To: "2026-01-30"}, // open ends
		{From: "2026-05-10", To: "2026-05-09"}, // empty
		{From: "2026-01-15", NoticeCode: []string{"ADD"}, IncludeDeregistration: true},
		{Company: &ident.ID{Value: acn, Kind: ident.ACN}, IncludeDeregistration: true},
	}
	for _, q := range []string{"company", "creditors", "liquidator meeting", `"deed of company arrangement"`,
		"liquidat*", "plumbing OR electrical", "liquidator -members", "-deregistration", "-creditors -meeting", "creditors OR -company",
		"zzzzunknown", "bayside"} {
		n := mustParse(t, q)
		out = append(out, f{Q: n}, f{Q: n, IncludeDeregistration: true}, f{Q: n, State: []string{"nsw"}},
			f{Q: n, From: "2026-03-15", To: "2026-09-10"})
	}
	return out
}

func TestSearchAgainstReference(t *testing.T) {
	s, all := sampleStore(t)
	filters := referenceFilters(t, s, all)
	t.Run("default bounds", func(t *testing.T) { checkSearch(t, s, all, filters) })
	// Small bounds: the relevance window and the publication-order window
	// on most q filters.
	w, l := relevanceWindow, sortLimit
	relevanceWindow, sortLimit = 40, 30
	defer func() { relevanceWindow, sortLimit = w, l }()
	t.Run("small bounds", func(t *testing.T) { checkSearch(t, s, all, filters) })
}

func checkSearch(t *testing.T, s *Store, all []notice.Notice, filters []notice.Filter) {
	ctx := context.Background()
	for i, f := range filters {
		for _, sortKey := range []string{notice.SortPublishedDesc, notice.SortPublishedAsc, notice.SortRelevance} {
			want := refSearch(all, f, sortKey)
			name := fmt.Sprintf("%d %s %+v", i, sortKey, f)
			for _, pg := range []struct{ limit, page int }{{50, 1}, {7, 3}, {100, 40}} {
				got, err := s.Search(ctx, notice.SearchQuery{Filter: f, Sort: sortKey, Limit: pg.limit, Page: pg.page})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got.Total != int64(len(want)) {
					t.Errorf("%s: total %d, want %d", name, got.Total, len(want))
				}
				lo := min(len(want), (pg.page-1)*pg.limit)
				wantPage := want[lo:min(len(want), lo+pg.limit)]
				gotPage := ids(got.Notices)
				if sortKey == notice.SortRelevance && f.Q != nil {
					// Relevance: the page is some of the matches; the
					// order is bm25's. Check membership only.
					member := map[string]bool{}
					for _, id := range want {
						member[id] = true
					}
					for _, id := range gotPage {
						if !member[id] {
							t.Errorf("%s: %s is not a match", name, id)
						}
					}
					if len(gotPage) != len(wantPage) {
						t.Errorf("%s: page of %d, want %d", name, len(gotPage), len(wantPage))
					}
					continue
				}
				if !reflect.DeepEqual(gotPage, append([]string{}, wantPage...)) {
					t.Errorf("%s limit %d page %d:\n got %v\nwant %v", name, pg.limit, pg.page, gotPage, wantPage)
				}
			}
		}
		if f.Q != nil {
			checkRelevancePages(t, s, f, refSearch(all, f, notice.SortPublishedDesc))
		}
	}
}

// checkRelevancePages pages through a relevance search to its end: every
// match exactly once.
func checkRelevancePages(t *testing.T, s *Store, f notice.Filter, want []string) {
	t.Helper()
	seen := map[string]int{}
	const limit = 9
	for page := 1; ; page++ {
		got, err := s.Search(context.Background(), notice.SearchQuery{Filter: f, Sort: notice.SortRelevance, Limit: limit, Page: page})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids(got.Notices) {
			seen[id]++
		}
		if len(got.Notices) < limit {
			break
		}
	}
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("relevance pages of %+v: %s seen %d times, want once", f, id, seen[id])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("relevance pages of %+v: %d distinct notices, want %d", f, len(seen), len(want))
	}
}

// refCounts is the reference of Filters: per-field counts of the matches.
func refCounts(all []notice.Notice, f notice.Filter) notice.FilterCounts {
	counts := make([]map[string]int64, 5)
	for i := range counts {
		counts[i] = map[string]int64{}
	}
	var out notice.FilterCounts
	for _, n := range all {
		if !refMatch(f, n) {
			continue
		}
		out.Total++
		if n.AppointmentType != nil {
			counts[0][*n.AppointmentType]++
		}
		counts[1][n.NoticePurpose]++
		counts[2][n.NoticeCode]++
		counts[3][n.State]++
		counts[4][n.Status]++
	}
	out.AppointmentType = notice.SortedCounts(counts[0])
	out.NoticePurpose = notice.SortedCounts(counts[1])
	out.NoticeCode = notice.SortedCounts(counts[2])
	out.State = notice.SortedCounts(counts[3])
	out.Status = notice.SortedCounts(counts[4])
	return out
}

func refStats(all []notice.Notice, f notice.Filter, groupBy string) (int64, map[string]int64) {
	var total int64
	out := map[string]int64{}
	for _, n := range all {
		if !refMatch(f, n) {
			continue
		}
		total++
		switch groupBy {
		case "month":
			out[n.PublishedDate[:7]]++
		case "appointment_type":
			if n.AppointmentType != nil {
				out[*n.AppointmentType]++
			}
		case "notice_purpose":
			out[n.NoticePurpose]++
		case "notice_code":
			out[n.NoticeCode]++
		case "state":
			out[n.State]++
		}
	}
	if groupBy != "month" {
		out = notice.FoldSpellings(out)
	}
	return total, out
}

func TestFiltersAndStatsAgainstReference(t *testing.T) {
	s, all := sampleStore(t)
	ctx := context.Background()
	for i, f := range referenceFilters(t, s, all) {
		name := fmt.Sprintf("%d %+v", i, f)
		got, err := s.Filters(ctx, f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := refCounts(all, f); !reflect.DeepEqual(got, want) {
			t.Errorf("Filters %s:\n got %+v\nwant %+v", name, got, want)
		}
		for _, g := range notice.GroupByKeys {
			st, err := s.Stats(ctx, notice.StatsQuery{GroupBy: g, Filter: f})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			total, want := refStats(all, f, g)
			gotMap := map[string]int64{}
			for _, b := range st.Data {
				gotMap[b.Key] += b.Count
			}
			if st.Total != total || !reflect.DeepEqual(gotMap, want) {
				t.Errorf("Stats %s %s: got total %d %v, want %d %v", g, name, st.Total, gotMap, total, want)
			}
		}
	}
}

// TestNoticeCountsFollowWrites checks notice_counts against a recount of
// the notices after inserts, updates that move a notice between groups
// (down to a group's last notice) and deletes.
func TestNoticeCountsFollowWrites(t *testing.T) {
	s, all := sampleStore(t)
	ctx := context.Background()
	check := func(step string) {
		t.Helper()
		const recount = `SELECT substr(published_date, 1, 7), state, notice_purpose, notice_code,
			coalesce(appointment_type, ''), status, lower(notice_purpose) = 'deregistration', count(*)
			FROM notices GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6`
		const stored = `SELECT month, state, notice_purpose, notice_code, appointment_type, status, is_dereg, n
			FROM notice_counts ORDER BY 1, 2, 3, 4, 5, 6`
		dump := func(q string) string {
			rows, err := s.read.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var b strings.Builder
			for rows.Next() {
				v := make([]any, 8)
				p := make([]any, 8)
				for i := range v {
					p[i] = &v[i]
				}
				if err := rows.Scan(p...); err != nil {
					t.Fatal(err)
				}
				fmt.Fprintln(&b, v...)
			}
			return b.String()
		}
		if want, got := dump(recount), dump(stored); got != want {
			t.Fatalf("%s: notice_counts differ from a recount:\n got %s\nwant %s", step, got, want)
		}
	}
	check("after ingest")

	// Move notices between groups: change state, purpose (live <->
	// dereg), code, appointment type, status and month, including the only
	// notice of a new group, which then moves back out.
	changed := []notice.Notice{all[0], all[1], all[2], all[3]}
	changed[0].State = "TAS"
	changed[0].PublishedAt, changed[0].PublishedDate = "2020-01-15T01:00:00.000Z", "2020-01-15"
	changed[1].NoticePurpose = "Deregistration"
	changed[2].NoticePurpose, changed[2].NoticeCode = "Appointment", "ZZZ"
	appt := "Receiver and Manager"
	changed[3].AppointmentType, changed[3].Status = &appt, "Odd Status"
	if _, err := s.UpsertNotices(ctx, changed); err != nil {
		t.Fatal(err)
	}
	check("after updates")
	if _, err := s.UpsertNotices(ctx, all[:4]); err != nil {
		t.Fatal(err)
	}
	check("after moving back")
	if _, err := s.write.Exec("DELETE FROM notices WHERE seq % 3 = 0"); err != nil {
		t.Fatal(err)
	}
	check("after deletes")
	if got, err := s.Search(ctx, notice.SearchQuery{Filter: notice.Filter{IncludeDeregistration: true}, Sort: notice.SortPublishedDesc, Limit: 1, Page: 1}); err != nil {
		t.Fatal(err)
	} else if want := int64(len(all) - len(all)/3); got.Total != want {
		t.Errorf("total after deletes %d, want %d", got.Total, want)
	}
}

func TestSplitSpan(t *testing.T) {
	for _, c := range []struct {
		from, to string
		want     monthSpan
	}{
		{"", "", monthSpan{whole: true}},
		{"2026-03-01", "2026-05-31", monthSpan{whole: true, from: "2026-03", to: "2026-05"}},
		{"2026-03-02", "", monthSpan{whole: true, from: "2026-04", edges: [][2]string{{"2026-03-02", "2026-03-31"}}}},
		{"", "2026-02-27", monthSpan{whole: true, to: "2026-01", edges: [][2]string{{"2026-02-01", "2026-02-27"}}}},
		{"", "2028-02-29", monthSpan{whole: true, to: "2028-02"}},
		{"2026-03-15", "2026-04-10", monthSpan{edges: [][2]string{{"2026-03-15", "2026-03-31"}, {"2026-04-01", "2026-04-10"}}}},
		{"2026-03-15", "2026-03-20", monthSpan{edges: [][2]string{{"2026-03-15", "2026-03-20"}}}},
		{"2026-03-01", "2026-03-31", monthSpan{whole: true, from: "2026-03", to: "2026-03"}},
		{"2026-03-01", "2026-03-30", monthSpan{edges: [][2]string{{"2026-03-01", "2026-03-30"}}}},
		{"2026-12-31", "2027-01-01", monthSpan{edges: [][2]string{{"2026-12-31", "2026-12-31"}, {"2027-01-01", "2027-01-01"}}}},
		{"2026-03-02", "2026-03-01", monthSpan{empty: true}},
	} {
		got, ok := splitSpan(c.from, c.to)
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitSpan(%q, %q) = %+v, %v; want %+v", c.from, c.to, got, ok, c.want)
		}
	}
	if _, ok := splitSpan("2026-3-1", ""); ok {
		t.Error("splitSpan accepted a malformed date")
	}
}

// TestUpsertNamesTheFailingNotice checks that a batch failing inside a
// multi-row statement reports the notice it failed on and stores nothing.
func TestUpsertNamesTheFailingNotice(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	batch := make([]notice.Notice, 0, noticeChunk+5)
	for i := 0; i < cap(batch); i++ {
		batch = append(batch, notice.Notice{SourceID: fmt.Sprintf("F-%04d", i), PublishedAt: "2026-03-02T01:00:00.000Z",
			CompanyName: "FAIL TEST PTY LTD", NoticePurpose: "Appointment", State: "NSW"})
	}
	// Two source_ids with one public id break the id's uniqueness.
	batch[noticeChunk+3].ID = notice.IDFor(batch[noticeChunk+1].SourceID)
	_, err := s.UpsertNotices(ctx, batch)
	if err == nil || !strings.Contains(err.Error(), batch[noticeChunk+3].SourceID) {
		t.Fatalf("error %v does not name %s", err, batch[noticeChunk+3].SourceID)
	}
	st, err := s.IndexStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Notices != 0 {
		t.Errorf("%d notices stored by a failed batch, want 0", st.Notices)
	}
}

// TestFullTextIndexPerBatch: new notices are indexed once per batch (no
// insert trigger); a batch repeating a source_id (the second row updates
// the first) leaves the index consistent with the notices, and search sees
// the last text.
func TestFullTextIndexPerBatch(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	mk := func(src, text string) notice.Notice {
		return notice.Notice{SourceID: src, PublishedAt: "2026-11-20T01:00:00Z", CompanyName: "ALPHA PTY LTD",
			NoticeType: "Appointment of liquidator", NoticeCode: "APP", NoticePurpose: "Appointment", State: "NSW",
			Status: "In Liquidation", Text: text}
	}
	batches := [][]notice.Notice{
		{mk("A", "zebra first"), mk("B", "yak"), mk("A", "walrus second"), mk("C", "vole"), mk("C", "vole again")},
		{mk("B", "yak updated"), mk("D", "unicorn")},
	}
	for _, b := range batches {
		if _, err := s.UpsertNotices(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.write.ExecContext(ctx, "INSERT INTO notices_fts (notices_fts, rank) VALUES ('integrity-check', 1)"); err != nil {
		t.Fatalf("the full-text index disagrees with the notices: %v", err)
	}
	for q, want := range map[string]int64{"zebra": 0, "walrus": 1, "yak": 1, "updated": 1, "vole": 1, "again": 1, "unicorn": 1} {
		qq, err := query.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		page, err := s.Search(ctx, notice.SearchQuery{Filter: notice.Filter{Q: qq, IncludeDeregistration: true}, Limit: 10, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != want {
			t.Errorf("q=%s: %d notices, want %d", q, page.Total, want)
		}
	}
}
