package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/matcher"
)

// Each watch's match log wm:<id> is filled by its backfill at creation
// and by arrival matching (MatchArrivals), which follows the publish log
// from the cursor match:at; Matches shows a log up to max(a0,
// match:through), below which it is complete (docs/redis.md, "Match log
// and arrival matching").

// filterCache holds the watches' filters, which never change after
// creation, for arrival matching.
type filterCache struct{ m sync.Map }

func (c *filterCache) get(id string) (notice.Filter, bool) {
	v, ok := c.m.Load(id)
	f, _ := v.(notice.Filter)
	return f, ok
}

func (c *filterCache) put(id string, f notice.Filter) { c.m.Store(id, f) }
func (c *filterCache) drop(id string)                 { c.m.Delete(id) }

// addLogScript appends seqs to a watch's log if the watch still exists.
// KEYS (the account's): w:<id>, wm:<id>.
var addLogScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV do redis.call('ZADD', KEYS[2], ARGV[i], ARGV[i]) end
return 1
`)

const backfillPage = 10000

// backfill adds to the watch's log the notices up to the published seq
// passing f and carrying one of keys (nil: filter-only), MaxTerms keys a
// query, and returns that seq (a new watch's a0 once its create finishes).
func (s *Store) backfill(ctx context.Context, acct, id string, keys []string, f notice.Filter) (int64, error) {
	through, err := s.source.LatestSeq(ctx)
	if err != nil {
		return 0, err
	}
	chunks := [][]string{keys}
	if keys != nil {
		chunks = slices.Collect(slices.Chunk(keys, MaxTerms))
	}
	for _, chunk := range chunks {
		for after, n := int64(0), backfillPage; n == backfillPage; {
			seqs, err := s.source.MatchingSeqs(ctx, chunk, f, after, through, backfillPage)
			if err != nil {
				return through, err
			}
			if n = len(seqs); n == 0 {
				break
			}
			args := make([]any, n)
			for i, q := range seqs {
				args[i] = q
			}
			if err := addLogScript.Run(ctx, s.rdb, []string{s.akey(acct, watchKey, id), s.akey(acct, matchLogKey, id)}, args...).Err(); err != nil {
				return through, s.fail("backfill matches", err)
			}
			after = seqs[n-1]
		}
	}
	return through, nil
}

// Matches returns up to limit notices of the watch's match log with
// notice_seq > since, ascending, never above the matched-through mark.
func (s *Store) Matches(ctx context.Context, accountID, id string, since int64, limit int) (store.MatchPage, error) {
	page := store.MatchPage{Notices: []notice.Notice{}, NextSince: since}
	if limit <= 0 {
		limit = 100
	}
	if accountID == "" {
		return page, watchNotFound(id)
	}
	behind := false // arrivals left unmatched: the page is complete up to the cursor, poll again at once
	if s.matchOnRead {
		done, err := s.catchUpSome(ctx, maxReadCatchUp)
		if err != nil {
			return page, err
		}
		behind = !done
	}
	var w *redis.SliceCmd
	var m *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		w = p.HMGet(ctx, s.akey(accountID, watchKey, id), "account", "a0")
		m = p.Get(ctx, s.log.Keys().MatchThrough)
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
	// Pages are refilled from the log while stillMatching drops notices.
	after := since
	var kept []notice.Notice
	for more := true; more && len(kept) <= limit; {
		want := limit + 1 - len(kept)
		seqs, err := s.rdb.ZRangeByScore(ctx, s.akey(accountID, matchLogKey, id), &redis.ZRangeBy{
			Min: "(" + itoa(after), Max: itoa(vis), Count: int64(want)}).Result()
		if err != nil {
			return page, s.fail("read matches", err)
		}
		if len(seqs) == 0 {
			break
		}
		more = len(seqs) == want
		ns := make([]int64, len(seqs))
		for i, q := range seqs {
			ns[i], _ = strconv.ParseInt(q, 10, 64)
		}
		after = ns[len(ns)-1]
		got, err := s.source.NoticesBySeq(ctx, ns)
		if err == nil {
			got, err = s.stillMatching(ctx, accountID, id, got)
		}
		if err != nil {
			return page, err
		}
		kept = append(kept, got...)
	}
	page.HasMore = behind || len(kept) > limit
	page.Notices = kept[:min(limit, len(kept))]
	if n := len(page.Notices); n > 0 {
		page.NextSince = page.Notices[n-1].Seq
	}
	return page, nil
}

// stillMatching returns the notices that match watch id now, as the
// embedded store evaluates a watch when read (docs/redis.md, "Same answers
// as the embedded store"): its filters, and (unless the watch is
// filter-only) the notice's acn or abn among its current match keys.
func (s *Store) stillMatching(ctx context.Context, acct, id string, ns []notice.Notice) ([]notice.Notice, error) {
	if len(ns) == 0 {
		return nil, nil
	}
	f, ok := s.filters.get(id)
	if !ok {
		s.owners.Store(id, acct)
		if err := s.loadFilters(ctx, map[string]bool{id: true}); err != nil {
			return nil, err
		}
		if f, ok = s.filters.get(id); !ok {
			return nil, nil // deleted meanwhile
		}
	}
	fo, looks, err := indexLookups(ctx, s, ns, "read matches", func(p redis.Pipeliner, set string) *redis.BoolCmd {
		return p.SIsMember(ctx, set, id)
	})
	if err != nil {
		return nil, err
	}
	var out []notice.Notice
	for i := range ns {
		keyed := fo.Val()
		for _, h := range looks[i] {
			keyed = keyed || h.first.Val() == id || h.more.Val()
		}
		if keyed && matcher.FilterMatches(f, &ns[i], nil) {
			out = append(out, ns[i])
		}
	}
	return out, nil
}

// holders are the reverse index's answers for one key: the first watch
// holding it (its rix field) and what set asked of the further ones.
type holders[C any] struct {
	first *redis.StringCmd
	more  C
}

// indexLookups asks, in one pipeline, set(p, fo) and for each notice's
// reverse-index keys (noticeKeys) who holds each: the rix field and
// set(p, rixs:<key>).
func indexLookups[C any](ctx context.Context, s *Store, ns []notice.Notice, what string, set func(p redis.Pipeliner, key string) C) (C, [][]holders[C], error) {
	var fo C
	nkeys, err := s.noticeKeys(ctx, ns)
	if err != nil {
		return fo, nil, err
	}
	looks := make([][]holders[C], len(ns))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		fo = set(p, s.key(filterOnlyKey))
		for i, ks := range nkeys {
			for _, v := range ks {
				looks[i] = append(looks[i], holders[C]{p.HGet(ctx, s.key(rixKey, rixBucket(v)), v), set(p, s.key(rixsKey, v))})
			}
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return fo, nil, s.fail(what, err)
	}
	return fo, looks, nil
}

// noticeKeys returns for each notice the reverse-index keys it matches
// by: its acn, its abn, and every register ACN of its abn in the current
// generation (watches index a register company by its ACN alone,
// indexKeysOf).
func (s *Store) noticeKeys(ctx context.Context, ns []notice.Notice) ([][]string, error) {
	out := make([][]string, len(ns))
	var abns []string
	var at []int
	for i := range ns {
		id := publog.Idents(&ns[i])
		if id[1] != "" {
			abns, at = append(abns, id[1]), append(at, i)
		}
		out[i] = slices.DeleteFunc(id[:], func(v string) bool { return v == "" })
	}
	if len(abns) == 0 {
		return out, nil
	}
	reg, err := s.currentRegister(ctx)
	if err != nil {
		return nil, err
	}
	res, err := reg.acnsOf(ctx, abns)
	if err != nil {
		return nil, err
	}
	for j, acns := range res {
		for _, a := range acns {
			if i := at[j]; !slices.Contains(out[i], a) {
				out[i] = append(out[i], a)
			}
		}
	}
	return out, nil
}

// catchUpSome matches published notices not yet matched, at most batches
// batches of ArrivalBatch; done reports that nothing was left.
func (s *Store) catchUpSome(ctx context.Context, batches int) (done bool, err error) {
	for range batches {
		n, err := s.MatchArrivals(ctx, ArrivalBatch)
		if err != nil || n == 0 {
			return err == nil, err
		}
	}
	return false, nil
}

// ArrivalBatch is how many log entries one arrival-matching commit covers,
// in a read's catch-up and in the worker's matching loop (package
// scheduler).
const ArrivalBatch = 500

// maxReadCatchUp bounds the batches one matches read matches (4,000
// notices, about 0.6 s): one poll never carries the matching of a whole
// load (docs/redis.md, "A poll does bounded work").
const maxReadCatchUp = 8

// commitScript commits the matching of one range of the publish log for
// one account's watches; it is idempotent (a log is a set, and a pair gets
// a delivery only unless it has one), so a range committed twice, by a
// matcher that retried or by two matchers, changes nothing twice
// (docs/redis.md, "Match log and arrival matching"). A watch gone, not yet
// activated (no cseq) or being undone is skipped. KEYS (the account's):
// dq, dstat, ddue, then per pair the watch's w, wm, dr, dl. ARGV: due
// (ms), then per pair seq, deliver ("1": owed a delivery, ledgerLua's
// pend), delivery id, record JSON, list score, list member, outbox
// member. It returns the pairs owed a delivery, recorded now or by an
// earlier commit of the range.
var commitScript = redis.NewScript(ledgerLua + `
local owed, k = 0, 4
for a = 2, #ARGV, 7 do
  local w, wm, dr, dl = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  k = k + 4
  local seq = ARGV[a]
  local m = redis.call('HMGET', w, 'cseq', 'eseq', 'secret', 'doc', 'undo')
  if m[1] and not m[5] then
    redis.call('ZADD', wm, seq, seq)
    if ARGV[a + 1] == '1' and m[3] and m[3] ~= '' and tonumber(seq) > math.max(tonumber(m[1]), tonumber(m[2] or '0')) then
      pend(dr, dl, KEYS[1], KEYS[2], KEYS[3], cjson.decode(m[4]).active, ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], ARGV[1])
      owed = owed + 1
    end
  end
end
return owed
`)

// advanceScript moves arrival matching's cursor past a range once every
// account's commitScript ran, if the cursor and the watch-set version are
// still what the matcher read. KEYS: match:at, match:through, wsv. ARGV:
// expected cursor, new cursor, through, expected wsv. It returns 1, -1
// when another matcher committed the range, -2 when the watches changed
// meanwhile (the range is matched again).
var advanceScript = redis.NewScript(`
if (redis.call('GET', KEYS[1]) or '0-0') ~= ARGV[1] then return -1 end
if tonumber(redis.call('GET', KEYS[3]) or '0') ~= tonumber(ARGV[4]) then return -2 end
redis.call('SET', KEYS[1], ARGV[2])
if tonumber(ARGV[3]) > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], ARGV[3]) end
return 1
`)

// MatchArrivals matches the next entries of the publish log (up to limit)
// not yet matched and commits them: one commitScript per account whose
// watches matched, then advanceScript; a crash between them leaves the
// cursor where it was, and the range is matched again, changing nothing
// twice. It returns how many entries it moved the cursor past (0: nothing
// to do, or another matcher got there first). Any number of workers may
// call it concurrently (docs/redis.md, "Match log and arrival matching").
func (s *Store) MatchArrivals(ctx context.Context, limit int) (int, error) {
	k := s.log.Keys()
	for attempt := 0; ; attempt++ {
		var ac, vc *redis.StringCmd
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			ac = p.Get(ctx, k.MatchAt)
			vc = p.Get(ctx, s.key(watchSetKey))
			return nil
		})
		if err != nil && err != redis.Nil {
			return 0, s.fail("read the match cursor", err)
		}
		at := cmp.Or(ac.Val(), "0-0")
		wsv, _ := strconv.ParseInt(vc.Val(), 10, 64)
		// Published is read before the log: when the read below reaches
		// the log's end, every notice at or below it has been read.
		published, err := s.log.Published(ctx)
		if err != nil {
			return 0, err
		}
		es, gone, err := s.log.Read(ctx, at, int64(limit))
		if err != nil {
			return 0, err
		}
		if gone {
			return 0, fmt.Errorf("redisstore: arrival matching is behind the publish log's trimmed tail (cursor %s): the log is never trimmed past the cursor, so %s was changed by hand", at, k.MatchAt)
		}
		if len(es) == 0 {
			return 0, nil
		}
		ns, isNew, through, err := summariesOf(es)
		if err != nil {
			return 0, err
		}
		if len(es) < limit {
			through = max(through, published)
		}
		now := s.clock()
		byAcct, err := s.commitArgs(ctx, ns, isNew, now)
		if err != nil {
			return 0, err
		}
		for acct, c := range byAcct {
			a := func(parts ...string) string { return s.akey(acct, parts...) }
			keys := append([]string{a(outboxKey), a(dstatKey), a(ddueKey)}, c.keys...)
			owed, err := commitScript.Run(ctx, s.rdb, keys, append([]any{now.UnixMilli()}, c.args...)...).Int()
			if err != nil {
				return 0, s.fail("commit matches", err)
			}
			// The outbox note after the script: a crash between leaves
			// the cursor behind, and the range's next commit, which owes
			// the same deliveries (made by the first), notes the account.
			if owed > 0 {
				if err := s.wake(ctx, wakeOutbox, acct, now); err != nil {
					return 0, err
				}
			}
		}
		res, err := advanceScript.Run(ctx, s.rdb, []string{k.MatchAt, k.MatchThrough, s.key(watchSetKey)}, at, es[len(es)-1].ID, through, wsv).Int()
		if err != nil {
			return 0, s.fail("commit matches", err)
		}
		if res == -2 && attempt < 20 {
			continue // the watches changed while matching: again
		}
		if res < 0 {
			return 0, nil // -1: another matcher committed this range
		}
		return len(es), nil
	}
}

// summariesOf decodes log entries' summaries, says which entries are a
// notice's first publish (not an amendment), and returns the highest seq
// of those.
func summariesOf(es []publog.Entry) (ns []notice.Notice, isNew []bool, through int64, err error) {
	ns = make([]notice.Notice, len(es))
	isNew = make([]bool, len(es))
	ptrs := make([][3]string, len(es))
	for i, e := range es {
		if err := publog.DecodeSummaryInto(e.Summary, &ns[i], &ptrs[i]); err != nil {
			return nil, nil, 0, err
		}
		if isNew[i] = e.Kind == publog.KindNew; isNew[i] {
			through = max(through, ns[i].Seq)
		}
	}
	return ns, isNew, through, nil
}

// accountCommit is one account's part of a range's commit: commitScript's
// per-pair keys and arguments.
type accountCommit struct {
	keys []string
	args []any
}

// commitArgs matches the notices of log entries (sums: their summaries;
// isNew parallel) and returns commitScript's per-pair keys and arguments
// by account. The filters are checked against the notices as stored, read
// from the source only for notices that have a candidate.
func (s *Store) commitArgs(ctx context.Context, sums []notice.Notice, isNew []bool, now time.Time) (map[string]*accountCommit, error) {
	cands, err := s.candidates(ctx, sums)
	if err != nil {
		return nil, err
	}
	var seqs []int64
	for i := range sums {
		if len(cands[i]) > 0 {
			seqs = append(seqs, sums[i].Seq)
		}
	}
	if len(seqs) == 0 {
		return nil, nil
	}
	stored, err := s.source.NoticesBySeq(ctx, seqs)
	if err != nil {
		return nil, err
	}
	bySeq := make(map[int64]*notice.Notice, len(stored))
	for i := range stored {
		bySeq[stored[i].Seq] = &stored[i]
	}
	byAcct := map[string]*accountCommit{}
	for i := range sums {
		n := bySeq[sums[i].Seq]
		if n == nil {
			continue // not readable: the source lost it, nothing to match
		}
		var doc *query.Doc
		fresh := false
		if isNew[i] {
			pub, err := time.Parse(time.RFC3339Nano, n.PublishedAt)
			fresh = err == nil && delivery.Eligible(n.Seq, 0, pub, delivery.JudgedAt(n.CollectedAt, now))
		}
		for _, w := range cands[i] {
			f, ok := s.filters.get(w)
			if ok && doc == nil && f.Q != nil {
				doc = matcher.DocFor(n)
			}
			if !ok || !matcher.FilterMatches(f, n, doc) {
				continue
			}
			acct, _ := s.owners.Load(w) // candidates read every candidate's account
			a, _ := acct.(string)
			if a == "" {
				continue // gone: its delete finished
			}
			dk, da, err := s.pendingArgs(a, w, n, now)
			if err != nil {
				return nil, err
			}
			c := byAcct[a]
			if c == nil {
				c = &accountCommit{}
				byAcct[a] = c
			}
			// pendingArgs: keys dr, dl, ...; args id, record, score, member, outbox member.
			c.keys = append(c.keys, s.akey(a, watchKey, w), s.akey(a, matchLogKey, w), dk[0], dk[1])
			c.args = append(c.args, n.Seq, boolArg(fresh), da[0], da[1], da[2], da[3], da[4])
		}
	}
	return byAcct, nil
}

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// candidates returns for each notice the watches that may match it: those
// holding one of its reverse-index keys and the filter-only ones, each
// with its account and filter in the caches.
func (s *Store) candidates(ctx context.Context, ns []notice.Notice) ([][]string, error) {
	fo, looks, err := indexLookups(ctx, s, ns, "match arrivals", func(p redis.Pipeliner, set string) *redis.StringSliceCmd {
		return p.SMembers(ctx, set)
	})
	if err != nil {
		return nil, err
	}
	cands := make([][]string, len(ns))
	need := map[string]bool{}
	all := map[string]bool{}
	for i, ls := range looks {
		ws := slices.Clone(fo.Val())
		for _, l := range ls {
			ws = append(append(ws, l.first.Val()), l.more.Val()...)
		}
		slices.Sort(ws)
		cands[i] = slices.DeleteFunc(slices.Compact(ws), func(w string) bool { return w == "" })
		for _, w := range cands[i] {
			all[w] = true
			if _, ok := s.filters.get(w); !ok {
				need[w] = true
			}
		}
	}
	if _, err := s.accountsOf(ctx, slices.Collect(maps.Keys(all))); err != nil {
		return nil, err
	}
	return cands, s.loadFilters(ctx, need)
}

// loadFilters reads the filters of the given watches into the cache; a
// watch deleted meanwhile is skipped.
func (s *Store) loadFilters(ctx context.Context, ids map[string]bool) error {
	if len(ids) == 0 {
		return nil
	}
	owners, err := s.accountsOf(ctx, slices.Collect(maps.Keys(ids)))
	if err != nil {
		return err
	}
	var docs []*redis.StringCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for id, a := range owners {
			docs = append(docs, p.HGet(ctx, s.akey(a, watchKey, id), "doc"))
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
// it. Quota counts and logged matches stay as they are.
func (s *Store) RefreshWatchKeys(ctx context.Context) (int, error) {
	reg, err := s.currentRegister(ctx)
	if err != nil || reg.v == "" {
		return 0, err
	}
	ws, err := s.allWatches(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ow := range ws {
		acct, id := ow.acct, ow.id
		v, err := s.rdb.HMGet(ctx, s.akey(acct, watchKey, id), "regv", "doc", "ixabn").Result()
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
		oldKeys, err := s.rdb.Get(ctx, s.akey(acct, watchKey, id, "keys")).Result()
		if err != nil && err != redis.Nil {
			return n, s.fail("refresh watch keys", err)
		}
		added, _ := diffKeys(splitList(oldKeys), exp.keys)
		ixAdded, ixRemoved := diffKeys(storedIndexKeys(oldKeys, v[2]), exp.index())
		if err := s.indexKeys(ctx, id, ixAdded, ixRemoved); err != nil {
			return n, err
		}
		ok, err := refreshScript.Run(ctx, s.rdb, []string{s.akey(acct, watchKey, id), s.akey(acct, watchKey, id, "keys")}, exp.regv, joinList(exp.keys), joinList(exp.ixABNs)).Int()
		if err == nil && ok == 0 {
			// Deleted meanwhile: its delete took out the keys it knew.
			err = s.indexKeys(ctx, id, nil, ixAdded)
		}
		if err == nil {
			err = s.rdb.Incr(ctx, s.key(watchSetKey)).Err()
		}
		if err != nil {
			return n, s.fail("refresh watch keys", err)
		}
		if ok == 0 {
			continue
		}
		n++
		if len(added) > 0 {
			f, err := w.Filters.NoticeFilter()
			if err == nil {
				_, err = s.backfill(ctx, acct, id, added, f)
			}
			if err != nil {
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
	return added, slices.Collect(maps.Keys(in))
}

// refreshScript installs a watch's re-expanded keys once its
// reverse-index entries are updated; the caller then bumps the watch-set
// version (a crash between leaves it unbumped: a range matched meanwhile
// against the older keys is not matched again, and the backfill of the
// added keys finds its notices). KEYS (the account's): w:<id>,
// w:<id>:keys. ARGV: regv, keys comma-joined, ixabn comma-joined.
var refreshScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'regv', ARGV[1], 'ixabn', ARGV[3])
return 1
`)
