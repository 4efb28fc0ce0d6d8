package redisstore

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/matcher"
)

// regLookup is what the register in Redis says of one identifier.
type regLookup struct {
	acn    string   // the company's ACN: the ACN itself, or the register's for an ABN ("" for none)
	known  bool     // the register knows it
	others []string // the values whose notices count as its counterparts' (an ACN's register ABNs, an ABN's register ACNs)
}

// registerLookups reads what register generation v in Redis says of each
// identifier, in one pipelined round trip.
func (s *Store) registerLookups(ctx context.Context, ids []ident.ID, v string) ([]regLookup, error) {
	reg := register{s: s, v: v}
	var acns, abns []string
	for _, id := range ids {
		if id.Kind == ident.ACN {
			acns = append(acns, id.Value)
		} else {
			abns = append(abns, id.Value)
		}
	}
	var companies func() []regCompany
	var acnsOf func() [][]string
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		companies, acnsOf = reg.queueCompanies(ctx, p, acns), reg.queueACNsOf(ctx, p, abns)
		return nil
	})
	if err != nil {
		return nil, s.fail("look up identifiers", err)
	}
	cos, abnACNs := companies(), acnsOf()
	found := make([]regLookup, len(ids))
	for i, id := range ids {
		if id.Kind == ident.ACN {
			found[i], cos = regLookup{acn: id.Value, known: cos[0].named, others: cos[0].abns}, cos[1:]
		} else {
			acn := primaryACN(id.Value, abnACNs[0])
			found[i], abnACNs = regLookup{acn: acn, known: acn != "", others: abnACNs[0]}, abnACNs[1:]
		}
	}
	return found, nil
}

// registerMoved is the register generation a screen is made again from:
// the names it read may not be those of the generation it used.
type registerMoved string

func (m registerMoved) Error() string {
	return "redisstore: the screen's names may be register generation " + string(m) + "'s"
}

// maxRegisterTries is how many times a screen is made again from another
// register generation before it gives up.
const maxRegisterTries = 3

// sameRegister checks, after a screen read names from the notice store,
// that they are register generation v's, the one it used for the rest
// (docs/redis.md, "Register and notice sets"), or answers registerMoved.
// The notice store moves to a new register before Redis switches
// {ns}:reg:v, and it does so only while {ns}:reg:pending names that load,
// so read after the names: with no marker, or one naming v, reg:v still v
// says no load committed anywhere since v was read; with another load's
// marker, the register alias not yet on its index says the names were
// read before that load's swap, and on it, that they may be the load's.
func (s *Store) sameRegister(ctx context.Context, v string) error {
	vals, err := s.rdb.MGet(ctx, s.key(regKey, "v"), s.key(regKey, "pending")).Result()
	if err != nil {
		return s.fail("check the screen's register generation", err)
	}
	live, _ := vals[0].(string)
	var p PendingRegister
	if raw, ok := vals[1].(string); ok && json.Unmarshal([]byte(raw), &p) == nil && p.Version != "" && p.Version != v {
		if ri, ok := s.source.(RegisterIndexer); ok {
			indices, err := ri.RegisterIndices(ctx)
			if err != nil {
				return err
			}
			if slices.Contains(indices, p.Index) {
				return registerMoved(p.Version)
			}
		}
	}
	if live != v && p.Version != v {
		return registerMoved(live)
	}
	return nil
}

// summaryView is what a screen's answer reads of the notices: the
// summaries of the copy's slab passing a filter without q or company,
// decided on their coded fields, or the notices passing a filter with q or
// company (passed), decoded before the copy's lock is released.
type summaryView struct {
	f      notice.Filter
	slab   *summarySlab
	memo   []int8                   // per tuple of slab: 0 not yet decided, 1 passes, -1 fails
	passed map[int64]*notice.Notice // nil: decided on the coded fields
}

func (v *summaryView) passes(seq int64) bool {
	if v.passed != nil {
		return v.passed[seq] != nil
	}
	if v.slab.where(seq) == 0 {
		return false
	}
	t := v.slab.tupleOf[seq]
	if v.memo[t] == 0 {
		var n notice.Notice
		v.slab.decodeCodes(v.slab.tuples[t], &n, new(string))
		v.memo[t] = -1
		if matcher.FilterMatches(v.f, &n, nil) {
			v.memo[t] = 1
		}
	}
	return v.memo[t] > 0
}

// purpose returns the notice purpose of seq, which passes.
func (v *summaryView) purpose(seq int64) string {
	if v.passed != nil {
		return v.passed[seq].NoticePurpose
	}
	return v.slab.dict[v.slab.tuples[v.slab.tupleOf[seq]][3]]
}

// publishedAt returns the published instant of seq, which passes.
func (v *summaryView) publishedAt(seq int64) string {
	if v.passed != nil {
		return v.passed[seq].PublishedAt
	}
	return read(v.slab.chunks, v.slab.where(seq)).str[1]
}

// latest returns seq, which passes, as a notice: decoded into n (the zero
// Notice) and ptrs unless it was already.
func (v *summaryView) latest(seq int64, n *notice.Notice, ptrs *[3]string) *notice.Notice {
	if v.passed != nil {
		return v.passed[seq]
	}
	v.slab.decode(seq, n, ptrs)
	return n
}

// screenAnswer fills res from what a screen found of its identifiers (l)
// and the summaries passing its filter (v), decoding as little as it can
// (docs/redis.md, "The replica's in-memory copy"); fillNames adds names.
func screenAnswer(l *screenLookup, v *summaryView, res *watch.ScreenResult) {
	withNotices, known := 0, 0 // upper bounds of the matched and unmatched
	for i := range l.items {
		if o := &l.items[i]; o.to > o.from {
			withNotices++
		} else if o.has(itemInRegister) {
			known++
		}
	}
	res.Matched = slices.Grow(res.Matched, withNotices)
	res.Unmatched = slices.Grow(res.Unmatched, known+withNotices)
	res.UnmatchedCompanies = slices.Grow(res.UnmatchedCompanies, known+withNotices)
	res.Unresolved = slices.Grow(res.Unresolved, len(l.items)-withNotices-known)
	strs := make([]string, 0, 4*withNotices) // what the answers point to
	point := func(s string) *string {
		strs = append(strs, s)
		return &strs[len(strs)-1]
	}
	var purposes []string // one identifier's, reused
	for i := range l.items {
		o := &l.items[i]
		a := l.arenas[o.arena]
		own, theirs := a[o.from:o.mid:o.mid], a[o.mid:o.to:o.to]
		count := 0
		best, insolvency := newest{seq: -1}, newest{seq: -1}
		purposes = purposes[:0]
		for li, seqs := range [2][]int64{own, theirs} {
			for _, q := range seqs {
				if (li == 1 && slices.Contains(own, q)) || !v.passes(q) {
					continue // carries both identifiers (counted once), or filtered out
				}
				count++
				best.offer(q, v)
				p := v.purpose(q)
				if p != "" && !slices.Contains(purposes, p) {
					purposes = append(purposes, p)
				}
				if !notice.EqualFoldASCII(p, notice.DeregistrationPurpose) {
					insolvency.offer(q, v)
				}
			}
		}
		self := l.ids[i].Value
		switch {
		case count == 0 && !o.has(itemInRegister) && len(own) == 0:
			res.Unresolved = append(res.Unresolved, self)
			continue
		case count == 0: // known to the register or a notice: unmatched
			u := watch.UnmatchedCompany{Identifier: self}
			if acn := l.acn(i); acn != "" {
				u.ACN = &acn
			}
			res.Unmatched, res.UnmatchedCompanies = append(res.Unmatched, self), append(res.UnmatchedCompanies, u)
			continue
		}
		var latest, in notice.Notice
		var ptrs, inPtrs [3]string
		n := v.latest(best.seq, &latest, &ptrs)
		m := watch.Matched{Identifier: self, NoticeCount: count, LatestNotice: latestOf(n, point), NoticePurposes: append([]string{}, purposes...)}
		slices.Sort(m.NoticePurposes)
		// For an ABN the register's ACN, else the latest notice's when that
		// notice carries the ABN.
		switch acn := l.acn(i); {
		case acn != "":
			m.ACN = point(acn)
		case l.ids[i].Kind == ident.ABN && n.ABN != nil && *n.ABN == self && n.ACN != nil:
			m.ACN = point(*n.ACN)
		}
		if n.CompanyName != "" { // fillNames puts in the register's; no name anywhere is null, as the embedded store answers
			m.CompanyName = point(n.CompanyName)
		}
		if insolvency.seq >= 0 {
			ln := latestOf(v.latest(insolvency.seq, &in, &inPtrs), point)
			m.Insolvency, m.LatestInsolvencyNotice = true, &ln
		}
		res.Matched = append(res.Matched, m)
	}
	res.Counts.Matched, res.Counts.Unmatched, res.Counts.Unresolved = len(res.Matched), len(res.Unmatched), len(res.Unresolved)
}

// newest is the newest of a company's passing notices offered so far
// (seq -1: none): the latest publication, ties by higher seq; published
// instants are read only to choose between two.
type newest struct {
	seq int64
	at  string // seq's published instant once read
}

func (b *newest) offer(q int64, v *summaryView) {
	if b.seq < 0 {
		b.seq = q
		return
	}
	if b.at == "" {
		b.at = v.publishedAt(b.seq)
	}
	if at := v.publishedAt(q); at > b.at || (at == b.at && q > b.seq) {
		b.seq, b.at = q, at
	}
}

// latestOf is what a match shows of its notice n, the strings it points
// to made by point.
func latestOf(n *notice.Notice, point func(string) *string) watch.LatestNotice {
	ln := watch.LatestNotice{ID: n.ID, Seq: n.Seq, PublishedDate: n.PublishedDate, NoticeType: n.NoticeType, NoticePurpose: n.NoticePurpose}
	if n.AppointmentType != nil {
		ln.AppointmentType = point(*n.AppointmentType)
	}
	return ln
}
