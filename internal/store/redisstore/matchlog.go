package redisstore

import (
	"context"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/matcher"
)

// The match log. Each watch's matches are a zset wm:<id> of notice seqs,
// filled two ways:
//   - the backfill, when the watch is created: every notice up to the
//     arrival watermark read just after the watch was written (its a0),
//     found through NoticeSource.MatchingSeqs in chunks of at most MaxTerms
//     keys;
//   - arrival matching (MatchArrivals): the notices after the global cursor
//     match:through, matched against the reverse index rix:<key> and the
//     filter-only set fo with package matcher's filter semantics, then
//     committed by one Lua script that appends to the logs, hands each pair
//     to delivery and advances the cursor, only if the cursor and the
//     watch-set version wsv are still what the matcher read. A notice is
//     therefore matched by exactly one committed batch, whatever the
//     number of workers, and a worker dying mid-batch commits nothing.
//
// Matches shows a watch's log only up to max(a0, match:through): below
// that every match is in the log, so a poller following next_since never
// misses one; nothing is exposed above it.
//
// Handoff to delivery: each pair whose notice arrived after the watch was
// created (seq above eseq, the arrival watermark read before the watch was
// written) is appended once to the Redis stream <namespace>:matched
// (fields watch, seq): by the committing batch when it is above the cursor
// at activation (cseq), else by CreateWatch after its backfill. The
// webhook delivery worker consumes that stream.

// filterCache holds the watches' filters, which never change after
// creation, for arrival matching.
type filterCache struct {
	mu sync.RWMutex
	m  map[string]notice.Filter
}

func (c *filterCache) get(id string) (notice.Filter, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	f, ok := c.m[id]
	return f, ok
}

func (c *filterCache) put(id string, f notice.Filter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]notice.Filter{}
	}
	c.m[id] = f
}

func (c *filterCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

// addLogScript appends seqs to a watch's log if the watch still exists.
var addLogScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV do redis.call('ZADD', KEYS[2], ARGV[i], ARGV[i]) end
return 1
`)

const backfillPage = 10000

// backfillKeys adds to the watch's log the notices up to through passing f
// and carrying one of keys (nil: filter-only), MaxTerms keys per query.
func (s *Store) backfillKeys(ctx context.Context, id string, keys []string, f notice.Filter, through int64) error {
	chunks := [][]string{keys}
	if keys != nil {
		chunks = nil
		for i := 0; i < len(keys); i += MaxTerms {
			chunks = append(chunks, keys[i:min(i+MaxTerms, len(keys))])
		}
	}
	for _, chunk := range chunks {
		var after int64
		for {
			seqs, err := s.source.MatchingSeqs(ctx, chunk, f, after, through, backfillPage)
			if err != nil {
				return err
			}
			if len(seqs) == 0 {
				break
			}
			args := make([]any, len(seqs))
			for i, q := range seqs {
				args[i] = q
			}
			if err := addLogScript.Run(ctx, s.rdb, []string{s.key("w", id), s.key("wm", id)}, args...).Err(); err != nil {
				return s.fail("backfill matches", err)
			}
			if len(seqs) < backfillPage {
				break
			}
			after = seqs[len(seqs)-1]
		}
	}
	return nil
}

// backfill fills a new watch's log up to the arrival watermark and
// returns that watermark (the watch's a0 once its create finishes).
func (s *Store) backfill(ctx context.Context, id string, keys []string, f notice.Filter) (int64, error) {
	through, err := s.source.LatestSeq(ctx)
	if err != nil {
		return 0, err
	}
	return through, s.backfillKeys(ctx, id, keys, f, through)
}

// Matches returns up to limit notices of the watch's match log with
// notice_seq > since, ascending, never above the matched-through mark.
func (s *Store) Matches(ctx context.Context, accountID, id string, since int64, limit int) (store.MatchPage, error) {
	page := store.MatchPage{Notices: []notice.Notice{}, NextSince: since}
	if limit <= 0 {
		limit = 100
	}
	behind := false
	if s.matchOnRead {
		done, err := s.catchUpSome(ctx, maxReadCatchUp)
		if err != nil {
			return page, err
		}
		// Arrivals are left unmatched (no worker runs, or a large load
		// just landed): the page is complete up to the cursor matching
		// reached, and the caller is told to poll again at once.
		behind = !done
	}
	var w *redis.SliceCmd
	var m *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		w = p.HMGet(ctx, s.key("w", id), "account", "a0")
		m = p.Get(ctx, s.key("match", "through"))
		return nil
	})
	if err != nil && err != redis.Nil {
		return page, s.fail("read matches", err)
	}
	v := w.Val()
	if !shown(accountID, v) {
		return page, watchNotFound(id)
	}
	a0, _ := strconv.ParseInt(str(v[1]), 10, 64)
	through, _ := strconv.ParseInt(m.Val(), 10, 64)
	vis := max(a0, through)
	if since >= vis {
		return page, nil
	}
	// The log holds every notice that matched when it was logged; a notice
	// amended since, or a register load that dropped the key it matched
	// by, can make it no longer match. The embedded store evaluates the
	// watch at read time, so each logged notice is checked again here and
	// shown only if it matches now (docs/redis.md, "Same answers as the
	// embedded store").
	after := since
	var kept []notice.Notice
	for len(kept) <= limit {
		want := limit + 1 - len(kept)
		seqs, err := s.rdb.ZRangeByScore(ctx, s.key("wm", id), &redis.ZRangeBy{
			Min: "(" + itoa(after), Max: itoa(vis), Count: int64(want)}).Result()
		if err != nil {
			return page, s.fail("read matches", err)
		}
		if len(seqs) == 0 {
			break
		}
		ns := make([]int64, len(seqs))
		for i, q := range seqs {
			ns[i], _ = strconv.ParseInt(q, 10, 64)
		}
		after = ns[len(ns)-1]
		got, err := s.source.NoticesBySeq(ctx, ns)
		if err != nil {
			return page, err
		}
		ok, err := s.stillMatching(ctx, id, got)
		if err != nil {
			return page, err
		}
		for i := range got {
			if ok[i] {
				kept = append(kept, got[i])
			}
		}
		if len(seqs) < want {
			break
		}
	}
	if len(kept) > limit {
		page.HasMore = true
		kept = kept[:limit]
	}
	page.HasMore = page.HasMore || behind
	page.Notices = kept
	if n := len(kept); n > 0 {
		page.NextSince = kept[n-1].Seq
	}
	return page, nil
}

// stillMatching reports for each notice whether it matches watch id now:
// the watch's filters, and (unless the watch is filter-only) the notice's
// acn or abn among the watch's current match keys, read from the reverse
// index in one pipeline.
func (s *Store) stillMatching(ctx context.Context, id string, ns []notice.Notice) ([]bool, error) {
	out := make([]bool, len(ns))
	if len(ns) == 0 {
		return out, nil
	}
	f, ok := s.filters.get(id)
	if !ok {
		if err := s.loadFilters(ctx, map[string]bool{id: true}); err != nil {
			return nil, err
		}
		if f, ok = s.filters.get(id); !ok {
			return out, nil // deleted meanwhile
		}
	}
	type held struct {
		first *redis.StringCmd
		more  *redis.BoolCmd
	}
	nkeys, err := s.noticeKeys(ctx, ns)
	if err != nil {
		return nil, err
	}
	looks := make([][]held, len(ns))
	var fo *redis.BoolCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		fo = p.SIsMember(ctx, s.key("fo"), id)
		for i, ks := range nkeys {
			for _, v := range ks {
				looks[i] = append(looks[i], held{p.HGet(ctx, s.key("rix", rixBucket(v)), v), p.SIsMember(ctx, s.key("rixs", v), id)})
			}
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, s.fail("read matches", err)
	}
	filterOnly := fo.Val()
	for i := range ns {
		keyed := filterOnly
		for _, h := range looks[i] {
			if h.first.Val() == id || h.more.Val() {
				keyed = true
			}
		}
		out[i] = keyed && matcher.FilterMatches(f, &ns[i], nil)
	}
	return out, nil
}

// noticeKeys returns for each notice the reverse-index keys it matches
// by: its acn, its abn, and every register ACN of its abn (watches index
// a register company by its ACN alone, indexKeysOf), read from the
// current register generation (RegisterACNsOf: one round trip).
func (s *Store) noticeKeys(ctx context.Context, ns []notice.Notice) ([][]string, error) {
	out := make([][]string, len(ns))
	var abns []string
	var at []int
	for i := range ns {
		id := publog.Idents(&ns[i])
		for _, v := range id {
			if v != "" {
				out[i] = append(out[i], v)
			}
		}
		if id[1] != "" {
			abns = append(abns, id[1])
			at = append(at, i)
		}
	}
	if len(abns) == 0 {
		return out, nil
	}
	res, err := s.RegisterACNsOf(ctx, abns)
	if err != nil {
		return nil, err
	}
	for j, acns := range res {
		i := at[j]
		for _, a := range acns {
			if !slices.Contains(out[i], a) {
				out[i] = append(out[i], a)
			}
		}
	}
	return out, nil
}

// CatchUp matches every arrived notice not yet matched (MatchArrivals
// until nothing is left).
func (s *Store) CatchUp(ctx context.Context) error {
	for {
		n, err := s.MatchArrivals(ctx, arrivalBatch)
		if err != nil || n == 0 {
			return err
		}
	}
}

// catchUpSome matches arrived notices not yet matched, at most batches
// batches of arrivalBatch; done reports that nothing was left.
func (s *Store) catchUpSome(ctx context.Context, batches int) (done bool, err error) {
	for range batches {
		n, err := s.MatchArrivals(ctx, arrivalBatch)
		if err != nil || n == 0 {
			return err == nil, err
		}
	}
	return false, nil
}

const arrivalBatch = 500

// maxReadCatchUp bounds the arrival matching one matches read does in
// batches of arrivalBatch (4,000 notices, about 0.6 s on the benchmark
// machine): the rest is the workers' (noticesd worker) or the next
// read's, so one poll never carries the matching of a whole load.
const maxReadCatchUp = 8

// commitScript appends one matched batch and advances the cursor, only if
// the cursor and the watch-set version are what the matcher read. Every
// seq at or below the published seq is final (package publog: a notice is
// searchable before it is published), so nothing lands below the cursor
// later. KEYS: match:through, wsv. ARGV: ns, expected cursor, new cursor,
// expected wsv, then (watch, seq) pairs.
var commitScript = redis.NewScript(appendPairLua + `
local ns = ARGV[1]
if tonumber(redis.call('GET', KEYS[1]) or '0') ~= tonumber(ARGV[2]) then return -1 end
if tonumber(redis.call('GET', KEYS[2]) or '0') ~= tonumber(ARGV[4]) then return -2 end
local added = 0
for i = 5, #ARGV, 2 do
  added = added + appendPair(ns, ARGV[i], ARGV[i + 1])
end
redis.call('SET', KEYS[1], ARGV[3])
return added
`)

// appendPairLua defines appendPair(ns, watch, seq) for the scripts that
// commit matches: the seq joins the watch's log, and is handed to
// delivery when it arrived after the watch was created; it returns 1, or 0
// for a watch deleted meanwhile.
const appendPairLua = `
local function appendPair(ns, w, seq)
  local m = redis.call('HMGET', ns .. 'w:' .. w, 'cseq', 'eseq')
  if not m[1] then return 0 end
  redis.call('ZADD', ns .. 'wm:' .. w, seq, seq)
  if tonumber(seq) > math.max(tonumber(m[1]), tonumber(m[2] or '0')) then
    redis.call('XADD', ns .. 'matched', '*', 'watch', w, 'seq', seq)
  end
  return 1
end
`

// MatchArrivals matches the next arrived notices (up to limit) not yet
// matched and commits them; it returns how many notices it moved the
// cursor past (0: nothing to do, or another matcher got there first). Any
// number of workers may call it concurrently.
func (s *Store) MatchArrivals(ctx context.Context, limit int) (int, error) {
	for attempt := 0; ; attempt++ {
		var mc, vc *redis.StringCmd
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			mc = p.Get(ctx, s.key("match", "through"))
			vc = p.Get(ctx, s.key("wsv"))
			return nil
		})
		if err != nil && err != redis.Nil {
			return 0, s.fail("read the match cursor", err)
		}
		m, _ := strconv.ParseInt(mc.Val(), 10, 64)
		wsv, _ := strconv.ParseInt(vc.Val(), 10, 64)
		top, err := s.source.LatestSeq(ctx)
		if err != nil || top <= m {
			return 0, err
		}
		ns, err := s.source.NoticesAfter(ctx, m, limit)
		if err != nil {
			return 0, err
		}
		kept := ns[:0]
		for _, n := range ns {
			if n.Seq <= top {
				kept = append(kept, n)
			}
		}
		through := top
		if len(kept) == limit {
			through = kept[len(kept)-1].Seq
		}
		pairs, err := s.matchNotices(ctx, kept)
		if err != nil {
			return 0, err
		}
		args := make([]any, 0, 4+len(pairs))
		args = append(args, s.ns, m, through, wsv)
		args = append(args, pairs...)
		res, err := commitScript.Run(ctx, s.rdb, []string{s.key("match", "through"), s.key("wsv")}, args...).Int()
		if err != nil {
			return 0, s.fail("commit matches", err)
		}
		switch {
		case res == -1:
			return 0, nil // another matcher committed this range
		case res == -2 && attempt < 20:
			continue // the watches changed while matching: again
		case res == -2:
			return 0, nil
		}
		return int(through - m), nil
	}
}

// matchNotices returns the (watch id, seq) pairs of the notices, flattened.
func (s *Store) matchNotices(ctx context.Context, ns []notice.Notice) ([]any, error) {
	if len(ns) == 0 {
		return nil, nil
	}
	type lookup struct {
		first *redis.StringCmd
		more  *redis.StringSliceCmd
	}
	nkeys, err := s.noticeKeys(ctx, ns)
	if err != nil {
		return nil, err
	}
	looks := make([][]lookup, len(ns))
	var fo *redis.StringSliceCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		fo = p.SMembers(ctx, s.key("fo"))
		for i, ks := range nkeys {
			for _, v := range ks {
				looks[i] = append(looks[i], lookup{p.HGet(ctx, s.key("rix", rixBucket(v)), v), p.SMembers(ctx, s.key("rixs", v))})
			}
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, s.fail("match arrivals", err)
	}
	cands := make([][]string, len(ns))
	need := map[string]bool{}
	for i, ls := range looks {
		seen := map[string]bool{}
		var ws []string
		for _, l := range ls {
			if v := l.first.Val(); v != "" {
				ws = append(ws, v)
			}
			ws = append(ws, l.more.Val()...)
		}
		ws = append(ws, fo.Val()...)
		{
			for _, w := range ws {
				if !seen[w] {
					seen[w] = true
					cands[i] = append(cands[i], w)
					if _, ok := s.filters.get(w); !ok {
						need[w] = true
					}
				}
			}
		}
	}
	if err := s.loadFilters(ctx, need); err != nil {
		return nil, err
	}
	var pairs []any
	for i := range ns {
		n := &ns[i]
		doc := matcher.DocFor(n)
		for _, w := range cands[i] {
			f, ok := s.filters.get(w)
			if ok && matcher.FilterMatches(f, n, doc) {
				pairs = append(pairs, w, n.Seq)
			}
		}
	}
	return pairs, nil
}

// loadFilters reads the filters of the given watches into the cache; a
// watch deleted meanwhile is skipped.
func (s *Store) loadFilters(ctx context.Context, ids map[string]bool) error {
	if len(ids) == 0 {
		return nil
	}
	list := make([]string, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	docs := make([]*redis.StringCmd, len(list))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range list {
			docs[i] = p.HGet(ctx, s.key("w", id), "doc")
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return s.fail("load watch filters", err)
	}
	for _, d := range docs {
		if d.Err() != nil {
			continue
		}
		w, err := decodeWatch(d.Val())
		if err != nil {
			return err
		}
		f, err := w.Filters.NoticeFilter()
		if err != nil {
			return err
		}
		s.filters.put(w.ID, f)
	}
	return nil
}

// RefreshWatchKeys re-expands the match keys of every watch expanded
// against an older register generation and backfills the notices the new
// keys bring; it returns how many watches it rewrote. Register commits run
// it. Quota counts are not recomputed (companies stay counted as resolved
// at creation), and matches already in a log stay there.
func (s *Store) RefreshWatchKeys(ctx context.Context) (int, error) {
	reg, err := s.currentRegister(ctx)
	if err != nil || reg.v == "" {
		return 0, err
	}
	ids, err := s.rdb.SMembers(ctx, s.key("watches")).Result()
	if err != nil {
		return 0, s.fail("refresh watch keys", err)
	}
	n := 0
	for _, id := range ids {
		v, err := s.rdb.HMGet(ctx, s.key("w", id), "regv", "doc", "ixabn").Result()
		if err != nil {
			return n, s.fail("refresh watch keys", err)
		}
		if str(v[1]) == "" || str(v[0]) == reg.v {
			continue
		}
		w, err := decodeWatch(str(v[1]))
		if err != nil {
			return n, err
		}
		if len(w.Identifiers) == 0 {
			continue
		}
		exp, err := s.expand(ctx, w.Identifiers)
		if err != nil {
			return n, err
		}
		oldKeys, err := s.rdb.Get(ctx, s.key("w", id, "keys")).Result()
		if err != nil && err != redis.Nil {
			return n, s.fail("refresh watch keys", err)
		}
		added, _ := diffKeys(splitList(oldKeys), exp.keys)
		ixAdded, ixRemoved := diffKeys(storedIndexKeys(oldKeys, v[2]), exp.index())
		if err := s.indexKeys(ctx, id, ixAdded, ixRemoved); err != nil {
			return n, err
		}
		if err := refreshScript.Run(ctx, s.rdb, []string{s.key("w", id)}, s.ns, exp.regv, joinList(exp.keys), joinList(exp.ixABNs)).Err(); err != nil {
			return n, s.fail("refresh watch keys", err)
		}
		n++
		if len(added) > 0 {
			f, err := w.Filters.NoticeFilter()
			if err != nil {
				return n, err
			}
			through, err := s.source.LatestSeq(ctx)
			if err != nil {
				return n, err
			}
			if err := s.backfillKeys(ctx, id, added, f, through); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// diffKeys returns the keys of now not in was, and those of was not in now.
func diffKeys(was, now []string) (added, removed []string) {
	in := make(map[string]bool, len(was))
	for _, k := range was {
		in[k] = true
	}
	for _, k := range now {
		if !in[k] {
			added = append(added, k)
		}
		delete(in, k)
	}
	for k := range in {
		removed = append(removed, k)
	}
	return added, removed
}

// refreshScript installs a watch's re-expanded keys once its
// reverse-index entries are updated, and bumps the watch-set version.
// KEYS: w:<id>. ARGV: ns, regv, keys comma-joined, ixabn comma-joined.
var refreshScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('SET', KEYS[1] .. ':keys', ARGV[3])
redis.call('HSET', KEYS[1], 'regv', ARGV[2], 'ixabn', ARGV[4])
redis.call('INCR', ARGV[1] .. 'wsv')
return 1
`)

// RematchStored adds to the match logs every watch a re-ingested notice
// (ns, as stored) matches now, as the embedded store, which evaluates a
// watch at read time, shows an amended notice that has come to match.
// Only notices at or below the arrival-matching cursor are rematched (the
// others are matched when their turn comes, with what is stored then).
// Nothing is handed to delivery: an amendment is never delivered again.
// Logged notices that no longer match are hidden by Matches.
func (s *Store) RematchStored(ctx context.Context, ns []notice.Notice) error {
	if len(ns) == 0 {
		return nil
	}
	t, err := s.rdb.Get(ctx, s.key("match", "through")).Int64()
	if err == redis.Nil {
		return nil
	}
	if err != nil {
		return s.fail("rematch notices", err)
	}
	var old []notice.Notice
	for _, n := range ns {
		if n.Seq > 0 && n.Seq <= t {
			old = append(old, n)
		}
	}
	pairs, err := s.matchNotices(ctx, old)
	if err != nil {
		return err
	}
	byWatch := map[string][]any{}
	for i := 0; i < len(pairs); i += 2 {
		w := pairs[i].(string)
		byWatch[w] = append(byWatch[w], pairs[i+1])
	}
	for w, seqs := range byWatch {
		if err := addLogScript.Run(ctx, s.rdb, []string{s.key("w", w), s.key("wm", w)}, seqs...).Err(); err != nil {
			return s.fail("rematch notices", err)
		}
	}
	return nil
}
