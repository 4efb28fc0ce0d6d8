package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"noticesd/errs"
	"noticesd/ident"
	"noticesd/notice"
	"noticesd/query"
)

// bm25Weights weight the full-text columns for relevance: company_name,
// notice_type, text, practitioner names and firms. A hit in the company name
// or a practitioner outranks one in the body.
const bm25Weights = "4.0, 2.0, 1.0, 2.0"

// cond is a WHERE clause under construction over notices aliased n (and
// notices_fts when match is set).
type cond struct {
	terms []string
	args  []any
	match string // FTS5 expression; "" when the search has no full-text part
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

// filterCond translates a notice.Filter. A q that FTS5 can express becomes a
// MATCH joined with the notices; one it cannot (`-foo` alone, `a OR -b`)
// becomes query.SQL's fallback, which wraps the expressible parts in
// sub-selects on the same FTS5 index, so both paths match the same tokens.
// Relevance needs the MATCH join: with the fallback it is published_desc.
func filterCond(f notice.Filter) cond {
	var c cond
	if f.Q != nil {
		if expr, ok := query.FTS5(f.Q); ok {
			c.match = expr
		} else {
			// Unqualified seq is n.seq: the fallback is only used without
			// the FTS join.
			where, args := query.SQL(f.Q, "notices_fts")
			c.add(where, args...)
		}
	}
	if !f.IncludeDeregistration {
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

// companyCond selects the notices of one company: those carrying the
// identifier, and those carrying the other identifier the register holds for
// it (ACN -> its ABNs, ABN -> its ACNs).
func companyCond(id ident.ID) (string, []any) {
	if id.Kind == ident.ABN {
		return "(n.abn = ? OR n.acn IN (SELECT acn FROM register WHERE abn = ?))", []any{id.Value, id.Value}
	}
	return "(n.acn = ? OR n.abn IN (SELECT abn FROM register WHERE acn = ? AND abn <> ''))", []any{id.Value, id.Value}
}

// orderBy returns the ORDER BY of a sort. Publication order is by
// published_date, then published_at: the same order as published_at alone
// (published_date is its Sydney date), but it lets the covering indexes,
// which lead with published_date, serve both the date range and the order.
// Relevance needs a full-text part; without one it is published_desc.
func orderBy(sortKey string, c cond) (string, error) {
	switch sortKey {
	case notice.SortPublishedDesc, "":
		return "n.published_date DESC, n.published_at DESC, n.seq DESC", nil
	case notice.SortPublishedAsc:
		return "n.published_date ASC, n.published_at ASC, n.seq DESC", nil
	case notice.SortRelevance:
		if c.match == "" {
			return "n.published_date DESC, n.published_at DESC, n.seq DESC", nil
		}
		return "bm25(notices_fts, " + bm25Weights + "), n.seq DESC", nil
	}
	return "", errs.New(errs.InvalidParameter, "sort %q is not one of %s, %s, %s", sortKey,
		notice.SortPublishedDesc, notice.SortPublishedAsc, notice.SortRelevance)
}

// Search returns one page of matching notices and the exact total.
func (s *Store) Search(ctx context.Context, q notice.SearchQuery) (notice.SearchPage, error) {
	c := filterCond(q.Filter)
	order, err := orderBy(q.Sort, c)
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
	where, args := c.where()

	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return notice.SearchPage{}, fmt.Errorf("sqlite: search: %w", err)
	}
	defer tx.Rollback()

	// Phase 1 finds the page's seqs (from the covering indexes when there is
	// no q); phase 2 reads just those rows.
	rows, err := tx.QueryContext(ctx, "SELECT n.seq FROM "+c.from()+where+" ORDER BY "+order+" LIMIT ? OFFSET ?",
		append(args, limit, offset)...)
	if err != nil {
		return notice.SearchPage{}, searchError(err)
	}
	var seqs []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			return notice.SearchPage{}, err
		}
		seqs = append(seqs, seq)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return notice.SearchPage{}, searchError(err)
	}

	var total int64
	if len(seqs) < limit && (len(seqs) > 0 || offset == 0) {
		// The last page: the total is known without counting.
		total = int64(offset + len(seqs))
	} else if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+c.from()+where, args...).Scan(&total); err != nil {
		return notice.SearchPage{}, searchError(err)
	}
	ns, err := noticesBySeq(ctx, tx, seqs)
	if err != nil {
		return notice.SearchPage{}, err
	}
	return notice.SearchPage{Notices: ns, Total: total}, nil
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
// without an appointment_type are not listed under it.
func (s *Store) Filters(ctx context.Context, f notice.Filter) (notice.FilterCounts, error) {
	c := filterCond(f)
	where, args := c.where()
	// One pass over the matching rows, grouped by all five fields at once;
	// the per-field counts are summed here.
	rows, err := s.read.QueryContext(ctx, "SELECT n.appointment_type, n.notice_purpose, n.notice_code, n.state, n.status, count(*) FROM "+
		c.from()+where+" GROUP BY 1, 2, 3, 4, 5", args...)
	if err != nil {
		return notice.FilterCounts{}, searchError(err)
	}
	defer rows.Close()
	counts := make([]map[string]int64, len(facetColumns))
	for i := range counts {
		counts[i] = map[string]int64{}
	}
	var out notice.FilterCounts
	for rows.Next() {
		var (
			appt          sql.NullString
			purpose, code string
			state, status string
			n             int64
		)
		if err := rows.Scan(&appt, &purpose, &code, &state, &status, &n); err != nil {
			return out, err
		}
		out.Total += n
		if appt.Valid {
			addFold(counts[0], appt.String, n)
		}
		addFold(counts[1], purpose, n)
		addFold(counts[2], code, n)
		addFold(counts[3], state, n)
		addFold(counts[4], status, n)
	}
	if err := rows.Err(); err != nil {
		return out, searchError(err)
	}
	out.AppointmentType = sortedCounts(counts[0])
	out.NoticePurpose = sortedCounts(counts[1])
	out.NoticeCode = sortedCounts(counts[2])
	out.State = sortedCounts(counts[3])
	out.Status = sortedCounts(counts[4])
	return out, nil
}

// addFold adds n to the count of v, merging spellings that differ only in
// case (the grouping is case-insensitive per column, but each row of the
// five-column grouping may carry its own spelling): the first spelling seen
// is kept.
func addFold(m map[string]int64, v string, n int64) {
	if _, ok := m[v]; !ok {
		for k := range m {
			if strings.EqualFold(k, v) {
				v = k
				break
			}
		}
	}
	m[v] += n
}

func sortedCounts(m map[string]int64) []notice.ValueCount {
	out := make([]notice.ValueCount, 0, len(m))
	for v, n := range m {
		out = append(out, notice.ValueCount{Value: v, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Value < out[j].Value
	})
	return out
}

// Stats counts the matching notices grouped by one field. Buckets come
// unordered (notice.FinishStats orders them and fills empty months);
// notices without an appointment_type form no bucket.
func (s *Store) Stats(ctx context.Context, q notice.StatsQuery) (notice.Stats, error) {
	var key string
	switch q.GroupBy {
	case "month", "":
		key = "substr(n.published_date, 1, 7)"
	case "appointment_type", "notice_purpose", "state", "notice_code":
		key = "n." + q.GroupBy
	default:
		return notice.Stats{}, errs.New(errs.InvalidGroupBy, "group_by %q is not one of %s", q.GroupBy, strings.Join(notice.GroupByKeys, ", "))
	}
	out := notice.Stats{GroupBy: q.GroupBy, Data: []notice.Bucket{}}
	if out.GroupBy == "" {
		out.GroupBy = "month"
	}
	c := filterCond(q.Filter)
	where, args := c.where()
	rows, err := s.read.QueryContext(ctx, "SELECT "+key+", count(*) FROM "+c.from()+where+" GROUP BY 1", args...)
	if err != nil {
		return out, searchError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k sql.NullString
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return out, err
		}
		out.Total += n
		if k.Valid {
			out.Data = append(out.Data, notice.Bucket{Key: k.String, Count: n})
		}
	}
	if err := rows.Err(); err != nil {
		return out, searchError(err)
	}
	return out, nil
}

// IndexStatus reports the number of notices, the latest notice_seq and the
// latest published_date.
func (s *Store) IndexStatus(ctx context.Context) (notice.IndexStatus, error) {
	var st notice.IndexStatus
	var latest sql.NullString
	err := s.read.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM notices),
		coalesce((SELECT max(seq) FROM notices), 0),
		(SELECT published_date FROM notices ORDER BY published_date DESC LIMIT 1)`).Scan(&st.Notices, &st.LatestNoticeSeq, &latest)
	if err != nil {
		return st, fmt.Errorf("sqlite: index status: %w", err)
	}
	st.LatestPublishedDate = ptr(latest)
	return st, nil
}
