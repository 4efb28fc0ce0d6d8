//go:build sqlite_fts5

package elastic

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/sample"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/sqlite"
)

// Size of the equivalence dataset and request set.
const (
	equivNotices  = 20000
	equivRegister = 20000
	equivRequests = 320
)

// TestEquivalence loads one generated dataset into the embedded store and
// this one and checks that generated requests (every filter, q forms alone
// and with filters, date ranges, every sort, deep pages) give the same ids
// in the same order (relevance: the same total, and the same set when it
// fits one page), the same totals, the same filter counts, the same stats
// series and the same company views.
func TestEquivalence(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 20,000 notices into both backends")
	}
	ctx := context.Background()
	files, err := sample.WriteFiles(sample.Options{Notices: equivNotices, Companies: equivRegister, Seed: 11,
		Now: time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC), Years: 3}, filepath.Join(t.TempDir(), "sample"))
	if err != nil {
		t.Fatal(err)
	}
	// One clock for both, so collected_at agrees too.
	clock := func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) }
	lite := openLite(t, sqlite.WithClock(clock))
	es := openTest(t, clock)
	for name, w := range map[string]interface {
		store.NoticeWriter
		store.RegisterWriter
	}{"sqlite": lite, "elastic": es} {
		if _, err := ingest.Notices(ctx, w, []string{files.Notices}, ingest.Options{}); err != nil {
			t.Fatalf("%s: ingest notices: %v", name, err)
		}
		if _, err := ingest.Register(ctx, w, files.Register, ingest.Options{}); err != nil {
			t.Fatalf("%s: ingest register: %v", name, err)
		}
	}

	// The regulator amends notices: batches that mix amended notices (every
	// 97th, text changed, some values in another case) with new ones. An amended notice keeps its
	// notice_seq and takes none, so both backends still number every
	// notice alike (LatestSeq and the company views below compare them).
	ns := readNotices(t, files.Notices)
	var amend []notice.Notice
	added := 0
	for i := 0; i < len(ns); i += 97 {
		n := ns[i]
		n.Text += " This notice was amended."
		if i%(97*4) == 0 {
			// A value in another case: filters and stats must fold it
			// into the same value, under the same spelling, on both.
			n.Status, n.NoticePurpose = strings.ToLower(n.Status), strings.ToUpper(n.NoticePurpose)
		}
		amend = append(amend, n)
		if i%(97*3) == 0 {
			m := ns[i]
			m.SourceID += "-R"
			m.ID = notice.IDFor(m.SourceID)
			amend = append(amend, m)
			added++
		}
	}
	for name, w := range map[string]store.NoticeWriter{"sqlite": lite, "elastic": es} {
		for lo := 0; lo < len(amend); lo += 50 {
			if _, err := w.UpsertNotices(ctx, amend[lo:min(lo+50, len(amend))]); err != nil {
				t.Fatalf("%s: amendments: %v", name, err)
			}
		}
	}

	all, err := lite.Search(ctx, notice.SearchQuery{Filter: notice.Filter{IncludeDeregistration: true}, Sort: notice.SortPublishedAsc, Limit: 1})
	if err != nil || all.Total != int64(equivNotices+added) {
		t.Fatalf("sqlite holds %d notices (%v), want %d", all.Total, err, equivNotices+added)
	}
	gen := newRequestGen(t, lite)
	failures, matched, deep, withQ := 0, 0, 0, 0
	fail := func(format string, args ...any) {
		t.Helper()
		failures++
		if failures <= 25 {
			t.Errorf(format, args...)
		}
	}
	for i := 0; i < equivRequests; i++ {
		r := gen.next(i)
		if i%4 == 3 {
			// A page near the end of the results (or of API.md's 10,000).
			first := r
			first.Page, first.Limit = 1, 1
			if p, err := lite.Search(ctx, first); err == nil && p.Total > int64(r.Limit) {
				r.Page = max(1, int(min(p.Total, 10000))/r.Limit-gen.rnd.IntN(2))
			}
		}
		a, aerr := lite.Search(ctx, r)
		b, berr := es.Search(ctx, r)
		if aerr != nil || berr != nil {
			fail("request %d %s: sqlite error %v, elastic error %v", i, describe(r), aerr, berr)
			continue
		}
		if a.Total != b.Total {
			fail("request %d %s: total sqlite %d, elastic %d", i, describe(r), a.Total, b.Total)
			continue
		}
		if a.Total > 0 {
			matched++
			if r.Q != nil {
				withQ++
			}
		}
		if len(a.Notices) > 0 && (r.Page-1)*r.Limit >= 1000 {
			deep++
		}
		ai, bi := ids(a.Notices), ids(b.Notices)
		if r.Sort == notice.SortRelevance && ranked(r.Q) {
			if a.Total <= int64(r.Limit) && r.Page == 1 {
				sort.Strings(ai)
				sort.Strings(bi)
			} else {
				ai, bi = nil, nil // only the total is the same under relevance
			}
		}
		if !reflect.DeepEqual(ai, bi) {
			fail("request %d %s: ids differ\n sqlite  %v\n elastic %v", i, describe(r), ai, bi)
		}
		if i%3 == 0 {
			fa, aerr := lite.Filters(ctx, r.Filter)
			fb, berr := es.Filters(ctx, r.Filter)
			if aerr != nil || berr != nil || !reflect.DeepEqual(fa, fb) {
				fail("request %d filters %s: sqlite %+v (%v)\n elastic %+v (%v)", i, describe(r), fa, aerr, fb, berr)
			}
		}
		if i%3 == 1 {
			q := notice.StatsQuery{Filter: r.Filter, GroupBy: notice.GroupByKeys[i%len(notice.GroupByKeys)]}
			sa, aerr := lite.Stats(ctx, q)
			sb, berr := es.Stats(ctx, q)
			notice.FinishStats(&sa, q.From, q.To)
			notice.FinishStats(&sb, q.From, q.To)
			if aerr != nil || berr != nil || !reflect.DeepEqual(sa, sb) {
				fail("request %d stats %s by %s: sqlite %+v (%v)\n elastic %+v (%v)", i, describe(r), q.GroupBy, sa, aerr, sb, berr)
			}
		}
	}
	for i, id := range gen.companies(40) {
		ca, aerr := lite.Company(ctx, id)
		cb, berr := es.Company(ctx, id)
		if (aerr == nil) != (berr == nil) || !reflect.DeepEqual(ca, cb) {
			fail("company %d %s %s: sqlite %+v (%v)\n elastic %+v (%v)", i, id.Kind, id.Value, ca, aerr, cb, berr)
		}
	}
	// Company name searches (GET /v1/companies?name=) built from register
	// names: whole names, first words, a word and the start of the next,
	// one word: the same companies in the same order, the same totals,
	// the same refusals.
	nameHits := 0
	cos := gen.companies(60)
	acns := make([]string, 0, len(cos))
	for _, id := range cos {
		if id.Kind == ident.ACN {
			acns = append(acns, id.Value)
		}
	}
	regNames, err := lite.RegisterNames(ctx, acns)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range regNames {
		ws := query.Words(name)
		if len(ws) == 0 {
			continue
		}
		for j, words := range [][]string{ws, ws[:1], ws[:min(2, len(ws))], append(slices.Clone(ws[:1]), ws[len(ws)/2][:min(3, len(ws[len(ws)/2]))]), ws[len(ws)-1:]} {
			nq := notice.NameQuery{Words: words, Limit: 1 + (i+j)%20, Page: 1 + j%2}
			pa, aerr := lite.CompaniesByName(ctx, nq)
			pb, berr := es.CompaniesByName(ctx, nq)
			ea, _ := errs.As(aerr)
			eb, _ := errs.As(berr)
			if (aerr == nil) != (berr == nil) || (aerr != nil && (ea == nil || eb == nil || ea.Code != eb.Code)) || !reflect.DeepEqual(pa, pb) {
				fail("name search %q limit %d page %d:\n sqlite  %+v (%v)\n elastic %+v (%v)", strings.Join(words, " "), nq.Limit, nq.Page, pa, aerr, pb, berr)
			}
			nameHits += len(pa.Companies)
		}
	}
	if nameHits == 0 {
		t.Errorf("the name searches found nothing: they test nothing")
	}
	// The notice source the Redis backend reads through (match history,
	// backfills, arrivals): the same seqs and notices from both.
	latest, err := lite.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if wm, err := es.LatestSeq(ctx); err != nil || wm != latest {
		fail("LatestSeq: sqlite %d, elastic %d (%v)", latest, wm, err)
	}
	sourceHits := 0
	for i := 0; i < 40; i++ {
		r := gen.next(i)
		var keys []string
		if i%4 != 0 { // every fourth is a filter-only watch (keys nil)
			keys = []string{}
			for _, id := range gen.companies(1 + gen.rnd.IntN(30)) {
				keys = append(keys, id.Value)
			}
		}
		after := int64(gen.rnd.IntN(int(latest / 2)))
		through := after + int64(gen.rnd.IntN(int(latest)))
		limit := 1 + gen.rnd.IntN(300)
		a, aerr := lite.MatchingSeqs(ctx, keys, r.Filter, after, through, limit)
		b, berr := es.MatchingSeqs(ctx, keys, r.Filter, after, through, limit)
		if aerr != nil || berr != nil || !slices.Equal(a, b) {
			fail("MatchingSeqs %d %s keys=%d (%d, %d] limit %d:\n sqlite  %v (%v)\n elastic %v (%v)", i, describe(r), len(keys), after, through, limit, a, aerr, b, berr)
			continue
		}
		sourceHits += len(a)
		na, aerr := lite.NoticesBySeq(ctx, a)
		nb, berr := es.NoticesBySeq(ctx, a)
		if aerr != nil || berr != nil || !slices.Equal(ids(na), ids(nb)) || len(na) != len(a) {
			fail("NoticesBySeq %d: sqlite %v (%v), elastic %v (%v)", i, ids(na), aerr, ids(nb), berr)
		}
	}
	if sourceHits == 0 {
		t.Errorf("the notice-source comparisons matched nothing: they test nothing")
	}
	if failures > 0 {
		t.Errorf("%d of the comparisons differ", failures)
	}
	// The requests must exercise something: matches, q matches, deep pages.
	t.Logf("%d requests: %d with matches (%d of them with q), %d non-empty pages past the 1,000th notice", equivRequests, matched, withQ, deep)
	if matched < equivRequests/3 || withQ < equivRequests/10 || deep < 10 {
		t.Errorf("the generated requests are too weak: %d with matches, %d with q, %d deep pages", matched, withQ, deep)
	}
}

func ids(ns []notice.Notice) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

func describe(r notice.SearchQuery) string {
	f := r.Filter
	var b strings.Builder
	fmt.Fprintf(&b, "sort=%s limit=%d page=%d", r.Sort, r.Limit, r.Page)
	if f.Q != nil {
		fmt.Fprintf(&b, " q=%v", f.Q)
	}
	for _, kv := range []struct {
		k string
		v []string
	}{{"appointment_type", f.AppointmentType}, {"notice_purpose", f.NoticePurpose}, {"notice_code", f.NoticeCode}, {"state", f.State}, {"status", f.Status}} {
		if len(kv.v) > 0 {
			fmt.Fprintf(&b, " %s=%q", kv.k, kv.v)
		}
	}
	if f.From != "" || f.To != "" {
		fmt.Fprintf(&b, " from=%s to=%s", f.From, f.To)
	}
	if f.Company != nil {
		fmt.Fprintf(&b, " company=%s", f.Company.Value)
	}
	if f.IncludeDeregistration {
		b.WriteString(" include_deregistration")
	}
	return b.String()
}

// requestGen makes requests from the data: filter values the store holds
// (sometimes in another case), words of the notices (common and rare),
// real phrases, prefixes, and identifiers of the notices.
type requestGen struct {
	rnd     *rand.Rand
	facets  notice.FilterCounts
	common  []string
	rare    []string
	phrases [][]string
	acns    []string
	abns    []string
}

func newRequestGen(t *testing.T, s *sqlite.Store) *requestGen {
	t.Helper()
	ctx := context.Background()
	g := &requestGen{rnd: rand.New(rand.NewPCG(3, 5))}
	var err error
	if g.facets, err = s.Filters(ctx, notice.Filter{IncludeDeregistration: true}); err != nil {
		t.Fatal(err)
	}
	page, err := s.Search(ctx, notice.SearchQuery{Filter: notice.Filter{IncludeDeregistration: true}, Sort: notice.SortPublishedDesc, Limit: 100, Page: 3})
	if err != nil {
		t.Fatal(err)
	}
	more, err := s.Search(ctx, notice.SearchQuery{Sort: notice.SortPublishedAsc, Limit: 100, Page: 2})
	if err != nil {
		t.Fatal(err)
	}
	freq := map[string]int{}
	for _, n := range append(page.Notices, more.Notices...) {
		for _, text := range []string{n.CompanyName, n.NoticeType, n.Text, notice.PractitionerText(n.Practitioners)} {
			words := strings.Fields(query.Fold(text))
			for _, w := range words {
				freq[w]++
			}
			if len(words) >= 3 {
				at := g.rnd.IntN(len(words) - 2)
				g.phrases = append(g.phrases, words[at:at+2+g.rnd.IntN(2)])
			}
		}
		if n.ACN != nil {
			g.acns = append(g.acns, *n.ACN)
		}
		if n.ABN != nil {
			g.abns = append(g.abns, *n.ABN)
		}
	}
	words := make([]string, 0, len(freq))
	for w := range freq {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if freq[words[i]] != freq[words[j]] {
			return freq[words[i]] > freq[words[j]]
		}
		return words[i] < words[j]
	})
	g.common = words[:min(40, len(words))]
	g.rare = words[min(40, len(words)):]
	return g
}

func (g *requestGen) pick(xs []string) string { return xs[g.rnd.IntN(len(xs))] }

func (g *requestGen) word() string {
	if g.rnd.IntN(2) == 0 {
		return g.pick(g.common)
	}
	return g.pick(g.rare)
}

func (g *requestGen) phrase() string {
	p := g.phrases[g.rnd.IntN(len(g.phrases))]
	return `"` + strings.Join(p, " ") + `"`
}

func (g *requestGen) prefix() string {
	w := g.word()
	for len(w) < 3 {
		w = g.word()
	}
	return w[:2+g.rnd.IntN(len(w)-1)] + "*"
}

// q returns one q string of a randomly chosen form.
func (g *requestGen) q() string {
	switch g.rnd.IntN(13) {
	case 0:
		return g.word()
	case 1:
		return g.word() + " " + g.word()
	case 2:
		return g.phrase()
	case 3:
		return g.word() + " OR " + g.word()
	case 4:
		return g.word() + " -" + g.word()
	case 5:
		return "-" + g.word()
	case 6:
		return g.prefix()
	case 7:
		p := g.phrases[g.rnd.IntN(len(g.phrases))]
		last := p[len(p)-1]
		if len(last) > 3 {
			last = last[:3]
		}
		return `"` + strings.Join(append(append([]string{}, p[:len(p)-1]...), last), " ") + `*"`
	case 8:
		return "(" + g.word() + " OR " + g.word() + ") " + g.word()
	case 9:
		return g.word() + " OR -" + g.word()
	case 10:
		return strings.ToUpper(g.word()) + " NOT " + g.prefix()
	case 11:
		return g.phrase() + " OR " + g.prefix()
	default:
		return "-" + g.word() + " -" + g.word()
	}
}

func (g *requestGen) values(vs []notice.ValueCount) []string {
	n := 1 + g.rnd.IntN(min(3, len(vs)))
	out := make([]string, 0, n)
	for range n {
		v := vs[g.rnd.IntN(len(vs))].Value
		if g.rnd.IntN(4) == 0 {
			v = strings.ToLower(v)
		}
		out = append(out, v)
	}
	return out
}

func (g *requestGen) date() string {
	start := time.Date(2023, 9, 1, 0, 0, 0, 0, time.UTC)
	return start.AddDate(0, 0, g.rnd.IntN(3*365+60)).Format(notice.DateLayout)
}

// next makes request i: the filters, q and sort vary with i and chance.
func (g *requestGen) next(i int) notice.SearchQuery {
	var f notice.Filter
	f.IncludeDeregistration = g.rnd.IntN(3) == 0
	if i%2 == 0 || g.rnd.IntN(3) == 0 {
		q, err := query.Parse(g.q())
		if err == nil {
			f.Q = q
		}
	}
	fs := g.facets
	if len(fs.AppointmentType) > 0 && g.rnd.IntN(5) == 0 {
		f.AppointmentType = g.values(fs.AppointmentType)
	}
	if g.rnd.IntN(6) == 0 {
		f.NoticePurpose = g.values(fs.NoticePurpose)
	}
	if g.rnd.IntN(6) == 0 {
		f.NoticeCode = g.values(fs.NoticeCode)
	}
	if g.rnd.IntN(4) == 0 {
		f.State = g.values(fs.State)
	}
	if g.rnd.IntN(6) == 0 {
		f.Status = g.values(fs.Status)
	}
	switch g.rnd.IntN(4) {
	case 0:
		a, b := g.date(), g.date()
		if a > b {
			a, b = b, a
		}
		f.From, f.To = a, b
	case 1:
		f.From = g.date()
	case 2:
		f.To = g.date()
	}
	if g.rnd.IntN(12) == 0 {
		ids := g.companies(1)
		f.Company = &ids[0]
	}
	r := notice.SearchQuery{Filter: f, Sort: []string{notice.SortPublishedDesc, notice.SortPublishedAsc, notice.SortRelevance}[i%3]}
	r.Limit = []int{1, 7, 20, 50, 100}[g.rnd.IntN(5)]
	switch g.rnd.IntN(4) {
	case 0:
		r.Page = 1 + g.rnd.IntN(10000/r.Limit) // anywhere up to API.md's limit
	case 1:
		r.Page = 10000/r.Limit - g.rnd.IntN(3) // the deepest pages
	default:
		r.Page = 1 + g.rnd.IntN(3)
	}
	return r
}

// companies returns n identifiers of notices' companies (ACNs and ABNs).
func (g *requestGen) companies(n int) []ident.ID {
	out := make([]ident.ID, n)
	for i := range out {
		if g.rnd.IntN(3) == 0 && len(g.abns) > 0 {
			out[i] = ident.ID{Value: g.pick(g.abns), Kind: ident.ABN}
		} else {
			out[i] = ident.ID{Value: g.pick(g.acns), Kind: ident.ACN}
		}
	}
	return out
}
