package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// bm25Weights weight the full-text columns for relevance: company_name,
// notice_type, text, practitioner names and firms, kind. A hit in the
// company name or a practitioner outranks one in the body; kind (the
// live/dereg token) never counts.
const bm25Weights = "4.0, 2.0, 1.0, 2.0, 0.0"

// qColumns restricts a q to the searchable columns of notices_fts (not
// kind).
const qColumns = "{company_name notice_type text practitioner_text}"

// cond is a WHERE clause under construction over notices aliased n (and
// notices_fts when match is set). from() and where() together always select
// exactly the notices passing the filter.
type cond struct {
	terms []string
	args  []any
	match string // FTS5 expression; "" when the search has no full-text part
	// live is set when match itself excludes deregistration notices
	// (`... AND kind : live`), so terms need not.
	live bool
	// qmatch is match without the deregistration exclusion.
	qmatch string
	// negated is set when q is only negations (`-foo`, `-foo -bar`):
	// match is then every notice (by kind) NOT the negated words, and
	// relevance has nothing to rank (it is published_desc).
	negated bool
}

func (c *cond) add(term string, args ...any) {
	c.terms = append(c.terms, term)
	c.args = append(c.args, args...)
}

func (c *cond) in(column string, values []string) {
	if len(values) == 0 {
		return
	}
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	// The columns are COLLATE NOCASE, so IN compares case-insensitively.
	c.add("n."+column+" IN ("+placeholders(len(values))+")", args...)
}

// from returns the FROM clause.
func (c *cond) from() string {
	if c.match != "" {
		return "notices_fts JOIN notices n ON n.seq = notices_fts.rowid"
	}
	return "notices n"
}

// where returns the WHERE clause (with the leading keyword) and its args.
func (c *cond) where() (string, []any) {
	terms, args := c.terms, c.args
	if c.match != "" {
		terms = append([]string{"notices_fts MATCH ?"}, terms...)
		args = append([]any{c.match}, args...)
	}
	if len(terms) == 0 {
		return "", args
	}
	return " WHERE " + strings.Join(terms, " AND "), args
}

// ftsOnly reports whether the full-text index alone answers the filter: a
// match and no condition on the notices' columns.
func (c *cond) ftsOnly() bool { return c.match != "" && len(c.terms) == 0 }

// qMatch restricts an FTS5 expression rendered from q to the searchable
// columns.
func qMatch(expr string) string { return qColumns + " : (" + expr + ")" }

// filterCond translates a notice.Filter. A q that FTS5 can express becomes a
// MATCH joined with the notices, carrying the deregistration exclusion as
// `AND kind : "live"`. A q of negations only (`-foo`) becomes a MATCH of
// every notice's kind token NOT the negated words. Any other q FTS5 cannot
// express (`a OR -b`) becomes query.SQL's fallback, which wraps the
// expressible parts in sub-selects on the same FTS5 index, so every path
// matches the same tokens. Relevance needs a positive MATCH: without one it
// is published_desc.
func filterCond(f notice.Filter) cond {
	var c cond
	if f.Q != nil {
		if expr, ok := query.FTS5(f.Q); ok {
			c.match = qMatch(expr)
			c.qmatch = c.match
			if !f.IncludeDeregistration {
				c.match += ` AND kind : "live"`
				c.live = true
			}
		} else if neg, ok := negations(f.Q); ok {
			all := `kind : ("live" OR "dereg")`
			if !f.IncludeDeregistration {
				all = `kind : "live"`
				c.live = true
			}
			c.match = all + " NOT " + qMatch(neg)
			c.qmatch = `kind : ("live" OR "dereg") NOT ` + qMatch(neg)
			c.negated = true
		} else {
			// Unqualified seq is n.seq: the fallback is only used without
			// the FTS join.
			where, args := query.SQL(f.Q, "notices_fts")
			for i, a := range args {
				if e, ok := a.(string); ok {
					args[i] = qMatch(e)
				}
			}
			c.add(where, args...)
		}
	}
	if !f.IncludeDeregistration && !c.live {
		// A literal, so the planner can use the partial index notices_live.
		c.add("n.is_dereg = 0")
	}
	c.in("appointment_type", f.AppointmentType)
	c.in("notice_purpose", f.NoticePurpose)
	c.in("notice_code", f.NoticeCode)
	c.in("state", f.State)
	c.in("status", f.Status)
	if f.From != "" {
		c.add("n.published_date >= ?", f.From)
	}
	if f.To != "" {
		c.add("n.published_date <= ?", f.To)
	}
	if f.Company != nil {
		term, args := companyCond(*f.Company)
		c.add(term, args...)
	}
	return c
}

// negations renders a q made only of negations (Not, or And of Nots) as
// the FTS5 expression of what it excludes.
func negations(n query.Node) (string, bool) {
	var excluded []query.Node
	switch n := n.(type) {
	case query.Not:
		excluded = []query.Node{n.Child}
	case query.And:
		for _, c := range n.Children {
			not, ok := c.(query.Not)
			if !ok {
				return "", false
			}
			excluded = append(excluded, not.Child)
		}
	default:
		return "", false
	}
	if len(excluded) == 0 {
		return "", false
	}
	return query.FTS5(query.Or{Children: excluded})
}

// companyCond selects the notices of one company: those carrying the
// identifier, and those carrying the other identifier the register holds for
// it (ACN -> its ABNs, ABN -> its ACNs).
func companyCond(id ident.ID) (string, []any) {
	// abn <> '' lets the planner use the partial index on register.abn.
	if id.Kind == ident.ABN {
		return "(n.abn = ? OR n.acn IN (SELECT acn FROM register WHERE abn = ? AND abn <> ''))", []any{id.Value, id.Value}
	}
	return "(n.acn = ? OR n.abn IN (SELECT abn FROM register WHERE acn = ? AND abn <> ''))", []any{id.Value, id.Value}
}

// Publication orders. Publication order is by published_date, then
// published_at: the same order as published_at alone (published_date is
// its Sydney date), but it lets the covering indexes, which lead with
// published_date, serve both the date range and the order. Ties break on
// notice_seq descending.
const (
	orderPublishedDesc = "n.published_date DESC, n.published_at DESC, n.seq DESC"
	orderPublishedAsc  = "n.published_date ASC, n.published_at ASC, n.seq DESC"
)

// checkSort validates a sort key; relevance needs a full-text part and is
// published_desc without one.
func checkSort(sortKey string, c cond) (string, error) {
	switch sortKey {
	case notice.SortPublishedDesc, "":
		return notice.SortPublishedDesc, nil
	case notice.SortPublishedAsc:
		return sortKey, nil
	case notice.SortRelevance:
		if c.match == "" || c.negated {
			return notice.SortPublishedDesc, nil
		}
		return sortKey, nil
	}
	return "", errs.New(errs.InvalidParameter, "sort %q is not one of %s, %s, %s", sortKey,
		notice.SortPublishedDesc, notice.SortPublishedAsc, notice.SortRelevance)
}

// Search returns one page of matching notices and the exact total.
//
// Without q or a company the total comes from notice_counts and the page
// from the covering index of the sort order. With q the total is counted
// first (from the full-text index alone when q is the only condition);
// relevance ranks the matches with bm25 (the most recently arrived
// relevanceWindow first when there are more), and publication order sorts
// the matches when they are few, else the matches among a window of the
// newest (oldest) notices that holds enough of them.
func (s *Store) Search(ctx context.Context, q notice.SearchQuery) (notice.SearchPage, error) {
	c := filterCond(q.Filter)
	sortKey, err := checkSort(q.Sort, c)
	if err != nil {
		return notice.SearchPage{}, err
	}
	limit, page := q.Limit, q.Page
	if limit <= 0 {
		limit = 20
	}
	if page <= 0 {
		page = 1
	}
	offset := (page - 1) * limit

	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return notice.SearchPage{}, fmt.Errorf("sqlite: search: %w", err)
	}
	defer tx.Rollback()
	seqs, total, err := s.searchSeqs(ctx, tx, q.Filter, c, sortKey, limit, offset)
	if err != nil {
		return notice.SearchPage{}, err
	}
	ns, err := noticesBySeq(ctx, tx, seqs)
	if err != nil {
		return notice.SearchPage{}, err
	}
	return notice.SearchPage{Notices: ns, Total: total}, nil
}

// searchSeqs returns the seqs of matches offset..offset+limit in sortKey
// order and the exact total, in tx.
func (s *Store) searchSeqs(ctx context.Context, tx *sql.Tx, f notice.Filter, c cond, sortKey string, limit, offset int) ([]int64, int64, error) {
	if c.match == "" {
		return searchFiltered(ctx, tx, f, c, sortKey, limit, offset)
	}
	total := int64(-1)
	if !c.ftsOnly() {
		if n, ok, err := s.countInMemory(ctx, tx, f); err != nil {
			return nil, 0, err
		} else if ok {
			total = n
		}
	}
	return searchMatch(ctx, tx, f, c, sortKey, total, limit, offset)
}

// querySeqList runs a query selecting seqs.
func querySeqList(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]int64, error) {
	seqs, err := queryColumn[int64](ctx, tx, q, args...)
	if err != nil {
		return nil, searchError(err)
	}
	return seqs, nil
}

// queryColumn runs a query of one column and returns its values.
func queryColumn[T any](ctx context.Context, q querier, query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// publicationOrder is the ORDER BY of a publication sort.
func publicationOrder(sortKey string) string {
	if sortKey == notice.SortPublishedAsc {
		return orderPublishedAsc
	}
	return orderPublishedDesc
}

// searchFiltered pages a search without a full-text MATCH (no q, or q in
// query.SQL's fallback form).
func searchFiltered(ctx context.Context, tx *sql.Tx, f notice.Filter, c cond, sortKey string, limit, offset int) ([]int64, int64, error) {
	total, counted, err := countFiltered(ctx, tx, f)
	if err != nil {
		return nil, 0, err
	}
	if counted && int64(offset) >= total {
		return nil, total, nil
	}
	where, args := c.where()
	seqs, err := querySeqList(ctx, tx, "SELECT n.seq FROM "+c.from()+where+" ORDER BY "+publicationOrder(sortKey)+" LIMIT ? OFFSET ?",
		append(args, limit, offset)...)
	if err != nil {
		return nil, 0, err
	}
	if counted {
		return seqs, total, nil
	}
	if len(seqs) < limit && (len(seqs) > 0 || offset == 0) {
		// The last page: the total is known without counting.
		return seqs, int64(offset + len(seqs)), nil
	}
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+c.from()+where, args...).Scan(&total); err != nil {
		return nil, 0, searchError(err)
	}
	return seqs, total, nil
}

// Bounds of the full-text plans (see searchMatch); variables so tests can
// take every path on a small sample.
var (
	// relevanceWindow is how many matches relevance ranks exactly: with
	// more, the relevanceWindow most recently arrived matches come first,
	// ranked, then the rest, ranked among themselves.
	relevanceWindow = 2000
	// sortLimit is how many matches publication order sorts; with more,
	// it sorts only the matches among the newest (oldest) notices.
	sortLimit = 2000
)

// searchMatch pages a search with a full-text MATCH. The total is counted
// first (unless the caller passes it, total >= 0): from the full-text index
// alone when q is the only condition (`kind : live` excluding
// deregistration notices inside the MATCH).
func searchMatch(ctx context.Context, tx *sql.Tx, f notice.Filter, c cond, sortKey string, total int64, limit, offset int) ([]int64, int64, error) {
	switch {
	case total >= 0: // counted by the caller (countInMemory)
	case c.ftsOnly():
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM notices_fts WHERE notices_fts MATCH ?", c.match).Scan(&total); err != nil {
			return nil, 0, searchError(err)
		}
	default:
		from, args := matchJoin(c)
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+from, args...).Scan(&total); err != nil {
			return nil, 0, searchError(err)
		}
	}
	if int64(offset) >= total {
		return nil, total, nil
	}
	var seqs []int64
	var err error
	if sortKey == notice.SortRelevance {
		seqs, err = relevancePage(ctx, tx, c, total, limit, offset)
	} else {
		seqs, err = publishedPage(ctx, tx, f, c, sortKey, total, limit, offset)
	}
	return seqs, total, err
}

// matchJoin is the FROM and WHERE of a q's matches joined with the
// notices, for counting with filters, ranking, sorting and grouping: q
// without the kind part in the MATCH (bm25 would otherwise compute
// statistics for the kind token, a pass over every live notice), the
// full-text index driving the join, and for live notices the small index
// notices_live_facets instead of the notices' rows.
func matchJoin(c cond) (string, []any) {
	r := cond{terms: c.terms, args: c.args, match: c.qmatch}
	join := "notices_fts CROSS JOIN notices n ON n.seq = notices_fts.rowid"
	if c.live {
		r.terms = append([]string{"n.is_dereg = 0"}, r.terms...)
		join = "notices_fts CROSS JOIN notices n INDEXED BY notices_live_facets ON n.seq = notices_fts.rowid"
	}
	where, args := r.where()
	return join + where, args
}

// matchedNotices is the FROM and WHERE of the notices passing c: the
// full-text join of matchJoin when there is a MATCH.
func matchedNotices(c cond) (string, []any) {
	if c.match != "" {
		return matchJoin(c)
	}
	where, args := c.where()
	return c.from() + where, args
}

// relevancePage ranks the matches with bm25, ties by seq descending. With
// more than relevanceWindow matches the order is: the relevanceWindow
// matches of highest seq (the most recently arrived), ranked, then the rest,
// ranked; bm25 costs a pass per matching row, so ranking the whole of a
// common word's matches would cost far more than a page.
func relevancePage(ctx context.Context, tx *sql.Tx, c cond, total int64, limit, offset int) ([]int64, error) {
	from, args := matchJoin(c)
	rank := " ORDER BY bm25(notices_fts, " + bm25Weights + "), n.seq DESC LIMIT ? OFFSET ?"
	if total <= int64(relevanceWindow) {
		return querySeqList(ctx, tx, "SELECT n.seq FROM "+from+rank, append(args, limit, offset)...)
	}
	// The window starts at the relevanceWindow-th match by seq descending.
	var boundary int64
	var err error
	if c.ftsOnly() {
		err = tx.QueryRowContext(ctx, "SELECT rowid FROM notices_fts WHERE notices_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
			c.match, relevanceWindow-1).Scan(&boundary)
	} else {
		err = tx.QueryRowContext(ctx, "SELECT n.seq FROM "+from+" ORDER BY notices_fts.rowid DESC LIMIT 1 OFFSET ?",
			append(slices.Clone(args), relevanceWindow-1)...).Scan(&boundary)
	}
	if err != nil {
		return nil, searchError(err)
	}
	var seqs []int64
	if offset < relevanceWindow {
		seqs, err = querySeqList(ctx, tx, "SELECT n.seq FROM "+from+" AND notices_fts.rowid >= ?"+rank,
			append(slices.Clone(args), boundary, min(limit, relevanceWindow-offset), offset)...)
		if err != nil || offset+limit <= relevanceWindow {
			return seqs, err
		}
	}
	rest, err := querySeqList(ctx, tx, "SELECT n.seq FROM "+from+" AND notices_fts.rowid < ?"+rank,
		append(slices.Clone(args), boundary, limit-len(seqs), max(0, offset-relevanceWindow))...)
	return append(seqs, rest...), err
}

// publishedPage pages the matches in publication order. Few matches are
// sorted. Many are taken from a window of the newest (for published_asc
// oldest) notices passing the other filters, sized to hold about twice the
// matches the page needs: every match outside the window comes after every
// notice in it, so when the window holds offset+limit matches its first
// offset+limit are the answer; otherwise the window grows.
func publishedPage(ctx context.Context, tx *sql.Tx, f notice.Filter, c cond, sortKey string, total int64, limit, offset int) ([]int64, error) {
	order := publicationOrder(sortKey)
	need := int64(offset + limit)
	scope := f
	scope.Q = nil
	walk, counted, err := countFiltered(ctx, tx, scope)
	if err != nil {
		return nil, err
	}
	if total > int64(sortLimit) && counted {
		sc := filterCond(scope)
		swhere, sargs := sc.where()
		if swhere == "" {
			swhere = " WHERE 1"
		}
		cmp := ">="
		if sortKey == notice.SortPublishedAsc {
			cmp = "<="
		}
		for rows := 2*need*walk/total + 64; rows < walk; rows *= 4 {
			var edge string
			if err := tx.QueryRowContext(ctx, "SELECT n.published_date FROM notices n"+swhere+" ORDER BY "+order+" LIMIT 1 OFFSET ?",
				append(slices.Clone(sargs), rows-1)...).Scan(&edge); err != nil {
				return nil, searchError(err)
			}
			var lo, hi int64
			if err := tx.QueryRowContext(ctx, "SELECT min(n.seq), max(n.seq) FROM notices n"+swhere+" AND n.published_date "+cmp+" ?",
				append(slices.Clone(sargs), edge)...).Scan(&lo, &hi); err != nil {
				return nil, searchError(err)
			}
			from, args := matchJoin(c)
			seqs, err := querySeqList(ctx, tx, "SELECT n.seq FROM "+from+
				" AND notices_fts.rowid BETWEEN ? AND ? AND n.published_date "+cmp+" ? ORDER BY "+order+" LIMIT ?",
				append(slices.Clone(args), lo, hi, edge, need)...)
			if err != nil {
				return nil, err
			}
			if int64(len(seqs)) == need {
				return seqs[offset:], nil
			}
		}
	}
	from, args := matchJoin(c)
	return querySeqList(ctx, tx, "SELECT n.seq FROM "+from+" ORDER BY "+order+" LIMIT ? OFFSET ?",
		append(args, limit, offset)...)
}

// noticesBySeq reads the notices with the given seqs, in that order.
func noticesBySeq(ctx context.Context, tx *sql.Tx, seqs []int64) ([]notice.Notice, error) {
	out := make([]notice.Notice, len(seqs))
	if len(seqs) == 0 {
		return out, nil
	}
	pos := make(map[int64]int, len(seqs))
	args := make([]any, len(seqs))
	for i, s := range seqs {
		pos[s] = i
		args[i] = s
	}
	rows, err := tx.QueryContext(ctx, "SELECT "+noticeColumns+" FROM notices n WHERE n.seq IN ("+placeholders(len(seqs))+")", args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read notices: %w", err)
	}
	ns, err := scanNotices(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read notices: %w", err)
	}
	for _, n := range ns {
		out[pos[n.Seq]] = n
	}
	return out, nil
}

// searchError reports a failed search; an FTS5 syntax error means the query
// translation and the parser disagree, which is ours to fix, not the caller's.
func searchError(err error) error {
	if strings.Contains(err.Error(), "fts5") {
		return fmt.Errorf("sqlite: full-text query rejected by FTS5 (a query translation bug; please report the q used): %w", err)
	}
	return fmt.Errorf("sqlite: search: %w", err)
}

// facetColumns are the fields /v1/filters counts, in FilterCounts order.
var facetColumns = []string{"appointment_type", "notice_purpose", "notice_code", "state", "status"}

// Filters counts the values of each filter field among the matching notices.
// Each list is sorted by count descending, then value ascending; notices
// without an appointment_type are not listed under it. Without q or a
// company the counts come from notice_counts.
func (s *Store) Filters(ctx context.Context, f notice.Filter) (notice.FilterCounts, error) {
	var out notice.FilterCounts
	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("sqlite: filters: %w", err)
	}
	defer tx.Rollback()
	counts := make([]map[string]int64, len(facetColumns))
	for i := range counts {
		counts[i] = map[string]int64{}
	}
	if mem, ok, err := s.filtersInMemory(ctx, tx, f, counts); err != nil || ok {
		if err != nil {
			return out, err
		}
		return finishFilterCounts(mem, counts), nil
	}
	// One pass over the matching rows (or count rows), grouped by all five
	// fields at once; the per-field counts are summed here.
	add := func(vals []sql.NullString, n int64) {
		out.Total += n
		for i, v := range vals {
			if v.Valid && (i != 0 || v.String != "") {
				counts[i][v.String] += n
			}
		}
	}
	if sp, ok := countable(f); ok {
		err = groupCounts(ctx, tx, f, sp, grouping{
			counts:  countsExact + ", sum(n)",
			notices: facetsExact + ", count(*)",
			ncols:   5,
		}, add)
	} else {
		from, args := matchedNotices(filterCond(f))
		err = func() error {
			rows, err := tx.QueryContext(ctx, "SELECT "+facetsExact+", count(*) FROM "+
				from+" GROUP BY 1, 2, 3, 4, 5", args...)
			if err != nil {
				return searchError(err)
			}
			defer rows.Close()
			vals := make([]sql.NullString, 5)
			var n int64
			for rows.Next() {
				if err := rows.Scan(&vals[0], &vals[1], &vals[2], &vals[3], &vals[4], &n); err != nil {
					return err
				}
				add(vals, n)
			}
			return searchError2(rows.Err())
		}()
	}
	if err != nil {
		return notice.FilterCounts{}, err
	}
	return finishFilterCounts(out, counts), nil
}

// facetsExact selects the five filter fields of the notices n by exact
// spelling (the columns are COLLATE NOCASE, which would group "NSW" and
// "nsw" under whichever came first): notice.SortedCounts folds them.
const facetsExact = "n.appointment_type COLLATE BINARY, n.notice_purpose COLLATE BINARY, n.notice_code COLLATE BINARY, " +
	"n.state COLLATE BINARY, n.status COLLATE BINARY"

// countsExact is facetsExact over notice_counts, whose rows differ
// wherever a spelling does (migration 0010).
const countsExact = "appointment_type COLLATE BINARY, notice_purpose COLLATE BINARY, notice_code COLLATE BINARY, " +
	"state COLLATE BINARY, status COLLATE BINARY"

// finishFilterCounts sorts the per-field counts into out.
func finishFilterCounts(out notice.FilterCounts, counts []map[string]int64) notice.FilterCounts {
	out.AppointmentType = notice.SortedCounts(counts[0])
	out.NoticePurpose = notice.SortedCounts(counts[1])
	out.NoticeCode = notice.SortedCounts(counts[2])
	out.State = notice.SortedCounts(counts[3])
	out.Status = notice.SortedCounts(counts[4])
	return out
}

// filtersMemory lets tests force the SQL paths of Filters and of Search's
// total.
var filtersMemory = true

// filtersInMemory answers Filters for a q from the in-memory company index
// when it is loaded and holds the fields: the q's matching seqs come from
// the full-text index in one aggregate (fullTextMatches), the other filters
// and the counts from the index's per-notice field codes, at the
// snapshot's seq (so the answer is exact as of that moment). ok is false
// when it cannot (no q, a company filter, no index loaded yet, a q FTS5
// cannot express alone); the caller then counts with SQL.
func (s *Store) filtersInMemory(ctx context.Context, tx *sql.Tx, f notice.Filter, counts []map[string]int64) (notice.FilterCounts, bool, error) {
	var out notice.FilterCounts
	snap, mf, ok, err := s.memoryMatches(ctx, tx, f)
	if err != nil || !ok {
		return out, false, err
	}
	n := len(snap.values)
	by := [5][]int64{make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)}
	snap.eachPassing(&mf, func(m *noticeMeta) {
		out.Total++
		by[0][m.appointment]++
		by[1][m.purpose]++
		by[2][m.code]++
		by[3][m.state]++
		by[4][m.status]++
	})
	for i := range by {
		for code, k := range by[i] {
			if code != 0 && k > 0 && (i != 0 || snap.values[code] != "") { // code 0 is NULL; as the SQL path
				counts[i][snap.values[code]] += k
			}
		}
	}
	return out, true, nil
}

// countInMemory counts the notices passing f (which has a q) from the
// in-memory company index, as filtersInMemory does; ok is false when it
// cannot.
func (s *Store) countInMemory(ctx context.Context, tx *sql.Tx, f notice.Filter) (int64, bool, error) {
	snap, mf, ok, err := s.memoryMatches(ctx, tx, f)
	if err != nil || !ok {
		return 0, false, err
	}
	var n int64
	snap.eachPassing(&mf, func(*noticeMeta) { n++ })
	return n, true, nil
}

// memoryMatches prepares an in-memory evaluation of f: the current
// snapshot of the company index and f compiled against it, its q's
// matches read from the full-text index in one aggregate. ok is false
// when f has no q or a company filter, the index is not loaded yet (a
// request never waits for the first load) or lacks the fields, or FTS5
// alone cannot express the q.
func (s *Store) memoryMatches(ctx context.Context, tx *sql.Tx, f notice.Filter) (*companySnap, memFilter, bool, error) {
	if !filtersMemory || f.Q == nil || f.Company != nil || s.companies.snap.Load() == nil {
		return nil, memFilter{}, false, nil
	}
	snap, err := s.companies.current(ctx, s.read)
	if err != nil || !snap.fields {
		return nil, memFilter{}, false, err
	}
	mf := snap.compileFilter(f)
	var ok bool
	if mf.q, ok, err = fullTextMatches(ctx, tx, f.Q, snap.maxSeq); err != nil || !ok {
		return nil, memFilter{}, false, err
	}
	return snap, mf, true, nil
}

// eachPassing calls fn with every notice in mf.q that passes mf.
func (c *companySnap) eachPassing(mf *memFilter, fn func(*noticeMeta)) {
	for w, word := range mf.q {
		for word != 0 {
			bit := bits.TrailingZeros64(word)
			word &= word - 1
			seq := int64(w)*64 + int64(bit)
			if seq >= int64(len(c.notes)) {
				return
			}
			if m := &c.notes[seq]; mf.passes(seq, m) {
				fn(m)
			}
		}
	}
}

// Stats counts the matching notices grouped by one field. Buckets come
// unordered (notice.FinishStats orders them and fills empty months);
// notices without an appointment_type form no bucket. Without q or a
// company the counts come from notice_counts.
func (s *Store) Stats(ctx context.Context, q notice.StatsQuery) (notice.Stats, error) {
	var key, countsKey string
	switch q.GroupBy {
	case "month", "":
		key, countsKey = "substr(n.published_date, 1, 7)", "month"
	case "appointment_type", "notice_purpose", "state", "notice_code":
		key, countsKey = "n."+q.GroupBy+" COLLATE BINARY", q.GroupBy
	default:
		return notice.Stats{}, errs.New(errs.InvalidGroupBy, "group_by %q is not one of %s", q.GroupBy, strings.Join(notice.GroupByKeys, ", "))
	}
	out := notice.Stats{GroupBy: q.GroupBy, Data: []notice.Bucket{}}
	if out.GroupBy == "" {
		out.GroupBy = "month"
	}
	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("sqlite: stats: %w", err)
	}
	defer tx.Rollback()
	buckets := map[string]int64{}
	add := func(vals []sql.NullString, n int64) {
		out.Total += n
		k := vals[0]
		if !k.Valid || (countsKey == "appointment_type" && k.String == "") {
			return
		}
		// By exact spelling; folded below.
		buckets[k.String] += n
	}
	if sp, ok := countable(q.Filter); ok {
		counted := countsKey
		if countsKey != "month" {
			counted += " COLLATE BINARY" // by exact spelling (migration 0010)
		}
		err = groupCounts(ctx, tx, q.Filter, sp, grouping{counts: counted + ", sum(n)", notices: key + ", count(*)", ncols: 1}, add)
	} else {
		from, args := matchedNotices(filterCond(q.Filter))
		err = func() error {
			rows, err := tx.QueryContext(ctx, "SELECT "+key+", count(*) FROM "+from+" GROUP BY 1", args...)
			if err != nil {
				return searchError(err)
			}
			defer rows.Close()
			vals := make([]sql.NullString, 1)
			var n int64
			for rows.Next() {
				if err := rows.Scan(&vals[0], &n); err != nil {
					return err
				}
				add(vals, n)
			}
			return searchError2(rows.Err())
		}()
	}
	if err != nil {
		return notice.Stats{}, err
	}
	if out.GroupBy != "month" {
		out.Data = notice.FoldedBuckets(buckets)
		return out, nil
	}
	for k, n := range buckets {
		out.Data = append(out.Data, notice.Bucket{Key: k, Count: n})
	}
	sort.Slice(out.Data, func(i, j int) bool { return out.Data[i].Key < out.Data[j].Key })
	return out, nil
}

// IndexStatus reports the number of notices, the latest notice_seq and the
// latest published_date.
func (s *Store) IndexStatus(ctx context.Context) (notice.IndexStatus, error) {
	var st notice.IndexStatus
	var latest sql.NullString
	err := s.read.QueryRowContext(ctx, `SELECT
		(SELECT coalesce(sum(n), 0) FROM notice_counts),
		coalesce((SELECT max(seq) FROM notices), 0),
		(SELECT published_date FROM notices ORDER BY published_date DESC LIMIT 1)`).Scan(&st.Notices, &st.LatestNoticeSeq, &latest)
	if err != nil {
		return st, fmt.Errorf("sqlite: index status: %w", err)
	}
	st.LatestPublishedDate = ptr(latest)
	return st, nil
}
