package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/mail"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/watch"
)

var _ store.Watches = (*Store)(nil)

// storedWatch is a watch as kept in w:<id> doc (w:<id>'s other fields and
// the other keys of a watch: docs/redis.md's key table).
type storedWatch struct {
	ID                string        `json:"id"`
	AccountID         string        `json:"account_id"`
	Name              string        `json:"name"`
	Active            bool          `json:"active"`
	DeactivatedReason string        `json:"deactivated_reason,omitempty"`
	Identifiers       []string      `json:"identifiers"`
	Unresolved        []string      `json:"unresolved"`
	Filters           storedFilters `json:"filters"`
	AlertEmail        *string       `json:"alert_email,omitempty"`
	WebhookURL        *string       `json:"webhook_url,omitempty"`
	CreatedAt         time.Time     `json:"created_at"`
	UpdatedAt         time.Time     `json:"updated_at"`
}

type storedFilters = watch.StoredFilters

func encodeWatch(w watch.Watch) (string, error) {
	b, err := json.Marshal(storedWatch{ID: w.ID, AccountID: w.AccountID, Name: w.Name, Active: w.Active,
		DeactivatedReason: w.DeactivatedReason, Identifiers: nonNil(w.Identifiers), Unresolved: nonNil(w.Unresolved),
		Filters: storedFilters(w.Filters), AlertEmail: w.AlertEmail, WebhookURL: w.WebhookURL,
		CreatedAt: w.CreatedAt.UTC(), UpdatedAt: w.UpdatedAt.UTC()})
	return string(b), err
}

func decodeWatch(doc string) (watch.Watch, error) {
	var sw storedWatch
	if err := json.Unmarshal([]byte(doc), &sw); err != nil {
		return watch.Watch{}, fmt.Errorf("redisstore: unreadable watch: %w", err)
	}
	return watch.Watch{ID: sw.ID, AccountID: sw.AccountID, Name: sw.Name, Active: sw.Active,
		DeactivatedReason: sw.DeactivatedReason, Identifiers: sw.Identifiers, Unresolved: sw.Unresolved,
		Filters: watch.Filters(sw.Filters), AlertEmail: sw.AlertEmail, WebhookURL: sw.WebhookURL,
		CreatedAt: sw.CreatedAt, UpdatedAt: sw.UpdatedAt}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// expansion is what a watch's identifiers mean against the register and
// the notices (the embedded store's rules, docs/redis.md "Quotas").
type expansion struct {
	keys       []string // match keys: the identifiers and their register ACNs and ABNs; nil for none (filter-only)
	companies  []string // what the watch counts for the quota
	unresolved []string // identifiers neither the register nor a notice holds, in order
	// ixABNs: the ABN identifiers the register does not resolve, sorted;
	// with the ACNs among keys, the watch's reverse-index keys.
	ixABNs []string
	regv   string
}

func (e expansion) index() []string { return indexKeysOf(e.keys, e.ixABNs) }

// indexKeysOf returns the reverse-index keys of a watch: every ACN among
// its match keys and its unresolved ABN identifiers (why not the others:
// docs/redis.md, "Indexed by ACN"; noticeKeys).
func indexKeysOf(keys, ixABNs []string) []string {
	out := make([]string, 0, len(keys)/2+len(ixABNs))
	for _, k := range keys {
		if len(k) == 9 {
			out = append(out, k)
		}
	}
	return append(out, ixABNs...)
}

// storedIndexKeys is indexKeysOf over a watch's stored keys and ixabn
// field; a watch written before ixabn existed (nil) has every key indexed.
func storedIndexKeys(keys string, ixabn any) []string {
	if ixabn == nil {
		return splitList(keys)
	}
	return indexKeysOf(splitList(keys), splitList(str(ixabn)))
}

// expand resolves normalised, distinct identifiers: from the screen copy
// when it holds a current register, else in a few round trips to Redis
// beside one question to the notice source.
func (s *Store) expand(ctx context.Context, ids []string) (expansion, error) {
	if len(ids) > 0 {
		if exp, done, err := s.screenCopy.expand(ctx, ids); done || err != nil {
			return exp, err
		}
	}
	reg, err := s.currentRegister(ctx)
	exp := expansion{regv: reg.v}
	if err != nil || len(ids) == 0 {
		return exp, err
	}
	acns := slices.DeleteFunc(slices.Clone(ids), func(v string) bool { return len(v) != 9 })
	abns := slices.DeleteFunc(slices.Clone(ids), func(v string) bool { return len(v) == 9 })
	// Known from the notices means carried by a notice now (as the
	// embedded store and the screen copy count it).
	var onNotices map[string]bool
	var carriedErr error
	carried := make(chan struct{})
	go func() { onNotices, carriedErr = s.source.CarriedIdentifiers(ctx, ids); close(carried) }()
	cos, err := reg.companies(ctx, acns)
	var abnACNs [][]string
	if err == nil {
		abnACNs, err = reg.acnsOf(ctx, abns)
	}
	<-carried
	if err = cmp.Or(err, carriedErr); err != nil {
		return exp, err
	}
	all := slices.Clone(acns)
	resolved := make([]string, len(abns))
	for i, l := range abnACNs {
		resolved[i] = primaryACN(abns[i], l)
		all = append(all, l...)
	}
	regCos, err := reg.companies(ctx, all[len(acns):])
	if err != nil {
		return exp, err
	}
	regCos = append(cos, regCos...)
	keys := make(map[string]struct{}, len(ids)*2)
	companies := make(map[string]struct{}, len(ids))
	known := make(map[string]bool, len(ids))
	for _, v := range ids {
		keys[v] = struct{}{}
	}
	for i, a := range all {
		keys[a] = struct{}{}
		for _, b := range regCos[i].abns {
			keys[b] = struct{}{}
		}
		if i < len(acns) { // an identifier: counts as itself
			companies[a], known[a] = struct{}{}, regCos[i].named
		}
	}
	for i, v := range abns {
		c := resolved[i]
		known[v] = c != ""
		if c == "" {
			c = v
			exp.ixABNs = append(exp.ixABNs, v)
		}
		companies[c] = struct{}{}
	}
	slices.Sort(exp.ixABNs)
	for _, v := range ids {
		if !known[v] && !onNotices[v] {
			exp.unresolved = append(exp.unresolved, v)
		}
	}
	exp.keys, exp.companies = sortBoth(keys, companies)
	return exp, nil
}

// sortBoth returns the sorted keys of a and of b, sorted in parallel.
func sortBoth(a, b map[string]struct{}) ([]string, []string) {
	sorted := make(chan []string, 1)
	go func() { sorted <- slices.Sorted(maps.Keys(b)) }()
	return slices.Sorted(maps.Keys(a)), <-sorted
}

// createScript checks the plan's limits and writes the watch in one step,
// on the companies staged before (stage:<id>:co) as whole sets, never
// element by element in Lua (docs/redis.md "Quotas"). A refusal leaves the
// stage, so the create can be asked again after undoing a dead create.
// Every key is the account's. KEYS: watches, companies, w:<id>,
// stage:<id>:co, w:<id>:co, wpend, winactive, w:<id>:keys. ARGV: watch
// limit, company limit, watch id, score, doc, account, match keys
// (comma-joined, "" for a filter-only watch), regv, eseq, ixabn, lease (ms).
var createScript = redis.NewScript(`
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[1]) then return {'watch_limit', n} end
local staged = redis.call('SCARD', KEYS[4])
if staged > 0 then
  local current = redis.call('SCARD', KEYS[2])
  local adding = staged - redis.call('SINTERCARD', 2, KEYS[4], KEYS[2])
  if current + adding > tonumber(ARGV[2]) then return {'quota', current, adding} end
  if adding > 0 then
    if staged < current then
      -- SADD in chunks costs O(staged); SUNIONSTORE would rewrite the
      -- account's whole set, O(current + staged).
      local m = redis.call('SMEMBERS', KEYS[4])
      for i = 1, #m, 5000 do
        redis.call('SADD', KEYS[2], unpack(m, i, math.min(i + 4999, #m)))
      end
    else
      redis.call('SUNIONSTORE', KEYS[2], KEYS[2], KEYS[4])
    end
  end
  redis.call('RENAME', KEYS[4], KEYS[5])
  redis.call('PERSIST', KEYS[5])
end
redis.call('HSET', KEYS[3], 'account', ARGV[6], 'doc', ARGV[5], 'regv', ARGV[8], 'eseq', ARGV[9], 'ixabn', ARGV[10])
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
redis.call('ZADD', KEYS[6], ARGV[11], ARGV[3])
if not cjson.decode(ARGV[5]).active then redis.call('SADD', KEYS[7], ARGV[3]) end
if ARGV[7] ~= '' then redis.call('SET', KEYS[8], ARGV[7]) end
return {'ok'}
`)

// activateScript makes an indexed watch visible to arrival matching: every
// batch committed from the cursor it returns on is matched against it
// (the wsv bump makes a batch matched against the older set retry). KEYS:
// match:through, wsv. cseqScript then records that cursor in the watch
// (account's slot) unless the watch is gone or its create claimed by a
// sweep (w:<id> field undo): -1. A crash between the two leaves a watch
// without cseq, whose create never finishes: the sweep undoes it.
var activateScript = redis.NewScript(`
redis.call('INCR', KEYS[2])
return tonumber(redis.call('GET', KEYS[1]) or '0')
`)

// cseqScript: KEYS: w:<id>. ARGV: cseq.
var cseqScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'undo') == 1 then return -1 end
redis.call('HSET', KEYS[1], 'cseq', ARGV[1])
return tonumber(ARGV[1])
`)

const stageTTL = time.Hour // a stage left by a crashed create expires

// CreateWatch stores w if plan allows: one script checks the watch count
// and the company quota on its staged companies and writes it, so
// concurrent creates of any number of processes cannot overshoot, and a
// refused create writes nothing.
func (s *Store) CreateWatch(ctx context.Context, w watch.Watch, plan account.Plan) (watch.Watch, error) {
	if w.ID == "" || w.AccountID == "" {
		return w, fmt.Errorf("redisstore: create watch: the watch needs an ID and an AccountID; build it with watch.New")
	}
	f, err := w.Filters.NoticeFilter()
	if err != nil {
		return w, err
	}
	exp, err := s.expand(ctx, w.Identifiers)
	if err != nil {
		return w, err
	}
	w.Unresolved = nonNil(exp.unresolved)
	doc, err := encodeWatch(w)
	if err != nil {
		return w, err
	}
	// Notices at or below eseq arrived before the watch: never delivered.
	eseq, err := s.source.LatestSeq(ctx)
	if err != nil {
		return w, err
	}
	acct := w.AccountID
	stageCo := s.akey(acct, stageKey, w.ID, "co")
	if err := s.saddBatched(ctx, stageCo, exp.companies); err != nil {
		return w, err
	}
	// The directory first (every later reader finds the watch's account
	// there: a crash after leaves an entry naming no watch, which readers
	// skip), then the create lease's note, due only when the lease would
	// run out, so a sweep finds the account should the creator stop after
	// the script (docs/redis.md, "Work queues").
	if err := s.rdb.HSet(ctx, s.key(wacctKey), w.ID, acct).Err(); err != nil {
		return w, s.fail("create watch", err)
	}
	s.owners.Store(w.ID, acct)
	if err := s.wake(ctx, wakeCreate, acct, s.clock().Add(createLease)); err != nil {
		return w, err
	}
	var res []any
	for try := 0; try < 2; try++ {
		res, err = createScript.Run(ctx, s.rdb, []string{s.akey(acct, watchesKey),
			s.akey(acct, companiesKey), s.akey(acct, watchKey, w.ID), stageCo, s.akey(acct, watchKey, w.ID, "co"),
			s.akey(acct, createsKey), s.akey(acct, winactiveKey), s.akey(acct, watchKey, w.ID, "keys")},
			plan.Watches, plan.Companies, w.ID, w.CreatedAt.UnixMilli(), doc, acct, joinList(exp.keys), exp.regv, eseq, joinList(exp.ixABNs),
			s.clock().Add(createLease).UnixMilli()).Slice()
		if err != nil {
			return w, s.fail("create watch", err)
		}
		if str(res[0]) == "ok" || try > 0 {
			break
		}
		// A create whose process died still counts until it is undone: if
		// any of the account's is past its lease, undo it now and ask
		// again (once), rather than refuse for a watch that will never exist.
		if undone, err := s.undoStalledCreates(ctx, acct, s.clock()); err != nil || undone == 0 {
			break
		}
	}
	if str(res[0]) != "ok" {
		// Best effort: the stage expires after stageTTL anyway, and a
		// directory entry naming no watch is skipped by its readers.
		_ = s.rdb.Del(context.WithoutCancel(ctx), stageCo).Err()
		_ = s.rdb.HDel(context.WithoutCancel(ctx), s.key(wacctKey), w.ID).Err()
	}
	switch str(res[0]) {
	case "watch_limit":
		return w, errs.New(errs.WatchLimitReached,
			"plan %s allows %d watches and the account has %d; delete a watch (DELETE /v1/watches/{id}) or upgrade the plan",
			plan.Name, plan.Watches, res[1].(int64))
	case "quota":
		return w, errs.New(errs.QuotaExceeded,
			"plan %s allows %d companies; the account watches %d and this watch would add %d; remove companies or watches, or upgrade the plan",
			plan.Name, plan.Companies, res[1].(int64), res[2].(int64))
	}
	s.filters.put(w.ID, f)
	if err := s.finishCreate(ctx, w, exp.keys, exp.index(), f, eseq); err != nil {
		// Undo it (best effort, also when ctx has ended) so a retry is not
		// counted twice; failing that, a sweep undoes it after its lease.
		_ = s.deleteWatch(context.WithoutCancel(ctx), w.AccountID, w.ID, false)
		return w, err
	}
	return w, s.replicated(ctx, "watch create", s.tags(w.AccountID)...)
}

// finishCreateScript marks a create finished (a0, out of wpend) unless it
// was undone or claimed by a sweep (undo) meanwhile. KEYS: w:<id>, wpend
// (the account's). ARGV: watch id, a0.
var finishCreateScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'undo') == 1 or not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'a0', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`)

// finishCreate indexes a written watch, activates it for arrival matching,
// backfills its log, makes the deliveries activation missed, and only then
// marks the create finished, renewing its create lease meanwhile; a create
// stopped before that is undone by a sweep (docs/redis.md, "A create
// happens whole or not at all").
func (s *Store) finishCreate(ctx context.Context, w watch.Watch, keys, index []string, f notice.Filter, eseq int64) error {
	acct := w.AccountID
	defer s.renewLease(s.akey(acct, createsKey), w.ID)()
	if err := s.index(ctx, acct, w.ID, index, keys == nil); err != nil {
		return err
	}
	cseq, err := activateScript.Run(ctx, s.rdb, []string{s.log.Keys().MatchThrough, s.key(watchSetKey)}).Int64()
	if err == nil {
		cseq, err = cseqScript.Run(ctx, s.rdb, []string{s.akey(acct, watchKey, w.ID)}, cseq).Int64()
	}
	if err != nil || cseq < 0 {
		return cmp.Or(s.fail("create watch", err), errCreateUndone)
	}
	through, err := s.backfill(ctx, acct, w.ID, keys, f)
	if err != nil {
		return err
	}
	// Notices that arrived after eseq but were matched before activation
	// (at or below cseq) skipped this watch: the backfill found them, and
	// their deliveries are made here (once per pair, CreateDeliveries).
	if cseq > eseq {
		seqs, err := s.rdb.ZRangeByScore(ctx, s.akey(acct, matchLogKey, w.ID), &redis.ZRangeBy{Min: "(" + itoa(eseq), Max: itoa(cseq)}).Result()
		if err != nil {
			return s.fail("create watch", err)
		}
		refs := make([]Ref, len(seqs))
		for i, q := range seqs {
			n, _ := strconv.ParseInt(q, 10, 64)
			refs[i] = Ref{AccountID: acct, WatchID: w.ID, NoticeSeq: n}
		}
		if _, err := s.CreateDeliveries(ctx, refs, s.clock()); err != nil {
			return err
		}
	}
	ok, err := finishCreateScript.Run(ctx, s.rdb, []string{s.akey(acct, watchKey, w.ID), s.akey(acct, createsKey)}, w.ID, through).Int()
	if err != nil || ok == 0 {
		return cmp.Or(s.fail("create watch", err), errCreateUndone)
	}
	return nil
}

// errCreateUndone answers a create that outlived its lease: a sweep undid it.
var errCreateUndone error = errs.New(errs.BackendUnavailable, "the watch's creation stalled for over %s and was undone; create it again", createLease)

// saddBatched empties the set key and adds members to it, with a time to
// live of stageTTL, in pipelines of at most roundTrip members.
func (s *Store) saddBatched(ctx context.Context, key string, members []string) error {
	err := s.rdb.Del(ctx, key).Err()
	for lo := 0; err == nil && lo < len(members); lo += roundTrip {
		part := members[lo:min(lo+roundTrip, len(members))]
		_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := 0; i < len(part); i += batch {
				p.SAdd(ctx, key, anys(part[i:min(i+batch, len(part))])...)
			}
			p.Expire(ctx, key, stageTTL)
			return nil
		})
	}
	return s.fail("stage watch", err)
}

// The reverse index: rix:<bucket> maps an index key (indexKeysOf) to the
// first watch holding it, rixs:<key> holds the others; buckets keep the
// hashes small, which Redis stores compactly (docs/redis.md, "Sizes").
const rixBuckets = 1 << 16

func rixBucket(k string) string {
	h := fnv.New32a()
	h.Write([]byte(k))
	return strconv.FormatUint(uint64(h.Sum32()%rixBuckets), 16)
}

// rixScript indexes watch ARGV[1] under index keys ARGV[3..] (ARGV[2]
// "1") or unindexes it ("0"). KEYS: rix:<bucket> and rixs:<key> of each
// key, in turn. The index is shared (a notice's candidates are of every
// account): only a hint, which matching checks against the watch.
var rixScript = redis.NewScript(`
local id, add = ARGV[1], ARGV[2] == '1'
for i = 3, #ARGV do
  local b, k = KEYS[2 * i - 5], ARGV[i]
  if not add then
    if redis.call('HGET', b, k) == id then redis.call('HDEL', b, k) end
    redis.call('SREM', KEYS[2 * i - 4], id)
  elseif redis.call('HSETNX', b, k, id) == 0 then
    redis.call('SADD', KEYS[2 * i - 4], id)
  end
end
return 1
`)

// rixChunk is the most index keys one rixScript call takes: a few
// milliseconds (TestMillionCompanyWatch checks the slow log).
const rixChunk = 500

// indexKeys indexes the watch under the keys added and unindexes it under
// removed.
func (s *Store) indexKeys(ctx context.Context, id string, added, removed []string) error {
	var err error
	for _, op := range []struct {
		add  string
		keys []string
	}{{"1", added}, {"0", removed}} {
		for lo := 0; err == nil && lo < len(op.keys); lo += rixChunk {
			chunk := op.keys[lo:min(lo+rixChunk, len(op.keys))]
			var keys []string
			for _, k := range chunk {
				keys = append(keys, s.key(rixKey, rixBucket(k)), s.key(rixsKey, k))
			}
			err = rixScript.Run(ctx, s.rdb, keys, append([]any{id, op.add}, anys(chunk)...)...).Err()
		}
	}
	return s.fail("index watch", err)
}

// index adds a created watch to the reverse index (its index keys, or fo
// when filter-only) unless it is gone or its create claimed by a sweep
// (undo); finding it so after writing, it takes back what it wrote, so an
// undone create leaves no entry behind once its creator goes on (a
// creator that stops in between leaves entries naming no watch, which
// matching skips). Its creator learns of the undo from activation.
func (s *Store) index(ctx context.Context, acct, id string, keys []string, filterOnly bool) error {
	live := func() (bool, error) {
		v, err := s.rdb.HMGet(ctx, s.akey(acct, watchKey, id), "account", "undo").Result()
		return err == nil && v[0] != nil && v[1] == nil, s.fail("index watch", err)
	}
	if ok, err := live(); !ok || err != nil {
		return err
	}
	var err error
	if filterOnly {
		err = s.fail("index watch", s.rdb.SAdd(ctx, s.key(filterOnlyKey), id).Err())
	}
	if err == nil {
		err = s.indexKeys(ctx, id, keys, nil)
	}
	if err != nil {
		return err
	}
	if ok, err := live(); ok || err != nil {
		return err
	}
	return s.unindex(ctx, id, keys)
}

// unindex takes a watch out of the reverse index and fo.
func (s *Store) unindex(ctx context.Context, id string, keys []string) error {
	if err := s.rdb.SRem(ctx, s.key(filterOnlyKey), id).Err(); err != nil {
		return s.fail("unindex watch", err)
	}
	return s.indexKeys(ctx, id, nil, keys)
}

func watchNotFound(id string) error {
	return errs.New(errs.NotFound, "no watch %s on this account; GET /v1/watches lists the account's watches", errs.Quote(id))
}

// shown reports whether the watch whose w:<id> fields account and a0 are
// v[0] and v[1] is the account's and its create has finished (a0 set):
// until then it is hidden, as the embedded store's uncommitted create is.
func shown(accountID string, v []any) bool {
	return accountID != "" && str(v[0]) == accountID && v[1] != nil
}

// Watch returns one watch of the account, or errs.NotFound (also for a
// watch of another account, and for one whose create has not finished).
func (s *Store) Watch(ctx context.Context, accountID, id string) (watch.Watch, error) {
	if accountID == "" {
		return watch.Watch{}, watchNotFound(id)
	}
	v, err := s.rdb.HMGet(ctx, s.akey(accountID, watchKey, id), "account", "a0", "doc").Result()
	if err != nil {
		return watch.Watch{}, s.fail("read watch", err)
	}
	if !shown(accountID, v) {
		return watch.Watch{}, watchNotFound(id)
	}
	return decodeWatch(str(v[2]))
}

// ListWatches returns the account's watches whose create has finished,
// oldest first (ties by id).
func (s *Store) ListWatches(ctx context.Context, accountID string) ([]watch.Watch, error) {
	if accountID == "" {
		return []watch.Watch{}, nil
	}
	ids, err := s.rdb.ZRange(ctx, s.akey(accountID, watchesKey), 0, -1).Result()
	if err != nil {
		return nil, s.fail("list watches", err)
	}
	docs := make([]*redis.SliceCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			docs[i] = p.HMGet(ctx, s.akey(accountID, watchKey, id), "account", "a0", "doc")
		}
		return nil
	}); err != nil {
		return nil, s.fail("list watches", err)
	}
	out := []watch.Watch{}
	for _, d := range docs {
		if !shown(accountID, d.Val()) {
			continue // deleted meanwhile, or its create has not finished
		}
		w, err := decodeWatch(str(d.Val()[2]))
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// UpdateWatch applies a validated patch at now (watch.Watch.Apply) as a
// compare-and-set of the stored watch; turning a watch back on also resets
// its count of consecutive failed deliveries.
func (s *Store) UpdateWatch(ctx context.Context, accountID, id string, p watch.Patch, now time.Time) (watch.Watch, error) {
	var wasActive bool
	w, err := s.modifyWatch(ctx, accountID, id, watchNotFound, func(w *watch.Watch) ([]string, error) {
		wasActive = w.Active
		w.Apply(p, now)
		if w.Active && !wasActive {
			return []string{"failures", "0"}, nil
		}
		return nil, nil
	})
	if err != nil {
		return w, err
	}
	if err := s.deliveryStateChanged(ctx, accountID, id, wasActive, w.Active, now); err != nil {
		return w, err
	}
	return w, s.replicated(ctx, "watch update", s.tags(accountID)...)
}

// deleteScript is a delete's first step, short whatever the watch's size:
// what needs work element by element moves to trash:<id>:* for
// finishDelete (docs/redis.md "Bounds"). The mail ids were read before
// (-1: changed). Every key is the account's.
// KEYS: w:<id>, mpd:<id>, mq, watches, winactive, wrel, wdeact, wpend,
// w:<id>:keys, trash:<id>:keys, w:<id>:co, trash:<id>:co, dr:<id>,
// trash:<id>:dr, trash:<id>:ixabn, trash, wm:<id>, dl:<id>, df:<id>, then
// mail:<job> of each job. ARGV: account, id, mail retention ms, "1" for a
// finished create only (shown), lease (ms), the digest and alert job ids
// read ("" for none), then the id of each job.
var deleteScript = redis.NewScript(`
local id = ARGV[2]
local acc = redis.call('HGET', KEYS[1], 'account')
if acc ~= ARGV[1] then return 0 end
if ARGV[4] == '1' and redis.call('HEXISTS', KEYS[1], 'a0') == 0 then return 0 end
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[6] or (redis.call('HGET', KEYS[1], 'malert') or '') ~= ARGV[7] then return -1 end
for i = 20, #KEYS do
  local k, job = KEYS[i], ARGV[i - 12]
  if redis.call('HGET', k, 'status') == 'pending' then
    redis.call('HSET', k, 'status', 'deleted')
    redis.call('HDEL', k, 'token')
    redis.call('PEXPIRE', k, ARGV[3])
    redis.call('ZREM', KEYS[3], job)
  end
end
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[4], id)
for i = 5, 6 do redis.call('SREM', KEYS[i], id) end
redis.call('HDEL', KEYS[7], id)
redis.call('ZREM', KEYS[8], id)
for i = 9, 13, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('RENAME', KEYS[i], KEYS[i + 1])
    redis.call('PERSIST', KEYS[i + 1])
  end
end
local ix = redis.call('HGET', KEYS[1], 'ixabn')
if ix then redis.call('SET', KEYS[15], ix) end
redis.call('ZADD', KEYS[16], ARGV[5], id)
redis.call('UNLINK', KEYS[1], KEYS[17], KEYS[18], KEYS[19])
return 1
`)

// DeleteWatch removes a watch with its match log and frees the companies
// only it counted: gone for every reader in one short step, its remains
// removed in bounded chunks before the answer (so the quota is exact once
// it returns). A watch whose create has not finished is errs.NotFound.
func (s *Store) DeleteWatch(ctx context.Context, accountID, id string) error {
	if err := s.deleteWatch(ctx, accountID, id, true); err != nil {
		return err
	}
	return s.replicated(ctx, "watch delete", s.tags(accountID)...)
}

// deleteWatch is DeleteWatch; with finishedOnly false it also deletes a
// watch whose create has not finished (undoing that create).
func (s *Store) deleteWatch(ctx context.Context, accountID, id string, finishedOnly bool) error {
	if accountID == "" {
		return watchNotFound(id)
	}
	a := func(parts ...string) string { return s.akey(accountID, parts...) }
	t := func(part string) string { return a(trashKey, id, part) }
	keys := []string{a(watchKey, id), a(digestKey, id), a(mailQueueKey), a(watchesKey), a(winactiveKey), a(wrelKey), a(wdeactKey), a(createsKey),
		a(watchKey, id, "keys"), t("keys"), a(watchKey, id, "co"), t("co"), a(recordsKey, id), t("dr"), t("ixabn"),
		a(trashKey), a(matchLogKey, id), a(deliveriesKey, id), a(finalKey, id)}
	// The delete lease's note first, due when the lease would run out: a
	// sweep finds the account should the deleter stop after the script.
	if err := s.wake(ctx, wakeTrash, accountID, s.clock().Add(createLease)); err != nil {
		return err
	}
	n, err := s.casRun(ctx, "delete watch", deleteScript, func() ([]string, []any, error) {
		var digest, alert *redis.StringCmd
		_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			digest, alert = p.Get(ctx, keys[1]), p.HGet(ctx, keys[0], "malert")
			return nil
		})
		for _, c := range []*redis.StringCmd{digest, alert} {
			if err := c.Err(); err != nil && err != redis.Nil {
				return nil, nil, s.fail("delete watch", err)
			}
		}
		jobKeys, args := keys, []any{accountID, id, mail.Retention.Milliseconds(), boolArg(finishedOnly),
			s.clock().Add(createLease).UnixMilli(), digest.Val(), alert.Val()}
		for _, job := range slices.Compact([]string{digest.Val(), alert.Val()}) {
			if job != "" {
				jobKeys, args = append(jobKeys, a(mailKey, job)), append(args, job)
			}
		}
		return jobKeys, args, nil
	})
	if err != nil || n == 0 {
		return cmp.Or(err, watchNotFound(id))
	}
	s.filters.drop(id)
	return s.finishDelete(ctx, accountID, id)
}

// splitList splits a comma-joined list ("" is empty).
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func joinList(s []string) string { return strings.Join(s, ",") }
