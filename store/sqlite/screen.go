package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"noticesd/ident"
	"noticesd/notice"
	"noticesd/watch"
)

// screenFilter is filterCond for queries that join notices n with other
// tables: a full-text part becomes a seq IN (...) term instead of a join
// with notices_fts, so FROM stays "notices n".
func screenFilter(f notice.Filter) cond {
	c := filterCond(f)
	if c.match != "" {
		c.add("n.seq IN (SELECT rowid FROM notices_fts WHERE notices_fts MATCH ?)", c.match)
		c.match = ""
	}
	return c
}

// Screen is the bulk screen of POST /v1/match. ids are normalised and
// distinct. Each lands in exactly one list, in the order given:
//   - Matched: the company has at least one notice passing f (notices
//     carrying the identifier, or the other identifier the register holds
//     for the company: ACN -> its ABNs, ABN -> its ACNs, as in the company
//     view); with the company's ACN (the identifier itself for an ACN; for
//     an ABN the register's ACN, else the ACN on its latest notice when that
//     notice carries the ABN, else null), its name (the register's current
//     name, else the latest notice's company_name), the number of such
//     notices and the latest of them (newest published_at, ties by higher
//     notice_seq);
//   - Unmatched: known to the register or to any notice (also one that f
//     rejects), with no notice passing f;
//   - Unresolved: unknown to both the register and the notices (an
//     identifier with a bad check digit that appears on a notice is known).
//
// Which identifiers have notices is answered by the in-memory company index;
// SQL reads only the candidate notices (when f filters) and the details of
// the matched ones.
func (s *Store) Screen(ctx context.Context, ids []ident.ID, f notice.Filter) (watch.ScreenResult, error) {
	res := watch.ScreenResult{Matched: []watch.Matched{}, Unmatched: []string{}, Unresolved: []string{}}
	res.Counts.Submitted = len(ids)
	if len(ids) == 0 {
		return res, nil
	}
	snap, err := s.companies.current(ctx, s.read)
	if err != nil {
		return res, err
	}
	found := make([]screenFound, len(ids))
	var all []int64 // every identifier's seqs, back to back (one allocation)
	for i, id := range ids {
		found[i], all = snap.screen(id.Value, all)
	}
	for i := range found {
		found[i].seqs = all[found[i].from:found[i].to:found[i].to]
	}

	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("sqlite: screen: %w", err)
	}
	defer tx.Rollback()
	var passing map[int64]bool // nil: every notice passes
	if !filtersNothing(f) && len(all) > 0 {
		if passing, err = screenPassing(ctx, tx, all, f); err != nil {
			return res, err
		}
	}
	hits := map[int]*screenHit{}
	for i := range found {
		fd := &found[i]
		h := screenHit{latest: -1, acn: fd.acn}
		for _, seq := range fd.seqs {
			if passing != nil && !passing[seq] {
				continue
			}
			h.count++
			if h.latest < 0 || laterNotice(snap, seq, h.latest) {
				h.latest = seq
			}
		}
		if h.count > 0 {
			hits[i] = &h
		}
	}
	if err := screenDetails(ctx, tx, snap, hits); err != nil {
		return res, err
	}
	for i, id := range ids {
		switch {
		case hits[i] != nil:
			res.Matched = append(res.Matched, hits[i].matched(id.Value))
		case found[i].known:
			res.Unmatched = append(res.Unmatched, id.Value)
		default:
			res.Unresolved = append(res.Unresolved, id.Value)
		}
	}
	res.Counts.Matched = len(res.Matched)
	res.Counts.Unmatched = len(res.Unmatched)
	res.Counts.Unresolved = len(res.Unresolved)
	return res, nil
}

// filtersNothing reports whether every notice passes f.
func filtersNothing(f notice.Filter) bool {
	return f.IncludeDeregistration && f.Q == nil && f.From == "" && f.To == "" && f.Company == nil &&
		len(f.AppointmentType) == 0 && len(f.NoticePurpose) == 0 && len(f.NoticeCode) == 0 &&
		len(f.State) == 0 && len(f.Status) == 0
}

// laterNotice reports whether notice a comes after b in publication order.
func laterNotice(c *companySnap, a, b int64) bool {
	oa, ob := c.orderOf(a), c.orderOf(b)
	if oa != ob {
		return oa > ob
	}
	return a > b
}

// screenFound is what the company index knows of one identifier.
type screenFound struct {
	known    bool    // the register or a notice holds it
	acn      *string // the company's ACN per the register (or itself, for an ACN)
	from, to int     // its seqs in the shared slice
	seqs     []int64 // the company's notices, distinct
}

// screen looks one normalised identifier up: its own notices and those of
// the other identifier(s) the register holds for its company. It appends
// the company's distinct notice seqs to all and records where they are.
func (c *companySnap) screen(v string, all []int64) (screenFound, []int64) {
	var fd screenFound
	var lists [4][]int64
	n := 0
	if key, ok := parseDigits([]byte(v), 9); ok {
		acn := uint32(key)
		lists[0] = c.byACN.get(key)
		_, inRegister := c.findACN(acn)
		fd.known = inRegister || len(lists[0]) > 0
		fd.acn = &v
		for _, abn := range c.abnsOf(acn) {
			if n < len(lists)-1 {
				n++
				lists[n] = c.byABN.get(abn)
			}
		}
	} else if key, ok := parseDigits([]byte(v), 11); ok {
		lists[0] = c.byABN.get(key)
		acns := c.acnsOf(key)
		fd.known = len(acns) > 0 || len(lists[0]) > 0
		if len(acns) > 0 {
			a := acnString(acns[0])
			fd.acn = &a
		}
		for _, acn := range acns {
			if n < len(lists)-1 {
				n++
				lists[n] = c.byACN.get(uint64(acn))
			}
		}
	}
	fd.from = len(all)
	for _, l := range lists[:n+1] {
		all = append(all, l...)
	}
	if mine := all[fd.from:]; len(mine) > len(lists[0]) {
		slices.Sort(mine)
		all = all[:fd.from+len(slices.Compact(mine))]
	}
	fd.to = len(all)
	return fd, all
}

// screenPassing returns which of the candidate notices pass f.
func screenPassing(ctx context.Context, tx *sql.Tx, seqs []int64, f notice.Filter) (map[int64]bool, error) {
	seqs = slices.Clone(seqs)
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	b, err := json.Marshal(seqs)
	if err != nil {
		return nil, err
	}
	c := screenFilter(f)
	c.add("n.seq IN (SELECT value FROM json_each(?))", string(b))
	where, args := c.where()
	rows, err := tx.QueryContext(ctx, "SELECT n.seq FROM notices n"+where, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: screen filters: %w", searchError(err))
	}
	defer rows.Close()
	out := make(map[int64]bool, len(seqs))
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, err
		}
		out[seq] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: screen filters: %w", searchError(err))
	}
	return out, nil
}

// screenHit is what the screen found for one matched identifier.
type screenHit struct {
	count  int
	latest int64
	acn    *string
	name   *string
	notice watch.LatestNotice
	// The latest notice's own identifiers and name, for fallbacks.
	noticeACN, noticeABN *string
	noticeName           string
}

func (h *screenHit) matched(v string) watch.Matched {
	m := watch.Matched{Identifier: v, ACN: h.acn, CompanyName: h.name, NoticeCount: h.count, LatestNotice: h.notice}
	if m.ACN == nil && h.noticeACN != nil && h.noticeABN != nil && *h.noticeABN == v {
		m.ACN = h.noticeACN
	}
	if m.CompanyName == nil && h.noticeName != "" {
		name := h.noticeName
		m.CompanyName = &name
	}
	return m
}

// screenDetails reads the latest notice of each matched identifier and the
// register's current name of its ACN (from the company index when it has
// it), in seq order for locality.
func screenDetails(ctx context.Context, tx *sql.Tx, snap *companySnap, hits map[int]*screenHit) error {
	if len(hits) == 0 {
		return nil
	}
	// [seq, pos, acn whose name SQL must read (null when known or none)]
	items := make([][3]any, 0, len(hits))
	for pos, h := range hits {
		var acn any
		if h.acn != nil {
			if v, ok := parseDigits([]byte(*h.acn), 9); ok {
				if name, ok := snap.names[uint32(v)]; ok {
					h.name = &name
				} else {
					acn = *h.acn
				}
			}
		}
		items = append(items, [3]any{h.latest, pos, acn})
	}
	slices.SortFunc(items, func(a, b [3]any) int { return cmpU(uint64(a[0].(int64)), uint64(b[0].(int64))) })
	b, err := json.Marshal(items)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `WITH m(seq, pos, acn) AS MATERIALIZED (
			SELECT value->>0, value->>1, value->>2 FROM json_each(?))
		SELECT m.pos,
			coalesce(
				(SELECT r.company_name FROM register r WHERE r.acn = m.acn AND r.current_name_indicator IN ('Y', 'y') ORDER BY r.rowid LIMIT 1),
				(SELECT r.company_name FROM register r WHERE r.acn = m.acn ORDER BY r.rowid LIMIT 1)),
			n.id, n.seq, n.published_date, n.notice_type, n.notice_purpose, n.appointment_type,
			n.acn, n.abn, n.company_name
		FROM m CROSS JOIN notices n WHERE n.seq = m.seq`, string(b))
	if err != nil {
		return fmt.Errorf("sqlite: screen details: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			pos                    int
			name, appt, nACN, nABN sql.NullString
			ln                     watch.LatestNotice
			noticeName             string
		)
		if err := rows.Scan(&pos, &name, &ln.ID, &ln.Seq, &ln.PublishedDate, &ln.NoticeType,
			&ln.NoticePurpose, &appt, &nACN, &nABN, &noticeName); err != nil {
			return err
		}
		h := hits[pos]
		if h == nil {
			continue
		}
		ln.AppointmentType = ptr(appt)
		h.notice = ln
		if name.Valid {
			h.name = ptr(name)
		}
		h.noticeACN, h.noticeABN, h.noticeName = ptr(nACN), ptr(nABN), noticeName
	}
	return rows.Err()
}
