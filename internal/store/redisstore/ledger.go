package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/webhook"
)

// The delivery ledger of scale mode (keys: docs/redis.md).

var _ store.Ledger = (*Store)(nil)

// ledgerLua is the Lua the ledger's scripts (and commitScript) share: rec
// reads record ARGV[1] of dr (KEYS[1]); gm and lm make a record's gauge
// member (ddue, dq, dlease) and list member (dl, df); settle makes pending
// record id of dr kdr final with status (counted out of pending into
// status, out of ddue, stored, and in df, scored as in dl); due makes
// pending r due at ts (ms) in ddue, and in the outbox when kdq is given,
// if active, else held (out of ddue), and stores it as id of kdr; pend
// stores a new pending record (JSON raw) unless dr has its id, in dl and
// counted, due by due.
const ledgerLua = `
local function rec() local raw = redis.call('HGET', KEYS[1], ARGV[1]) return raw and cjson.decode(raw) end
local function gm(w, id, r) return w .. '|' .. id .. '|' .. string.format('%d', r.notice_seq) end
local function lm(id, r) return string.format('%020d', r.notice_seq) .. '|' .. id end
local function set(v) return v ~= nil and v ~= cjson.null end
local function unlease(r) r.inflight = nil r.holder = nil r.lease = nil end
local function settle(kstat, kdue, kdr, kdl, kdf, id, m, r, status)
  redis.call('HINCRBY', kstat, 'pending', -1)
  redis.call('HINCRBY', kstat, status, 1)
  if (r.attempts or 0) > 0 then redis.call('HINCRBY', kstat, 'retry', -1) end
  redis.call('ZREM', kdue, m)
  r.status = status
  r.next_attempt_at = nil
  redis.call('HSET', kdr, id, cjson.encode(r))
  local lmem = lm(id, r)
  redis.call('ZADD', kdf, redis.call('ZSCORE', kdl, lmem) or 0, lmem)
end
local function due(kdr, id, r, active, m, kddue, ts, ms, kdq)
  if active then
    r.next_attempt_at = ts
    redis.call('ZADD', kddue, ms, m)
    if kdq then redis.call('ZADD', kdq, ms, m) end
  else
    r.next_attempt_at = nil
    redis.call('ZREM', kddue, m)
  end
  redis.call('HSET', kdr, id, cjson.encode(r))
end
local function pend(kdr, kdl, kdq, kstat, kddue, active, id, raw, score, lmem, gmem, ms)
  if redis.call('HEXISTS', kdr, id) == 1 then return 0 end
  local r = cjson.decode(raw)
  due(kdr, id, r, active, gmem, kddue, r.next_attempt_at, ms, kdq)
  redis.call('ZADD', kdl, score, lmem)
  redis.call('HINCRBY', kstat, 'pending', 1)
  return 1
end
`

// Ref names one delivery: what an asynq task carries. AccountID is the
// watch's account, whose keys hold the delivery; a task made by an older
// version has none, and the directory wacct answers (refAccount).
type Ref struct {
	AccountID  string `json:"a,omitempty"`
	WatchID    string `json:"w"`
	DeliveryID string `json:"d"`
	NoticeSeq  int64  `json:"s"`
}

func (r Ref) member() string { return r.WatchID + "|" + r.DeliveryID + "|" + itoa(r.NoticeSeq) }

// parseRef reads a gauge or outbox member of account acct.
func parseRef(acct, m string) (Ref, bool) {
	p := strings.Split(m, "|")
	if len(p) != 3 {
		return Ref{}, false
	}
	seq, err := strconv.ParseInt(p[2], 10, 64)
	return Ref{AccountID: acct, WatchID: p[0], DeliveryID: p[1], NoticeSeq: seq}, err == nil
}

// refAccount fills in ref's account from the directory when it has none
// (a task of an older version): false when the watch is gone.
func (s *Store) refAccount(ctx context.Context, ref *Ref) (bool, error) {
	if ref.AccountID != "" {
		return true, nil
	}
	a, err := s.accountOf(ctx, ref.WatchID)
	ref.AccountID = a
	return a != "", err
}

// jobAccount is the account of job's watch (refAccount).
func (s *Store) jobAccount(ctx context.Context, job store.Job) (string, error) {
	if job.AccountID != "" {
		return job.AccountID, nil
	}
	return s.accountOf(ctx, job.WatchID)
}

// createDeliveryScript records a pending delivery unless the pair has one
// (2), the watch has no webhook or the notice arrived before it
// (notice_seq at or below its eseq; 0): due at once (and in the outbox)
// when the watch is active, held otherwise (1). KEYS (the account's):
// dr:<watch>, dl:<watch>, w:<watch>, dq, dstat, ddue. ARGV: delivery id,
// record JSON, list score, list member, gauge member, due ms, notice_seq.
var createDeliveryScript = redis.NewScript(ledgerLua + `
local v = redis.call('HMGET', KEYS[3], 'doc', 'eseq', 'secret')
if not v[1] or not v[3] or v[3] == '' or tonumber(ARGV[7]) <= tonumber(v[2] or '0') then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 2 end
return pend(KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[6], cjson.decode(v[1]).active, ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])
`)

// pendingArgs are the keys and arguments of createDeliveryScript for the
// delivery of n to the watch of account acct at now.
func (s *Store) pendingArgs(acct, watchID string, n *notice.Notice, now time.Time) ([]string, []any, error) {
	ts := notice.Timestamp(now)
	r := delivery.Record{ID: webhook.DeliveryID(watchID, n.ID), NoticeID: n.ID, NoticeSeq: n.Seq,
		Status: delivery.Pending, CreatedAt: ts, UpdatedAt: ts, NextAttemptAt: &ts}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, nil, err
	}
	ref := Ref{WatchID: watchID, DeliveryID: r.ID, NoticeSeq: n.Seq}
	member := fmt.Sprintf("%020d|%s", n.Seq, r.ID)
	a := func(parts ...string) string { return s.akey(acct, parts...) }
	return []string{a(recordsKey, watchID), a(deliveriesKey, watchID), a(watchKey, watchID), a(outboxKey), a(dstatKey), a(ddueKey)},
		[]any{r.ID, b, stamp(now).UnixMilli(), member, ref.member(), now.UnixMilli(), n.Seq}, nil
}

// CreateDeliveries creates the deliveries of matched (watch, notice_seq)
// pairs eligible at now (delivery.Eligible judged at arrival, of a watch
// with a webhook), at most one per pair ever, and returns how many it
// created.
func (s *Store) CreateDeliveries(ctx context.Context, pairs []Ref, now time.Time) (int, error) {
	return s.createDeliveries(ctx, "record deliveries", pairs, now, true)
}

// createDeliveries is CreateDeliveries, judged at arrival or at now.
func (s *Store) createDeliveries(ctx context.Context, what string, pairs []Ref, now time.Time, atArrival bool) (int, error) {
	if len(pairs) == 0 {
		return 0, nil
	}
	seqs := make([]int64, 0, len(pairs))
	for _, p := range pairs {
		seqs = append(seqs, p.NoticeSeq)
	}
	slices.Sort(seqs)
	ns, err := s.source.NoticesBySeq(ctx, slices.Compact(seqs))
	if err != nil {
		return 0, err
	}
	bySeq := make(map[int64]*notice.Notice, len(ns))
	for i := range ns {
		bySeq[ns[i].Seq] = &ns[i]
	}
	pipe := s.rdb.Pipeline()
	var cmds []*redis.Cmd
	var accts []string
	for _, p := range pairs {
		if ok, err := s.refAccount(ctx, &p); err != nil || !ok {
			if err != nil {
				return 0, err
			}
			continue // the watch is gone
		}
		n := bySeq[p.NoticeSeq]
		if n == nil {
			continue // not readable: never delivered (the source lost it)
		}
		at := now
		if atArrival {
			at = delivery.JudgedAt(n.CollectedAt, now)
		}
		// The script checks the rest of delivery.Eligible: n.Seq above the watch's eseq.
		if pub, err := time.Parse(time.RFC3339Nano, n.PublishedAt); err != nil || !delivery.Eligible(n.Seq, 0, pub, at) {
			continue
		}
		keys, args, err := s.pendingArgs(p.AccountID, p.WatchID, n, now)
		if err != nil {
			return 0, err
		}
		// EVAL, not EVALSHA: no NOSCRIPT can arise in the pipeline.
		cmds = append(cmds, createDeliveryScript.Eval(ctx, pipe, keys, args...))
		accts = append(accts, p.AccountID)
	}
	// An empty pipeline sends nothing.
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, s.fail(what, err)
	}
	created := 0
	woken := map[string]bool{}
	for i, c := range cmds {
		k, _ := c.Int()
		if k == 1 {
			created++
		}
		// The outbox note after the script, also for a delivery made
		// before (a crash between the script and the note: the caller's
		// retry notes the account, else Reconcile does).
		if k > 0 && !woken[accts[i]] {
			woken[accts[i]] = true
			if err := s.wake(ctx, wakeOutbox, accts[i], now); err != nil {
				return created, err
			}
		}
	}
	return created, nil
}

// claimScript takes up to ARGV[3] members of the zset KEYS[1] scored at or
// before ARGV[1] (ms), hidden until ARGV[2]. Returns member, score pairs.
var claimScript = redis.NewScript(`
local ms = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
for i = 1, #ms, 2 do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], ms[i]) end
return ms
`)

// Claimed is a delivery a claim took from the outbox (ClaimDue) or the
// attempt leases (LapsedAttempts).
type Claimed struct {
	Ref
	// DueMS is when it fell due (unix ms): an outbox entry's due time, or a
	// lapsed attempt's lease end, which with the delivery id names the
	// recovery task once per lapse.
	DueMS int64
}

// claim runs claimScript on account acct's queue q: the refs and their
// scores before; a member that is no ref is dropped.
func (s *Store) claim(ctx context.Context, acct, q, what string, now, until time.Time, limit int) ([]Claimed, error) {
	if limit <= 0 {
		return nil, nil
	}
	key := s.akey(acct, q)
	v, err := claimScript.Run(ctx, s.rdb, []string{key}, now.UnixMilli(), until.UnixMilli(), limit).StringSlice()
	if err != nil {
		return nil, s.fail(what, err)
	}
	var out []Claimed
	for i := 0; i+1 < len(v); i += 2 {
		r, ok := parseRef(acct, v[i])
		ms, err := strconv.ParseInt(v[i+1], 10, 64)
		if !ok || err != nil {
			_ = s.rdb.ZRem(ctx, key, v[i]).Err()
			continue
		}
		out = append(out, Claimed{Ref: r, DueMS: ms})
	}
	return out, nil
}

// ClaimDue takes up to limit outbox entries due at now for one pump,
// hidden from other pumps for lease (due again if the pump died before
// Scheduled).
func (s *Store) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Claimed, error) {
	return s.claimWoken(ctx, wakeOutbox, outboxKey, "read the delivery outbox", now, now.Add(lease), limit)
}

// claimWoken claims up to limit entries due at now from queue q of the
// accounts wake:<wq> names due, hidden until until.
func (s *Store) claimWoken(ctx context.Context, wq, q, what string, now, until time.Time, limit int) ([]Claimed, error) {
	var out []Claimed
	err := s.eachWoken(ctx, wq, now, limit, func(acct string) error {
		got, err := s.claim(ctx, acct, q, what, now, until, limit-len(out))
		out = append(out, got...)
		return err
	})
	return out, err
}

// Scheduled takes done's entries out of the outbox (their tasks exist) and
// moves later's to at (no task could be made yet), in one round trip.
func (s *Store) Scheduled(ctx context.Context, done, later []Ref, at time.Time) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, r := range done {
			p.ZRem(ctx, s.akey(r.AccountID, outboxKey), r.member())
		}
		for _, r := range later {
			p.ZAddXX(ctx, s.akey(r.AccountID, outboxKey), redis.Z{Score: float64(at.UnixMilli()), Member: r.member()})
		}
		return nil
	})
	if err != nil {
		return s.fail("update the delivery outbox", err)
	}
	return s.wakeRefs(ctx, later, at)
}

// wakeRefs notes the accounts of refs in wake:dq at at.
func (s *Store) wakeRefs(ctx context.Context, refs []Ref, at time.Time) error {
	woken := map[string]bool{}
	for _, r := range refs {
		if !woken[r.AccountID] {
			woken[r.AccountID] = true
			if err := s.wake(ctx, wakeOutbox, r.AccountID, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// Reschedule puts refs in the outbox, due at now (the sweep's repair).
func (s *Store) Reschedule(ctx context.Context, refs []Ref, now time.Time) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, r := range refs {
			p.ZAddNX(ctx, s.akey(r.AccountID, outboxKey), redis.Z{Score: float64(now.UnixMilli()), Member: r.member()})
		}
		return nil
	})
	if err != nil {
		return s.fail("update the delivery outbox", err)
	}
	return s.wakeRefs(ctx, refs, now)
}

// Pending lists the pending deliveries (not held) due by dueBy: what must
// have an asynq task by then. It reads every account's ddue (pipelined,
// 1,000 accounts a round trip), so the cost follows the accounts and
// those deliveries.
func (s *Store) Pending(ctx context.Context, dueBy time.Time) ([]Ref, error) {
	// ddue is complete once the gauges were computed (Gauges computes them
	// in a namespace that never had them).
	if _, err := s.Gauges(ctx); err != nil {
		return nil, err
	}
	accts, err := s.accounts(ctx)
	if err != nil {
		return nil, err
	}
	var out []Ref
	upTo := strconv.FormatInt(dueBy.UnixMilli(), 10)
	for part := range slices.Chunk(accts, 1000) {
		due := make([]*redis.StringSliceCmd, len(part))
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, a := range part {
				due[i] = p.ZRangeByScore(ctx, s.akey(a, ddueKey), &redis.ZRangeBy{Min: "-inf", Max: upTo})
			}
			return nil
		}); err != nil {
			return nil, s.fail("list pending deliveries", err)
		}
		for i, d := range due {
			for _, m := range d.Val() {
				if r, ok := parseRef(part[i], m); ok {
					out = append(out, r)
				}
			}
		}
	}
	return out, nil
}

// Begin outcomes.
const (
	// BeginAttempt: the attempt may go ahead with the returned Job.
	BeginAttempt = "attempt"
	// BeginDone: the delivery is no longer pending.
	BeginDone = "done"
	// BeginHeld: the watch is inactive; reactivation releases it.
	BeginHeld = "held"
	// BeginEarly: not due yet (asynq schedules by whole seconds); wait
	// Until and begin again.
	BeginEarly = "early"
	// BeginBusy: another task holds the attempt under a live lease.
	BeginBusy = "busy"
)

// Begun is the answer of Begin.
type Begun struct {
	// State is BeginAttempt, BeginDone, BeginHeld, BeginEarly or BeginBusy.
	State string
	// Job is the attempt (without its Notice) when State is BeginAttempt.
	Job store.Job
	// Until is when the attempt is due, when State is BeginEarly.
	Until time.Time
}

// beginScript starts an attempt of a pending delivery of an active watch
// with a webhook, counting it unless one was begun and never finished (a
// crash). Task ARGV[5] holds it until ARGV[6] (ms; 0: no lease), in the
// record and dlease; after that it is taken over under the same number.
// KEYS (the account's): dr:<watch>, w:<watch>, dstat, ddue,
// dlease. ARGV: delivery id, now timestamp, now ms, gauge member, holder,
// lease end ms. Returns {state, attempt, sealed secret, url, next_attempt_at}.
var beginScript = redis.NewScript(ledgerLua + `
local function done(state) redis.call('ZREM', KEYS[5], ARGV[4]) return {state or 'done'} end
local r = rec()
if not r or r.status ~= 'pending' then return done() end
local v = redis.call('HMGET', KEYS[2], 'doc', 'secret')
if not v[1] or not v[2] then return done() end
local w = cjson.decode(v[1])
if not w.active then
  if set(r.next_attempt_at) then
    due(KEYS[1], ARGV[1], r, false, ARGV[4], KEYS[4])
  end
  return done('held')
end
local next = ''
if set(r.next_attempt_at) then next = r.next_attempt_at end
if next ~= '' and next > ARGV[2] then return {'early', 0, '', '', next} end
local n = r.inflight
if not set(n) then
  n = (r.attempts or 0) + 1
  if n == 1 then redis.call('HINCRBY', KEYS[3], 'retry', 1) end
  r.attempts = n
  r.inflight = n
  r.updated_at = ARGV[2]
elseif type(r.holder) == 'string' and r.holder ~= '' and r.holder ~= ARGV[5] and (tonumber(r.lease) or 0) > tonumber(ARGV[3]) then
  return {'busy', n, '', '', ''}
end
r.holder = ARGV[5]
r.lease = ARGV[6]
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
if tonumber(ARGV[6]) > 0 then redis.call('ZADD', KEYS[5], ARGV[6], ARGV[4]) end
return {'attempt', n, v[2], w.webhook_url, next}
`)

// Hold names who makes an attempt and for how long: Begin's lease.
type Hold struct {
	// Task is the asynq task id making the attempt.
	Task string
	// Lease bounds the attempt; 0 takes none (never taken over or busy).
	Lease time.Duration
}

// Begin starts and counts an attempt of the delivery ref at now, reading
// the webhook URL, the current secret and the watch's state now; Complete
// records its outcome. hold's task holds it for hold.Lease (Renew extends
// it); once the lease ran out without an outcome, LapsedAttempts hands it
// to a recovery task, which takes it over under the same number.
func (s *Store) Begin(ctx context.Context, ref Ref, now time.Time, hold Hold) (Begun, error) {
	if ok, err := s.refAccount(ctx, &ref); err != nil || !ok {
		return Begun{State: BeginDone}, err
	}
	until := int64(0)
	if hold.Lease > 0 {
		until = now.Add(hold.Lease).UnixMilli()
		// The lease's note first, due when it would run out: a recovery
		// finds the account should this worker die after the script.
		if err := s.wake(ctx, wakeLeases, ref.AccountID, time.UnixMilli(until)); err != nil {
			return Begun{}, err
		}
	}
	a := func(parts ...string) string { return s.akey(ref.AccountID, parts...) }
	v, err := beginScript.Run(ctx, s.rdb, []string{a(recordsKey, ref.WatchID), a(watchKey, ref.WatchID), a(dstatKey), a(ddueKey), a(dleaseKey)},
		ref.DeliveryID, notice.Timestamp(now), now.UnixMilli(), ref.member(), hold.Task, until).Slice()
	if err != nil {
		return Begun{}, s.fail("begin a delivery attempt", err)
	}
	b := Begun{State: fmt.Sprint(v[0])}
	switch b.State {
	case BeginEarly:
		b.Until, err = time.Parse(time.RFC3339Nano, fmt.Sprint(v[4]))
		if err != nil {
			return b, fmt.Errorf("redisstore: delivery %s has next_attempt_at %v, not a timestamp", ref.DeliveryID, v[4])
		}
	case BeginAttempt:
		n, _ := v[1].(int64)
		secret, err := s.openSecret(ref.WatchID, fmt.Sprint(v[2]))
		if err != nil {
			return b, err
		}
		b.Job = store.Job{DeliveryID: ref.DeliveryID, WatchID: ref.WatchID, AccountID: ref.AccountID, URL: fmt.Sprint(v[3]), Secret: secret,
			Attempt: int(n), Token: itoa(n)}
	}
	return b, nil
}

// renewScript moves the lease of a delivery's attempt in flight to ARGV[3]
// (ms) if task ARGV[2] still holds it. KEYS (the account's): dr:<watch>,
// dlease. ARGV:
// delivery id, holder, lease end ms, gauge member.
var renewScript = redis.NewScript(ledgerLua + `
local r = rec()
if not r or r.status ~= 'pending' or r.holder ~= ARGV[2] or not set(r.inflight) then return 0 end
r.lease = ARGV[3]
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return 1
`)

// Renew extends the lease of task's attempt of ref to until (an attempt
// may wait for its endpoint's slot longer than any fixed lease). False:
// task no longer holds it and should stop.
func (s *Store) Renew(ctx context.Context, ref Ref, task string, until time.Time) (bool, error) {
	if ok, err := s.refAccount(ctx, &ref); err != nil || !ok {
		return false, err
	}
	n, err := renewScript.Run(ctx, s.rdb, []string{s.akey(ref.AccountID, recordsKey, ref.WatchID), s.akey(ref.AccountID, dleaseKey)},
		ref.DeliveryID, task, until.UnixMilli(), ref.member()).Int()
	return n == 1, s.fail("renew a delivery attempt's lease", err)
}

// LapsedAttempts takes up to limit attempts whose lease ran out by now
// without an outcome (their worker died), hidden from other callers for
// claim. One call reads only the lapsed attempts.
func (s *Store) LapsedAttempts(ctx context.Context, now time.Time, claim time.Duration, limit int) ([]Claimed, error) {
	return s.claimWoken(ctx, wakeLeases, dleaseKey, "read the lapsed delivery attempts", now, now.Add(claim), limit)
}

// completeScript records an attempt's outcome as delivery.Decide made it.
// KEYS (the account's): dr:<watch>, w:<watch>, dstat, ddue, wdeact,
// dl:<watch>, df:<watch>, dlease. ARGV: delivery id, attempt n, status, last_error,
// updated_at, next_attempt_at, next_attempt_at ms, watch id,
// delivery.DeactivateAfter, delivered_at, delivery.KeepRecords, the
// KeepAge cutoff (created_at ms), delivery.TrimStep. A final outcome is
// added to df (settle) and trims it (docs/redis.md, "Bounds"). Returns the
// watch's consecutive failed notices after a dead outcome, else -1; one
// that reaches DeactivateAfter records the deactivation owed in wdeact.
var completeScript = redis.NewScript(ledgerLua + `
local r = rec()
if not r or r.status ~= 'pending' then return -1 end
local n = tonumber(ARGV[2])
local member = gm(ARGV[8], ARGV[1], r)
local function trim()
  local over = redis.call('ZCARD', KEYS[7]) - tonumber(ARGV[11])
  if over <= 0 then return end
  local ms = redis.call('ZRANGE', KEYS[7], 0, math.min(over, tonumber(ARGV[13])) - 1, 'WITHSCORES')
  for i = 1, #ms, 2 do
    if tonumber(ms[i + 1]) < tonumber(ARGV[12]) then
      local id = string.sub(ms[i], 22)
      local raw = redis.call('HGET', KEYS[1], id)
      redis.call('ZREM', KEYS[7], ms[i])
      redis.call('ZREM', KEYS[6], ms[i])
      if raw then
        redis.call('HDEL', KEYS[1], id)
        redis.call('HINCRBY', KEYS[3], cjson.decode(raw).status, -1)
      end
    end
  end
end
r.updated_at = ARGV[5]
local ok = ARGV[3] == 'delivered'
if not ok and r.inflight ~= n then
  -- a stale attempt: the newer one owns the schedule
  r.last_error = 'attempt ' .. n .. ': ' .. ARGV[4]
  redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
  return -1
end
unlease(r)
redis.call('ZREM', KEYS[8], member)
if ok then r.delivered_at = ARGV[10] else r.last_error = ARGV[4] end
if ARGV[3] == 'pending' then
  local doc = redis.call('HGET', KEYS[2], 'doc')
  due(KEYS[1], ARGV[1], r, doc and cjson.decode(doc).active, member, KEYS[4], ARGV[6], ARGV[7])
  return -1
end
settle(KEYS[3], KEYS[4], KEYS[1], KEYS[6], KEYS[7], ARGV[1], member, r, ARGV[3])
trim()
if ok then
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HSET', KEYS[2], 'failures', 0) end
  redis.call('HDEL', KEYS[5], ARGV[8])
  return -1
end
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
local f = redis.call('HINCRBY', KEYS[2], 'failures', 1)
if f >= tonumber(ARGV[9]) and cjson.decode(redis.call('HGET', KEYS[2], 'doc')).active then
  redis.call('HSET', KEYS[5], ARGV[8], cjson.encode({n = f, e = ARGV[4], at = ARGV[5]}))
end
return f
`)

// Complete records the outcome of job (begun by Begin) at now by
// delivery.Decide, deactivating the watch when delivery.Deactivates.
func (s *Store) Complete(ctx context.Context, job store.Job, out store.Outcome, now time.Time) error {
	d := delivery.Decide(job.Attempt, out.OK, out.LastError, out.RetryUnit)
	ts, next := notice.Timestamp(now), now.Add(d.Wait)
	deliveredAt := ts
	if !out.SentAt.IsZero() {
		deliveredAt = notice.Timestamp(out.SentAt)
	}
	acct, err := s.jobAccount(ctx, job)
	if err != nil || acct == "" {
		return err // the watch is gone: nothing to record
	}
	a := func(parts ...string) string { return s.akey(acct, parts...) }
	failures, err := completeScript.Run(ctx, s.rdb, []string{a(recordsKey, job.WatchID), a(watchKey, job.WatchID), a(dstatKey), a(ddueKey), a(wdeactKey), a(deliveriesKey, job.WatchID), a(finalKey, job.WatchID), a(dleaseKey)},
		job.DeliveryID, job.Attempt, d.Status, d.LastError, ts, notice.Timestamp(next), next.UnixMilli(), job.WatchID, delivery.DeactivateAfter, deliveredAt,
		delivery.KeepRecords, stamp(now.Add(-delivery.KeepAge)).UnixMilli(), delivery.TrimStep).Int()
	if err != nil {
		return s.fail("record a delivery outcome", err)
	}
	if failures < 0 || !delivery.Deactivates(failures) {
		return nil
	}
	_, err = s.deactivate(ctx, acct, job.WatchID, now)
	return err
}

// Signing returns the current webhook URL and secret of job's watch (see
// store.Ledger). Every new URL comes with a new secret, so the watch's
// document (large: its identifiers) is read only when the secret changed.
func (s *Store) Signing(ctx context.Context, job store.Job) (url, secret string, err error) {
	acct, err := s.jobAccount(ctx, job)
	if err != nil {
		return "", "", err
	}
	if acct == "" {
		return "", "", noWebhook(job.WatchID)
	}
	k := s.akey(acct, watchKey, job.WatchID)
	sealed, err := s.rdb.HGet(ctx, k, "secret").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", "", s.fail("read a webhook", err)
	}
	if sealed == "" {
		return "", "", noWebhook(job.WatchID)
	}
	if secret, err = s.openSecret(job.WatchID, sealed); err != nil || secret == job.Secret {
		return job.URL, secret, err
	}
	raw, err := s.rdb.HGet(ctx, k, "doc").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", "", s.fail("read a webhook", err)
	}
	w, err := decodeWatch(cmp.Or(raw, "{}")) // a deleted watch: no webhook
	if err == nil && w.WebhookURL == nil {
		err = noWebhook(job.WatchID)
	}
	if err != nil {
		return "", "", err
	}
	return *w.WebhookURL, secret, nil
}

// releaseScript makes every held delivery of an active watch due at once
// (in the outbox) and takes the watch out of wrel. KEYS (the account's):
// dr:<watch>, dq, ddue, wrel, w:<watch>, dlease. ARGV: now timestamp, now
// ms, watch id.
var releaseScript = redis.NewScript(ledgerLua + `
redis.call('SREM', KEYS[4], ARGV[3])
local doc = redis.call('HGET', KEYS[5], 'doc')
if not doc or not cjson.decode(doc).active then return 0 end
local n = 0
for _, raw in ipairs(redis.call('HVALS', KEYS[1])) do
  local r = cjson.decode(raw)
  if r.status == 'pending' and not set(r.next_attempt_at) then
    local m = gm(ARGV[3], r.id, r)
    r.updated_at = ARGV[1]
    unlease(r)
    due(KEYS[1], r.id, r, true, m, KEYS[3], ARGV[1], ARGV[2], KEYS[2])
    redis.call('ZREM', KEYS[6], m)
    n = n + 1
  end
end
return n
`)

// Release makes every held delivery of the watch due at now (it was just
// reactivated): all of them at once, without the two-day window check.
func (s *Store) Release(ctx context.Context, accountID, watchID string, now time.Time) (int, error) {
	a := func(parts ...string) string { return s.akey(accountID, parts...) }
	n, err := releaseScript.Run(ctx, s.rdb, []string{a(recordsKey, watchID), a(outboxKey), a(ddueKey), a(wrelKey), a(watchKey, watchID), a(dleaseKey)},
		notice.Timestamp(now), now.UnixMilli(), watchID).Int()
	if err != nil {
		return n, s.fail("release held deliveries", err)
	}
	// The outbox note after the script (a crash between: Reconcile notes
	// the account again).
	if n > 0 {
		err = s.wake(ctx, wakeOutbox, accountID, now)
	}
	return n, err
}

// deliveryStateChanged releases a reactivated watch's held deliveries
// (UpdateWatch; casWatchScript held them when it was switched off).
func (s *Store) deliveryStateChanged(ctx context.Context, accountID, watchID string, was, now bool, at time.Time) error {
	if was || !now {
		return nil
	}
	_, err := s.Release(ctx, accountID, watchID, at)
	return err
}

// Reconcile finishes what a stopped process left half done: a register
// load between its commits, creates (wpend), deletes (trash), releases
// (wrel) and deactivations still owed (wdeact), and notes every account
// with queued work in the wake sets again (rewakeAll), and returns how
// many changes it finished. The scheduler's sweep calls it.
func (s *Store) Reconcile(ctx context.Context, now time.Time) (int, error) {
	how, err := s.CompleteRegister(ctx)
	if err != nil {
		return 0, err
	}
	done := 0
	if how != "" {
		done++
	}
	// A create or delete that cannot be finished now must not hold up the rest.
	scanErr := s.scanTrash(ctx)
	swept, sweepErr := s.SweepStalled(ctx, now)
	done += swept
	sweepErr = errors.Join(scanErr, sweepErr)
	if err := s.rewakeAll(ctx); err != nil {
		return done, err
	}
	accts, err := s.accounts(ctx)
	if err != nil {
		return done, err
	}
	for part := range slices.Chunk(accts, 1000) {
		rel, owed := make([]*redis.StringSliceCmd, len(part)), make([]*redis.StringSliceCmd, len(part))
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, a := range part {
				rel[i], owed[i] = p.SMembers(ctx, s.akey(a, wrelKey)), p.HKeys(ctx, s.akey(a, wdeactKey))
			}
			return nil
		}); err != nil {
			return done, s.fail("read the watches to release or deactivate", err)
		}
		for i, a := range part {
			for _, id := range rel[i].Val() {
				if _, err := s.Release(ctx, a, id, now); err != nil {
					return done, err
				}
				done++
			}
			for _, id := range owed[i].Val() {
				did, err := s.deactivate(ctx, a, id, now)
				if err != nil {
					return done, err
				}
				if did {
					done++
				}
			}
		}
	}
	return done, sweepErr
}

// NoticeBySeq returns the notice with notice_seq seq from the notice
// source (ok false when it no longer has it).
func (s *Store) NoticeBySeq(ctx context.Context, seq int64) (notice.Notice, bool, error) {
	ns, err := s.source.NoticesBySeq(ctx, []int64{seq})
	if err != nil || len(ns) == 0 {
		return notice.Notice{}, false, err
	}
	return ns[0], true, nil
}
