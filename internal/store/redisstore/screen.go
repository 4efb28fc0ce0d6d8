package redisstore

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/redis/go-redis/v9"

	"noticesd/internal/ident"
	"noticesd/internal/notice"
	"noticesd/internal/watch"
	"noticesd/matcher"
)

// Screen is the bulk screen of POST /v1/match, with the embedded store's
// semantics (see sqlite.Store.Screen): each normalised, distinct
// identifier lands in Matched, Unmatched or Unresolved, in the order
// given. It costs a few pipelined round trips whatever the number of
// identifiers: the register lookups (HMGET), the identifiers' notice sets
// (SMEMBERS nid:<value>), and the notice summaries (HMGET nsum). Filters
// are applied to the summaries with package matcher's semantics; a q needs
// the notices' text, so the candidates passing the other filters are read
// from the NoticeSource and matched there.
func (s *Store) Screen(ctx context.Context, ids []ident.ID, f notice.Filter) (watch.ScreenResult, error) {
	res := watch.ScreenResult{Matched: []watch.Matched{}, Unmatched: []string{}, Unresolved: []string{}}
	res.Counts.Submitted = len(ids)
	if len(ids) == 0 {
		return res, nil
	}
	reg, err := s.currentRegister(ctx)
	if err != nil {
		return res, err
	}
	var acns, abns []string
	for _, id := range ids {
		if id.Kind == ident.ACN {
			acns = append(acns, id.Value)
		} else {
			abns = append(abns, id.Value)
		}
	}
	names, err := reg.lookup(ctx, "name", acns)
	if err != nil {
		return res, err
	}
	acnABN, err := reg.lookup(ctx, "acnabn", acns)
	if err != nil {
		return res, err
	}
	abnACN, err := reg.lookup(ctx, "abn", abns)
	if err != nil {
		return res, err
	}
	// Each identifier's own value and its register counterpart.
	type one struct {
		self, other string // other: the register ABN of an ACN, or ACN of an ABN
		acn         string // the company's ACN when known from the register (or the ACN itself)
		inRegister  bool
	}
	found := make([]one, len(ids))
	ai, bi := 0, 0
	for i, id := range ids {
		o := one{self: id.Value}
		if id.Kind == ident.ACN {
			o.acn, o.other, o.inRegister = id.Value, acnABN[ai], names[ai] != ""
			ai++
		} else {
			o.other, o.acn, o.inRegister = abnACN[bi], abnACN[bi], abnACN[bi] != ""
			bi++
		}
		found[i] = o
	}
	// Round trip: the notice seqs of every identifier involved.
	sets := map[string]*redis.StringSliceCmd{}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, o := range found {
			for _, v := range []string{o.self, o.other} {
				if v != "" && sets[v] == nil {
					sets[v] = p.SMembers(ctx, s.key("nid", v))
				}
			}
		}
		return nil
	})
	if err != nil {
		return res, s.fail("screen", err)
	}
	seqSet := map[string]bool{}
	for _, c := range sets {
		for _, q := range c.Val() {
			seqSet[q] = true
		}
	}
	seqs := make([]string, 0, len(seqSet))
	for q := range seqSet {
		seqs = append(seqs, q)
	}
	raw, err := s.hmget(ctx, s.key("nsum"), seqs)
	if err != nil {
		return res, err
	}
	// Which notices pass f.
	sums := make(map[string]*notice.Notice, len(seqs))
	noQ := f
	noQ.Q = nil
	var needText []int64
	for i, q := range seqs {
		if raw[i] == "" {
			continue
		}
		var n notice.Notice
		if err := json.Unmarshal([]byte(raw[i]), &n); err != nil {
			return res, err
		}
		if !matcher.FilterMatches(noQ, &n, nil) {
			continue
		}
		sums[q] = &n
		if f.Q != nil {
			needText = append(needText, n.Seq)
		}
	}
	if f.Q != nil && len(needText) > 0 {
		full, err := s.source.NoticesBySeq(ctx, needText)
		if err != nil {
			return res, err
		}
		pass := make(map[int64]bool, len(full))
		for i := range full {
			pass[full[i].Seq] = matcher.FilterMatches(f, &full[i], nil)
		}
		for q, n := range sums {
			if !pass[n.Seq] {
				delete(sums, q)
			}
		}
	} else if f.Q != nil {
		clear(sums)
	}

	for i, o := range found {
		var count int
		var latest *notice.Notice
		seen := map[string]bool{}
		for _, v := range []string{o.self, o.other} {
			if v == "" || sets[v] == nil {
				continue
			}
			for _, q := range sets[v].Val() {
				n := sums[q]
				if n == nil || seen[q] {
					continue
				}
				seen[q] = true
				count++
				if latest == nil || n.PublishedAt > latest.PublishedAt || (n.PublishedAt == latest.PublishedAt && n.Seq > latest.Seq) {
					latest = n
				}
			}
		}
		if count == 0 {
			onNotices := sets[o.self] != nil && len(sets[o.self].Val()) > 0
			if o.inRegister || onNotices {
				res.Unmatched = append(res.Unmatched, o.self)
			} else {
				res.Unresolved = append(res.Unresolved, o.self)
			}
			continue
		}
		m := watch.Matched{Identifier: o.self, NoticeCount: count, LatestNotice: watch.LatestNotice{
			ID: latest.ID, Seq: latest.Seq, PublishedDate: latest.PublishedDate, NoticeType: latest.NoticeType,
			NoticePurpose: latest.NoticePurpose, AppointmentType: latest.AppointmentType}}
		if o.acn != "" {
			acn := o.acn
			m.ACN = &acn
		} else if ids[i].Kind == ident.ABN && latest.ABN != nil && *latest.ABN == o.self && latest.ACN != nil {
			acn := *latest.ACN
			m.ACN = &acn
		}
		res.Matched = append(res.Matched, m)
	}
	// Names: the register's current name of the company's ACN, else the
	// latest notice's company name.
	var need []string
	var at []int
	for k, m := range res.Matched {
		if m.ACN != nil {
			need = append(need, *m.ACN)
			at = append(at, k)
		}
	}
	regNames, err := reg.lookup(ctx, "name", need)
	if err != nil {
		return res, err
	}
	for j, k := range at {
		if regNames[j] != "" {
			name := regNames[j]
			res.Matched[k].CompanyName = &name
		}
	}
	for k := range res.Matched {
		m := &res.Matched[k]
		if m.CompanyName == nil {
			n := sums[strconv.FormatInt(m.LatestNotice.Seq, 10)]
			name := n.CompanyName
			m.CompanyName = &name
		}
	}
	res.Counts.Matched, res.Counts.Unmatched, res.Counts.Unresolved = len(res.Matched), len(res.Unmatched), len(res.Unresolved)
	return res, nil
}
