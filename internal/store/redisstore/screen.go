package redisstore

import (
	"context"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/matcher"
)

// Screen is the bulk screen of POST /v1/match, with the embedded store's
// semantics (see sqlite.Store.Screen): each normalised, distinct
// identifier lands in Matched, Unmatched or Unresolved, in the order
// given. The notices come from the replica's in-memory copy
// (screencopy.go: loaded from the notice source, following the publish
// log; a screen that finds it not loaded waits for its load); the
// register from the copy too when it holds a current one
// (Options.ScreenCopy: one round trip to Redis), else from Redis
// (registerLookups: the generation, then one pipelined round trip
// whatever the number of identifiers). Filters are applied to the
// summaries with package matcher's semantics; a q needs the notices'
// text, so the candidates passing the other filters are read from the
// NoticeSource and matched there.
func (s *Store) Screen(ctx context.Context, ids []ident.ID, f notice.Filter) (watch.ScreenResult, error) {
	res := watch.ScreenResult{Matched: []watch.Matched{}, Unmatched: []string{}, Unresolved: []string{}, UnmatchedCompanies: []watch.UnmatchedCompany{}}
	res.Counts.Submitted = len(ids)
	if len(ids) == 0 {
		return res, nil
	}
	return res, s.screenCopy.screen(ctx, ids, f, &res)
}

// screenItem is what a screen found of one identifier.
type screenItem struct {
	self        string
	acn         string // the company's ACN: the ACN itself, or the register's for an ABN
	inRegister  bool
	own, theirs []int64 // seqs of the notices carrying self / others
}

// registerLookups finds each identifier's register counterparts in Redis,
// in one pipelined round trip: the items without their notices, and for
// each the values whose notices count as its counterparts' (an ACN's
// register ABNs, an ABN's register ACNs).
func (s *Store) registerLookups(ctx context.Context, ids []ident.ID) ([]screenItem, [][]string, error) {
	reg, err := s.currentRegister(ctx)
	if err != nil {
		return nil, nil, err
	}
	var acns, abns []string
	for _, id := range ids {
		if id.Kind == ident.ACN {
			acns = append(acns, id.Value)
		} else {
			abns = append(abns, id.Value)
		}
	}
	var (
		companies func() []regCompany
		acnsOf    func() [][]string
	)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		companies = reg.queueCompanies(ctx, p, acns)
		acnsOf = reg.queueACNsOf(ctx, p, abns)
		return nil
	})
	if err != nil {
		return nil, nil, s.fail("look up identifiers", err)
	}
	cos, abnACN := companies(), acnsOf()
	found := make([]screenItem, len(ids))
	counterparts := make([][]string, len(ids))
	ai, bi := 0, 0
	for i, id := range ids {
		o := screenItem{self: id.Value}
		if id.Kind == ident.ACN {
			counterparts[i] = cos[ai].abns
			o.acn, o.inRegister = id.Value, cos[ai].named
			ai++
		} else {
			counterparts[i] = abnACN[bi]
			o.acn = primaryACN(id.Value, counterparts[i])
			o.inRegister = o.acn != ""
			bi++
		}
		found[i] = o
	}
	return found, counterparts, nil
}

// fillRegisterNames puts in each match and each unmatched company of res
// (in the order of found) the register's current name of its company
// (acn), read from the notice source, when it has one; a match without
// keeps its latest notice's.
func (s *Store) fillRegisterNames(ctx context.Context, found []screenItem, res *watch.ScreenResult) error {
	var acns []string
	var at []**string // the names to set
	k, u := 0, 0
	for i := range found {
		o := &found[i]
		var name **string
		switch {
		case k < len(res.Matched) && res.Matched[k].Identifier == o.self:
			name = &res.Matched[k].CompanyName
			k++
		case u < len(res.UnmatchedCompanies) && res.UnmatchedCompanies[u].Identifier == o.self:
			name = &res.UnmatchedCompanies[u].CompanyName
			u++
		default:
			continue
		}
		if o.acn != "" && o.inRegister {
			acns, at = append(acns, o.acn), append(at, name)
		}
	}
	names, err := s.registerNames(ctx, acns)
	if err != nil {
		return err
	}
	for j, name := range at {
		if names[j] != "" {
			*name = &names[j]
		}
	}
	return nil
}

// screenResult fills res from what was found of each identifier;
// summaries decodes the summaries of seqs into into (pointer fields into
// ptrs) and marks in have the seqs that have one, from Redis or the copy.
func (s *Store) screenResult(ctx context.Context, ids []ident.ID, found []screenItem, f notice.Filter,
	summaries func(seqs []int64, into []notice.Notice, ptrs [][3]string, have []bool) error, res *watch.ScreenResult) error {
	total := 0
	for _, o := range found {
		total += len(o.own) + len(o.theirs)
	}
	seqs := make([]int64, 0, total)
	for _, o := range found {
		seqs = append(seqs, o.own...)
		seqs = append(seqs, o.theirs...)
	}
	seqs = sortedSet(seqs)
	decoded := make([]notice.Notice, len(seqs)) // one allocation for all
	ptrs := make([][3]string, len(seqs))
	have := make([]bool, len(seqs))
	if err := summaries(seqs, decoded, ptrs, have); err != nil {
		return err
	}
	// Which notices pass f: pass[i] for seqs[i].
	pass := have
	noQ := f
	noQ.Q = nil
	var needText []int64
	for i := range seqs {
		if !pass[i] {
			continue
		}
		n := &decoded[i]
		if !matcher.FilterMatches(noQ, n, nil) {
			pass[i] = false
			continue
		}
		if f.Q != nil {
			needText = append(needText, n.Seq)
		}
	}
	if f.Q != nil && len(needText) > 0 {
		full, err := s.source.NoticesBySeq(ctx, needText)
		if err != nil {
			return err
		}
		textPass := make(map[int64]bool, len(full))
		for i := range full {
			textPass[full[i].Seq] = matcher.FilterMatches(f, &full[i], nil)
		}
		for i := range seqs {
			pass[i] = pass[i] && textPass[seqs[i]]
		}
	} else if f.Q != nil {
		clear(pass)
	}
	// sum returns the summary of seq when it passes f.
	sum := func(q int64) *notice.Notice {
		if i, ok := slices.BinarySearch(seqs, q); ok && pass[i] {
			return &decoded[i]
		}
		return nil
	}

	res.Matched = slices.Grow(res.Matched, withNotices(found))
	strs := make([]string, 0, 3*withNotices(found)) // what the answers point to
	var purposes []string                           // one identifier's, reused
	newer := func(n, than *notice.Notice) bool {
		return than == nil || n.PublishedAt > than.PublishedAt || (n.PublishedAt == than.PublishedAt && n.Seq > than.Seq)
	}
	for i, o := range found {
		var count int
		var latest, insolvency *notice.Notice
		purposes = purposes[:0]
		for li, l := range [][]int64{o.own, o.theirs} {
			for _, q := range l {
				n := sum(q)
				if n == nil || (li == 1 && slices.Contains(o.own, q)) {
					continue // fails f, or carries both identifiers (counted once)
				}
				count++
				purposes = addPurpose(purposes, n.NoticePurpose)
				if newer(n, latest) {
					latest = n
				}
				if !n.IsDeregistration() && newer(n, insolvency) {
					insolvency = n
				}
			}
		}
		answer(res, ids[i].Kind, &found[i], count, latest, &strs)
		if count > 0 {
			m := &res.Matched[len(res.Matched)-1]
			m.NoticePurposes = sortedPurposes(purposes)
			if insolvency != nil {
				l := latestOf(insolvency)
				m.Insolvency, m.LatestInsolvencyNotice = true, l.notice()
			}
		}
	}
	res.Counts.Matched, res.Counts.Unmatched, res.Counts.Unresolved = len(res.Matched), len(res.Unmatched), len(res.Unresolved)
	return nil
}

// withNotices counts the identifiers that found notices.
func withNotices(found []screenItem) int {
	n := 0
	for i := range found {
		if len(found[i].own)+len(found[i].theirs) > 0 {
			n++
		}
	}
	return n
}

// answer records one identifier's answer in res: matched when count
// notices passed the filters (latest the newest of them: latest
// publication, ties by higher seq), else unmatched when the register or a
// notice knows it, else unresolved. The strings a match points to are
// appended to strs.
func answer(res *watch.ScreenResult, kind ident.Kind, o *screenItem, count int, latest *notice.Notice, strs *[]string) {
	if count == 0 {
		noMatch(res, o.self, o.acn, o.inRegister || len(o.own) > 0)
		return
	}
	l := latestOf(latest)
	res.Matched = append(res.Matched, matchOf(ident.ID{Kind: kind, Value: o.self}, o.acn, count, &l, strs))
}

// latestOf is what a match shows of the summary n as a latest notice.
func latestOf(n *notice.Notice) summaryLatest {
	l := summaryLatest{LatestNotice: watch.LatestNotice{ID: n.ID, Seq: n.Seq, PublishedDate: n.PublishedDate,
		NoticeType: n.NoticeType, NoticePurpose: n.NoticePurpose}, companyName: n.CompanyName}
	if n.AppointmentType != nil {
		l.app, l.hasApp = *n.AppointmentType, true
	}
	if n.ACN != nil {
		l.acn = *n.ACN
	}
	if n.ABN != nil {
		l.abn = *n.ABN
	}
	return l
}

// notice is l as a match's latest insolvency notice (its own copy).
func (l *summaryLatest) notice() *watch.LatestNotice {
	ln := l.LatestNotice
	ln.AppointmentType = nil
	if l.hasApp {
		app := l.app
		ln.AppointmentType = &app
	}
	return &ln
}

// addPurpose adds the purpose p to a match's distinct non-empty purposes.
func addPurpose(purposes []string, p string) []string {
	if p == "" || slices.Contains(purposes, p) {
		return purposes
	}
	return append(purposes, p)
}

// sortedPurposes is a match's notice_purposes: a sorted copy of purposes.
func sortedPurposes(purposes []string) []string {
	out := slices.Clone(purposes)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	return out
}

// noMatch records an identifier without a notice passing the filters:
// unmatched (with its company's ACN acn, "" for none; the register name
// is filled in later) when the register or a notice knows it, else
// unresolved.
func noMatch(res *watch.ScreenResult, self, acn string, known bool) {
	if known {
		res.Unmatched = append(res.Unmatched, self)
		u := watch.UnmatchedCompany{Identifier: self}
		if acn != "" {
			u.ACN = &acn
		}
		res.UnmatchedCompanies = append(res.UnmatchedCompanies, u)
	} else {
		res.Unresolved = append(res.Unresolved, self)
	}
}

// summaryLatest is what a match shows of its latest notice, from its
// summary: the answer's fields, and the notice's appointment type (when
// hasApp), ACN and ABN ("" for none) and company name.
type summaryLatest struct {
	watch.LatestNotice
	app, acn, abn, companyName string
	hasApp                     bool
}

// matchOf is the answer of identifier id, whose company's ACN per the
// register is acn, that count notices passing the filters matched, latest
// the newest; its company name is the latest notice's, which the register's
// current name replaces afterwards (fillRegisterNames, fillNames). The
// strings it points to are appended to strs.
func matchOf(id ident.ID, acn string, count int, latest *summaryLatest, strs *[]string) watch.Matched {
	point := func(v string) *string {
		*strs = append(*strs, v)
		return &(*strs)[len(*strs)-1]
	}
	m := watch.Matched{Identifier: id.Value, NoticeCount: count, LatestNotice: latest.LatestNotice}
	m.LatestNotice.AppointmentType = nil
	if latest.hasApp {
		m.LatestNotice.AppointmentType = point(latest.app)
	}
	// The company's ACN (for an ABN the register's, else the latest
	// notice's when that notice carries the ABN) and its name (the latest
	// notice's here).
	switch {
	case acn != "":
		m.ACN = point(acn)
	case id.Kind == ident.ABN && latest.abn != "" && latest.abn == id.Value && latest.acn != "":
		m.ACN = point(latest.acn)
	}
	if name := latest.companyName; name != "" { // no name anywhere is null, as the embedded store answers
		m.CompanyName = point(name)
	}
	return m
}
