package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
)

// Counting from notice_counts (migrations/0001_init.sql): notices per month
// and combination of the filter fields, kept exact by triggers. A filter
// without q and without a company is answered from the whole months of its
// date range there, plus the notices of the days that cover part of a
// month (at most two partial months), counted from the covering indexes.

// monthSpan is a from/to range split into whole months and partial ones.
type monthSpan struct {
	// empty is set when the range holds no day at all (from > to).
	empty bool
	// whole is set when some whole months are in range: from and to
	// ("YYYY-MM", inclusive; "" is open).
	whole    bool
	from, to string
	// edges are the inclusive date ranges of the partial months.
	edges [][2]string
}

// afterEveryMonth sorts after every YYYY-MM month key.
const afterEveryMonth = "9999-13"

// splitSpan splits the inclusive date range [from, to] ("" open). ok is
// false when a bound is not a YYYY-MM-DD date.
func splitSpan(from, to string) (monthSpan, bool) {
	var sp monthSpan
	var f, t time.Time
	var err error
	if from != "" {
		if f, err = time.Parse(notice.DateLayout, from); err != nil {
			return sp, false
		}
	}
	if to != "" {
		if t, err = time.Parse(notice.DateLayout, to); err != nil {
			return sp, false
		}
	}
	if from != "" && to != "" && from > to {
		sp.empty = true
		return sp, true
	}
	month := func(d time.Time) string { return d.Format("2006-01") }
	first := func(d time.Time) time.Time { return time.Date(d.Year(), d.Month(), 1, 0, 0, 0, 0, time.UTC) }
	last := func(d time.Time) time.Time { return first(d).AddDate(0, 1, -1) }
	date := func(d time.Time) string { return d.Format(notice.DateLayout) }

	if from != "" && to != "" && month(f) == month(t) && !(f.Day() == 1 && t.Equal(last(t))) {
		sp.edges = [][2]string{{from, to}}
		return sp, true
	}
	sp.whole = true
	if from != "" {
		if f.Day() == 1 {
			sp.from = month(f)
		} else {
			sp.from = month(first(f).AddDate(0, 1, 0))
			if f.Year() == 9999 && f.Month() == time.December {
				// No whole month follows December 9999 ("10000-01"
				// would sort before every month): none is counted.
				sp.from = afterEveryMonth
			}
			sp.edges = append(sp.edges, [2]string{from, date(last(f))})
		}
	}
	if to != "" {
		if t.Equal(last(t)) {
			sp.to = month(t)
		} else {
			sp.to = month(first(t).AddDate(0, -1, 0))
			sp.edges = append(sp.edges, [2]string{date(first(t)), to})
		}
	}
	if sp.from != "" && sp.to != "" && sp.from > sp.to {
		sp.whole, sp.from, sp.to = false, "", ""
	}
	return sp, true
}

// countable reports whether f's counts can come from notice_counts, and
// its date range split.
func countable(f notice.Filter) (monthSpan, bool) {
	if f.Q != nil || f.Company != nil {
		return monthSpan{}, false
	}
	return splitSpan(f.From, f.To)
}

// countsWhere is the WHERE clause (with keyword) on notice_counts for f over
// the whole months of sp.
func countsWhere(f notice.Filter, sp monthSpan) (string, []any) {
	var c cond
	if !f.IncludeDeregistration {
		c.add("is_dereg = 0")
	}
	in := func(column string, values []string) {
		if len(values) == 0 {
			return
		}
		args := make([]any, len(values))
		for i, v := range values {
			args[i] = v
		}
		c.add(column+" IN ("+placeholders(len(values))+")", args...)
	}
	in("appointment_type", f.AppointmentType)
	if len(f.AppointmentType) > 0 {
		c.add("appointment_type <> ''") // '' stands for none, which no value names
	}
	in("notice_purpose", f.NoticePurpose)
	in("notice_code", f.NoticeCode)
	in("state", f.State)
	in("status", f.Status)
	if sp.from != "" {
		c.add("month >= ?", sp.from)
	}
	if sp.to != "" {
		c.add("month <= ?", sp.to)
	}
	if len(c.terms) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(c.terms, " AND "), c.args
}

// edgeFilters returns f restricted to each partial month of sp.
func edgeFilters(f notice.Filter, sp monthSpan) []notice.Filter {
	out := make([]notice.Filter, len(sp.edges))
	for i, e := range sp.edges {
		out[i] = f
		out[i].From, out[i].To = e[0], e[1]
	}
	return out
}

// countFiltered counts the notices passing f from notice_counts; ok is false
// when f has a q or a company (count those from the notices).
func countFiltered(ctx context.Context, tx *sql.Tx, f notice.Filter) (total int64, ok bool, err error) {
	sp, ok := countable(f)
	if !ok {
		return 0, false, nil
	}
	if sp.empty {
		return 0, true, nil
	}
	if sp.whole {
		where, args := countsWhere(f, sp)
		var n sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT sum(n) FROM notice_counts"+where, args...).Scan(&n); err != nil {
			return 0, true, fmt.Errorf("sqlite: count notices: %w", err)
		}
		total = n.Int64
	}
	for _, ef := range edgeFilters(f, sp) {
		c := filterCond(ef)
		where, args := c.where()
		var n int64
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+c.from()+where, args...).Scan(&n); err != nil {
			return 0, true, fmt.Errorf("sqlite: count notices: %w", err)
		}
		total += n
	}
	return total, true, nil
}

// grouping is a grouped count: the select list over notice_counts (whole
// months) and over the notices n (partial months), each giving the
// grouping columns then the count, grouped by GROUP BY 1..ncols.
type grouping struct {
	counts  string
	notices string
	ncols   int
}

// groupCounts runs g for f over sp (see countable) and calls add for each
// row: the grouping values, then the count.
func groupCounts(ctx context.Context, tx *sql.Tx, f notice.Filter, sp monthSpan, g grouping, add func(vals []sql.NullString, n int64)) error {
	groupBy := make([]string, g.ncols)
	for i := range groupBy {
		groupBy[i] = fmt.Sprint(i + 1)
	}
	group := " GROUP BY " + strings.Join(groupBy, ", ")
	run := func(q string, args []any) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return searchError(err)
		}
		defer rows.Close()
		vals := make([]sql.NullString, g.ncols)
		dest := make([]any, g.ncols+1)
		for i := range vals {
			dest[i] = &vals[i]
		}
		var n int64
		dest[g.ncols] = &n
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			add(vals, n)
		}
		return searchError2(rows.Err())
	}
	if sp.empty {
		return nil
	}
	if sp.whole {
		where, args := countsWhere(f, sp)
		if err := run("SELECT "+g.counts+" FROM notice_counts"+where+group, args); err != nil {
			return err
		}
	}
	for _, ef := range edgeFilters(f, sp) {
		c := filterCond(ef)
		where, args := c.where()
		if err := run("SELECT "+g.notices+" FROM "+c.from()+where+group, args); err != nil {
			return err
		}
	}
	return nil
}

// searchError2 is searchError that keeps nil.
func searchError2(err error) error {
	if err == nil {
		return nil
	}
	return searchError(err)
}
