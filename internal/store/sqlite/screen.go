package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/watch"
)

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
// The in-memory company index answers it: which identifiers have notices,
// the filters other than q (evaluated on the index's copy of the fields,
// with the SQL filter's semantics), the latest notice and the register's
// name. SQL is used only for a q (which notices match it) and for the few
// matched companies the index holds no register name for (their latest
// notice's own name and ACN).
func (s *Store) Screen(ctx context.Context, ids []ident.ID, f notice.Filter) (watch.ScreenResult, error) {
	return s.screen(ctx, ids, f, screenMemory)
}

// screenMode chooses how much of a screen the company index answers.
type screenMode int

const (
	// screenMemory uses the index for everything it holds.
	screenMemory screenMode = iota
	// screenSQL uses the index only to find each identifier's candidate
	// notices; the filters, the latest notice and the names are read with
	// SQL. Tests check that it agrees with screenMemory.
	screenSQL
)

func (s *Store) screen(ctx context.Context, ids []ident.ID, f notice.Filter, mode screenMode) (watch.ScreenResult, error) {
	res := watch.ScreenResult{Matched: []watch.Matched{}, Unmatched: []string{}, Unresolved: []string{}, UnmatchedCompanies: []watch.UnmatchedCompany{}}
	res.Counts.Submitted = len(ids)
	if len(ids) == 0 {
		return res, nil
	}
	snap, err := s.companies.current(ctx, s.read)
	if err != nil {
		return res, err
	}
	r := &screenRun{s: s, ctx: ctx, snap: snap, ids: ids, f: f, inMemory: mode == screenMemory && snap.fields}
	defer r.close()
	r.lookUp()
	if err := r.prepareFilter(); err != nil {
		return res, err
	}
	r.count()
	res.Matched = r.describeMatched()
	if err := r.readDetails(res.Matched); err != nil {
		return res, err
	}
	if err := r.describeInsolvency(res.Matched); err != nil {
		return res, err
	}
	res.Unmatched, res.Unresolved = r.partition()
	if res.UnmatchedCompanies, err = r.unmatchedCompanies(); err != nil {
		return res, err
	}
	res.Counts.Matched = len(res.Matched)
	res.Counts.Unmatched = len(res.Unmatched)
	res.Counts.Unresolved = len(res.Unresolved)
	return res, nil
}

// screenRun is one bulk screen in progress; screen runs its steps in order.
type screenRun struct {
	s    *Store
	ctx  context.Context
	snap *companySnap
	ids  []ident.ID
	f    notice.Filter
	// inMemory: the index holds the notices' fields, so the filters, the
	// latest notice and most names come from it.
	inMemory bool

	tx *sql.Tx // a read transaction, begun when SQL is needed

	// lookUp
	found      []screenFound
	all        []int64 // every identifier's seqs, back to back
	candidates int     // identifiers with notices, before filters

	// prepareFilter: memFiltered means mf decides; else passing (nil:
	// every notice passes).
	memFiltered bool
	mf          memFilter
	passing     bitset

	// count
	hits      []screenHit
	unmatched int
	passed    []int64 // each hit's passing seqs, back to back (hits[k].pFrom:pTo)

	// describeMatched: what SQL still has to read
	details []screenDetail
}

// readTx returns the run's read transaction, beginning it on first use.
func (r *screenRun) readTx() (*sql.Tx, error) {
	if r.tx == nil {
		var err error
		if r.tx, err = r.s.read.BeginTx(r.ctx, nil); err != nil {
			return nil, fmt.Errorf("sqlite: screen: %w", err)
		}
	}
	return r.tx, nil
}

func (r *screenRun) close() {
	if r.tx != nil {
		r.tx.Rollback()
	}
}

// lookUp finds each identifier's company and candidate notices in the
// index.
func (r *screenRun) lookUp() {
	r.found = make([]screenFound, len(r.ids))
	r.all = make([]int64, 0, len(r.ids))
	for i, id := range r.ids {
		r.found[i], r.all = r.snap.screenOne(id, r.all)
		if r.found[i].to > r.found[i].from {
			r.candidates++
		}
	}
}

// prepareFilter decides how the filters are applied: in memory when the
// index holds the fields (a q by the notices the full-text index alone
// says match it), else by SQL over the candidate notices.
func (r *screenRun) prepareFilter() error {
	r.memFiltered = r.inMemory && r.f.Company == nil
	if r.memFiltered {
		r.mf = r.snap.compileFilter(r.f)
		if r.f.Q != nil && len(r.all) > 0 {
			t, err := r.readTx()
			if err != nil {
				return err
			}
			if r.mf.q, r.memFiltered, err = fullTextMatches(r.ctx, t, r.f.Q, r.snap.maxSeq); err != nil {
				return err
			}
		}
	}
	if !r.memFiltered && !filtersNothing(r.f) && len(r.all) > 0 {
		t, err := r.readTx()
		if err != nil {
			return err
		}
		if r.passing, err = screenPassing(r.ctx, t, r.all, r.f, r.snap.maxSeq); err != nil {
			return err
		}
	}
	return nil
}

// passes reports whether the notice seq passes the filters.
func (r *screenRun) passes(seq int64, m *noticeMeta) bool {
	if r.memFiltered {
		return r.mf.passes(seq, m)
	}
	return r.passing == nil || r.passing.has(seq)
}

// count counts each identifier's passing notices and finds the latest
// (newest publication, ties by higher seq); identifiers with none are
// unmatched when known.
func (r *screenRun) count() {
	r.hits = make([]screenHit, 0, r.candidates)
	for i := range r.found {
		fd := &r.found[i]
		h := screenHit{pos: int32(i), latest: -1, pFrom: int32(len(r.passed))}
		var latestOrder int64
		for _, seq := range r.all[fd.from:fd.to] {
			m := &r.snap.notes[seq]
			if !r.passes(seq, m) {
				continue
			}
			r.passed = append(r.passed, seq)
			h.count++
			if h.latest < 0 || m.order > latestOrder || (m.order == latestOrder && seq > h.latest) {
				h.latest, latestOrder = seq, m.order
			}
		}
		h.pTo = int32(len(r.passed))
		if h.count > 0 {
			r.hits = append(r.hits, h)
		} else if fd.known {
			r.unmatched++
		}
	}
}

// describeMatched builds the matched list from what the index holds and
// notes in r.details what SQL must still read (everything but the counts
// when the index lacks the fields; otherwise only missing names).
func (r *screenRun) describeMatched() []watch.Matched {
	matched := make([]watch.Matched, len(r.hits))
	pointed := make([]string, 0, 3*len(r.hits)) // what the pointers point to, never reallocated
	point := func(s string) *string {
		pointed = append(pointed, s)
		return &pointed[len(pointed)-1]
	}
	var text []byte // generated strings (ids, ACNs) back to back
	if r.inMemory {
		text = make([]byte, 0, len(r.hits)*(len(noticeIDPrefix)+16+9))
	}
	snap := r.snap
	for k := range r.hits {
		h := &r.hits[k]
		fd := &r.found[h.pos]
		id := r.ids[h.pos]
		m := &matched[k]
		m.Identifier, m.NoticeCount = id.Value, int(h.count)
		if fd.hasACN && id.Kind == ident.ACN {
			m.ACN = point(id.Value)
		}
		if !r.inMemory {
			if fd.hasACN && id.Kind == ident.ABN {
				m.ACN = point(acnString(fd.acn))
			}
			r.details = append(r.details, screenDetail{k: k, seq: h.latest, acn: fd.acn, hasACN: fd.hasACN})
			continue
		}
		n := &snap.notes[h.latest]
		m.LatestNotice = watch.LatestNotice{Seq: h.latest, PublishedDate: snap.values[n.date],
			NoticeType: snap.values[n.typ], NoticePurpose: snap.values[n.purpose]}
		if n.appointment != 0 {
			m.LatestNotice.AppointmentType = point(snap.values[n.appointment])
		}
		h.from = int32(len(text))
		text = snap.appendNoticeID(text, h.latest)
		h.idTo = int32(len(text))
		if fd.hasACN && id.Kind == ident.ABN {
			text = appendACN(text, fd.acn)
			h.acnTo = int32(len(text))
		}
		if fd.hasACN {
			if name, ok := snap.names.get(fd.acn); ok {
				m.CompanyName = point(name)
			}
		}
		if m.CompanyName == nil {
			r.details = append(r.details, screenDetail{k: k, seq: h.latest, acn: fd.acn, hasACN: fd.hasACN})
		}
	}
	if r.inMemory {
		t := string(text) // one allocation for every generated string
		for k := range r.hits {
			h := &r.hits[k]
			matched[k].LatestNotice.ID = t[h.from:h.idTo]
			if h.acnTo > 0 {
				matched[k].ACN = point(t[h.idTo:h.acnTo])
			}
		}
	}
	return matched
}

// readDetails reads with SQL what describeMatched left to it and fills it
// in.
func (r *screenRun) readDetails(matched []watch.Matched) error {
	if len(r.details) == 0 {
		return nil
	}
	t, err := r.readTx()
	if err != nil {
		return err
	}
	if err := screenDetails(r.ctx, t, r.details); err != nil {
		return err
	}
	for i := range r.details {
		d := &r.details[i]
		m := &matched[d.k]
		if !r.inMemory {
			m.LatestNotice = d.notice
		}
		if m.ACN == nil && d.noticeACN != nil && d.noticeABN != nil && *d.noticeABN == m.Identifier {
			m.ACN = d.noticeACN
		}
		if d.name != nil {
			m.CompanyName = d.name
		} else if d.noticeName != "" {
			m.CompanyName = &d.noticeName
		}
	}
	return nil
}

// partition lists the identifiers that did not match, in the order given:
// unmatched when known, unresolved otherwise.
func (r *screenRun) partition() (unmatched, unresolved []string) {
	unmatched = make([]string, 0, r.unmatched)
	unresolved = make([]string, 0, len(r.ids)-len(r.hits)-r.unmatched)
	k := 0
	for i, id := range r.ids {
		switch {
		case k < len(r.hits) && int(r.hits[k].pos) == i:
			k++
		case r.found[i].known:
			unmatched = append(unmatched, id.Value)
		default:
			unresolved = append(unresolved, id.Value)
		}
	}
	return unmatched, unresolved
}

// filtersNothing reports whether every notice passes f.
func filtersNothing(f notice.Filter) bool {
	return f.IncludeDeregistration && f.Q == nil && f.From == "" && f.To == "" && f.Company == nil &&
		len(f.AppointmentType) == 0 && len(f.NoticePurpose) == 0 && len(f.NoticeCode) == 0 &&
		len(f.State) == 0 && len(f.Status) == 0
}

// screenFound is what the company index knows of one identifier.
type screenFound struct {
	from, to int32  // its company's notice seqs: all[from:to], distinct
	acn      uint32 // the company's ACN per the register (or itself, for an ACN)
	hasACN   bool
	known    bool // the register or a notice holds it
}

// screenOne looks one normalised identifier up: its own notices and those
// of the other identifier(s) the register holds for its company. It
// appends the company's distinct notice seqs to all and records where they
// are.
func (c *companySnap) screenOne(id ident.ID, all []int64) (screenFound, []int64) {
	fd := screenFound{from: int32(len(all))}
	switch id.Kind {
	case ident.ACN:
		key, ok := parseDigits(id.Value, 9)
		if !ok {
			break
		}
		acn := uint32(key)
		fd.acn, fd.hasACN = acn, true
		i, inRegister := c.findACN(acn)
		if inRegister && !c.busy.has(int64(i)) {
			fd.known = true // a register company without notices
			break
		}
		own := c.byACN.get(key)
		all = append(all, own...)
		fd.known = inRegister || len(own) > 0
		if inRegister && c.abnPrefix[i] != noABN {
			all = mergeSeqs(all, int(fd.from), c.byABN.get(uint64(c.abnPrefix[i])*1e9+key))
		}
		if len(c.moreABNs) > 0 {
			for _, abn := range c.moreABNs[acn] {
				all = mergeSeqs(all, int(fd.from), c.byABN.get(abn))
			}
		}
	case ident.ABN:
		key, ok := parseDigits(id.Value, 11)
		if !ok {
			break
		}
		acn := uint32(key % 1e9)
		i, inRegister := c.findACN(acn)
		inRegister = inRegister && c.abnPrefix[i] != noABN && uint64(c.abnPrefix[i]) == key/1e9
		var more []uint32 // further ACNs it resolves to
		if len(c.moreACNs) > 0 {
			more = c.moreACNs[key]
		}
		if inRegister {
			fd.acn, fd.hasACN, fd.known = acn, true, true
			if !c.busy.has(int64(i)) && len(more) == 0 {
				break // a register company without notices
			}
		}
		own := c.byABN.get(key)
		all = append(all, own...)
		fd.known = fd.known || len(own) > 0
		if inRegister {
			all = mergeSeqs(all, int(fd.from), c.byACN.get(uint64(acn)))
		}
		for _, acn := range more {
			if !fd.hasACN {
				fd.acn, fd.hasACN = acn, true
			}
			fd.known = true
			all = mergeSeqs(all, int(fd.from), c.byACN.get(uint64(acn)))
		}
	}
	fd.to = int32(len(all))
	return fd, all
}

// mergeSeqs adds the ascending seqs of more to all[from:] (ascending,
// distinct), keeping it ascending and distinct.
func mergeSeqs(all []int64, from int, more []int64) []int64 {
	if len(more) == 0 {
		return all
	}
	if len(all) == from {
		return append(all, more...)
	}
	all = append(all, more...)
	mine := all[from:]
	slices.Sort(mine)
	return all[:from+len(slices.Compact(mine))]
}

// bitset is a set of notice seqs.
type bitset []uint64

func (b bitset) has(seq int64) bool {
	i := uint64(seq) / 64
	return i < uint64(len(b)) && b[i]&(1<<(uint64(seq)%64)) != 0
}

func (b bitset) add(seq int64) { b[uint64(seq)/64] |= 1 << (uint64(seq) % 64) }

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

// screenPassing returns which of the candidate notices (seqs up to maxSeq)
// pass f, by SQL.
func screenPassing(ctx context.Context, tx *sql.Tx, seqs []int64, f notice.Filter, maxSeq int64) (bitset, error) {
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
	out := make(bitset, maxSeq/64+1)
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, err
		}
		if seq >= 0 && seq <= maxSeq {
			out.add(seq)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: screen filters: %w", searchError(err))
	}
	return out, nil
}

// screenHit is a matched identifier: its passing notices and the latest,
// and where its generated strings are in the shared text.
type screenHit struct {
	pos, count        int32 // pos in the submitted identifiers
	latest            int64
	pFrom, pTo        int32 // its passing seqs: passed[pFrom:pTo]
	from, idTo, acnTo int32 // text[from:idTo] is the latest notice's id, text[idTo:acnTo] the ACN
}

// screenDetail is what SQL reads for one matched identifier: the
// register's current name of the company's ACN, the latest notice's
// summary (used by screenSQL) and its own ACN, ABN and company name (for
// the fallbacks).
type screenDetail struct {
	k      int   // in the matched list
	seq    int64 // the latest notice
	acn    uint32
	hasACN bool

	name                 *string
	notice               watch.LatestNotice
	noticeACN, noticeABN *string
	noticeName           string
}

// screenDetails reads the details of ds, in seq order for locality.
func screenDetails(ctx context.Context, tx *sql.Tx, ds []screenDetail) error {
	// [seq, index in ds, acn whose name SQL reads (null when none)]
	items := make([][3]any, 0, len(ds))
	for j, d := range ds {
		var acn any
		if d.hasACN {
			acn = acnString(d.acn)
		}
		items = append(items, [3]any{d.seq, j, acn})
	}
	slices.SortFunc(items, func(a, b [3]any) int { return cmpU(uint64(a[0].(int64)), uint64(b[0].(int64))) })
	b, err := json.Marshal(items)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `WITH m(seq, j, acn) AS MATERIALIZED (
			SELECT value->>0, value->>1, value->>2 FROM json_each(?))
		SELECT m.j,
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
			j                      int
			name, appt, nACN, nABN sql.NullString
			ln                     watch.LatestNotice
			noticeName             string
		)
		if err := rows.Scan(&j, &name, &ln.ID, &ln.Seq, &ln.PublishedDate, &ln.NoticeType,
			&ln.NoticePurpose, &appt, &nACN, &nABN, &noticeName); err != nil {
			return err
		}
		if j < 0 || j >= len(ds) {
			continue
		}
		d := &ds[j]
		ln.AppointmentType = ptr(appt)
		d.notice, d.name = ln, ptr(name)
		d.noticeACN, d.noticeABN, d.noticeName = ptr(nACN), ptr(nABN), noticeName
	}
	return rows.Err()
}

// memFilter is a notice.Filter compiled against a snapshot's interned
// values: per field, which value codes pass (nil: any), and the notices a
// q matches. It has the SQL filter's semantics (filterCond): enumerated
// values compare ignoring ASCII case (the columns are COLLATE NOCASE), a
// NULL appointment_type fails a non-empty list, deregistration notices
// (notice_purpose Deregistration, ignoring ASCII case) fail unless
// included, from and to bound published_date inclusively as strings.
type memFilter struct {
	date, code, purpose, appointment, state, status []bool
	q                                               bitset // nil: no q
}

// compileFilter compiles f but for its q and company, which are the
// caller's part.
func (c *companySnap) compileFilter(f notice.Filter) memFilter {
	mf := memFilter{
		code:        c.passing(f.NoticeCode),
		purpose:     c.passing(f.NoticePurpose),
		appointment: c.passing(f.AppointmentType),
		state:       c.passing(f.State),
		status:      c.passing(f.Status),
	}
	if !f.IncludeDeregistration {
		if mf.purpose == nil {
			mf.purpose = make([]bool, len(c.values))
			for i := range mf.purpose {
				mf.purpose[i] = true
			}
		}
		for i, v := range c.values {
			if i > 0 && notice.EqualFoldASCII(v, notice.DeregistrationPurpose) {
				mf.purpose[i] = false
			}
		}
	}
	if f.From != "" || f.To != "" {
		mf.date = make([]bool, len(c.values))
		for i, v := range c.values {
			mf.date[i] = i > 0 && (f.From == "" || v >= f.From) && (f.To == "" || v <= f.To)
		}
	}
	return mf
}

// fullTextMatches returns the notices (seqs up to maxSeq) matching q, read
// from the full-text index in one row; ok is false when FTS5 cannot
// express q (query.FTS5), which then needs screenPassing.
func fullTextMatches(ctx context.Context, tx *sql.Tx, q query.Node, maxSeq int64) (bitset, bool, error) {
	expr, ok := query.FTS5(q)
	if !ok {
		return nil, false, nil
	}
	var list []byte
	err := tx.QueryRowContext(ctx, "SELECT coalesce(group_concat(rowid), '') FROM notices_fts WHERE notices_fts MATCH ?",
		qMatch(expr)).Scan(&list)
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: screen q: %w", searchError(err))
	}
	out := make(bitset, maxSeq/64+1)
	var seq int64
	for i, c := range list {
		if c >= '0' && c <= '9' {
			seq = seq*10 + int64(c-'0')
		}
		if c == ',' || i == len(list)-1 {
			if seq <= maxSeq {
				out.add(seq)
			}
			seq = 0
		}
	}
	return out, true, nil
}

// passing returns which value codes are in list (ASCII case folded); nil
// for an empty list. NULL (code 0) is in no list.
func (c *companySnap) passing(list []string) []bool {
	if len(list) == 0 {
		return nil
	}
	out := make([]bool, len(c.values))
	for i := 1; i < len(c.values); i++ {
		for _, x := range list {
			if notice.EqualFoldASCII(x, c.values[i]) {
				out[i] = true
				break
			}
		}
	}
	return out
}

// passes reports whether notice seq, n, passes the filter.
func (mf *memFilter) passes(seq int64, n *noticeMeta) bool {
	return (mf.q == nil || mf.q.has(seq)) &&
		(mf.purpose == nil || mf.purpose[n.purpose]) &&
		(mf.date == nil || mf.date[n.date]) &&
		(mf.code == nil || mf.code[n.code]) &&
		(mf.appointment == nil || mf.appointment[n.appointment]) &&
		(mf.state == nil || mf.state[n.state]) &&
		(mf.status == nil || mf.status[n.status])
}
