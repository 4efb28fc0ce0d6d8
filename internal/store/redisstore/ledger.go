package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/webhook"
)

// The delivery ledger of scale mode. Records live in dr:<watch> (see
// webhooks.go); besides the fields of delivery.Record each record keeps
// "inflight", the number of an attempt begun and not yet finished, so an
// attempt interrupted by a crash is not counted twice when asynq runs the
// task again, and "holder" and "lease", the task making that attempt and
// the end of its lease (ms), kept in dleaseKey too (Begin, Renew,
// LapsedAttempts).
//
//	dq    zset: the outbox of deliveries that need an asynq task, members
//	      "<watch>|<delivery id>|<notice seq>", score the due time in ms.
//	      A delivery is added in the same script that creates or releases
//	      it; the scheduler's pump enqueues the task (TaskID = delivery id)
//	      and only then removes the member, so a crash in between enqueues
//	      it again, which asynq refuses as a duplicate id.
//
// Attempts: Begin (the attempt's URL, current secret and the watch's state,
// read at attempt time), then Complete with the outcome, by the rules of
// package delivery.

var _ store.Ledger = (*Store)(nil)

// Ref names one delivery: what an asynq task carries.
type Ref struct {
	WatchID    string `json:"w"`
	DeliveryID string `json:"d"`
	NoticeSeq  int64  `json:"s"`
}

func (r Ref) member() string { return r.WatchID + "|" + r.DeliveryID + "|" + itoa(r.NoticeSeq) }

// parseRef reads an outbox member.
func parseRef(m string) (Ref, bool) {
	p := strings.Split(m, "|")
	if len(p) != 3 {
		return Ref{}, false
	}
	seq, err := strconv.ParseInt(p[2], 10, 64)
	if err != nil {
		return Ref{}, false
	}
	return Ref{WatchID: p[0], DeliveryID: p[1], NoticeSeq: seq}, true
}

// createDeliveryScript records a pending delivery unless the pair has one: due at
// once (and put in the outbox) when the watch is active, held otherwise.
// KEYS: dr:<watch>, dl:<watch>, w:<watch>, dq, dstat, ddue. ARGV: delivery
// id, record JSON (next_attempt_at set), list score, list member, outbox
// member, due ms.
var createDeliveryScript = redis.NewScript(`
local doc = redis.call('HGET', KEYS[3], 'doc')
if not doc then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
local r = cjson.decode(ARGV[2])
local active = cjson.decode(doc).active
if not active then r.next_attempt_at = nil end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
redis.call('HINCRBY', KEYS[5], 'pending', 1)
if active then
  redis.call('ZADD', KEYS[4], ARGV[6], ARGV[5])
  redis.call('ZADD', KEYS[6], ARGV[6], ARGV[5])
end
return 1
`)

// pendingArgs are the keys and arguments of createDeliveryScript for the
// delivery of n to the watch at now.
func (s *Store) pendingArgs(watchID string, n *notice.Notice, now time.Time) ([]string, []any, error) {
	ts := notice.Timestamp(now)
	r := delivery.Record{ID: webhook.DeliveryID(watchID, n.ID), NoticeID: n.ID, NoticeSeq: n.Seq,
		Status: delivery.Pending, CreatedAt: ts, UpdatedAt: ts, NextAttemptAt: &ts}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, nil, err
	}
	ref := Ref{WatchID: watchID, DeliveryID: r.ID, NoticeSeq: n.Seq}
	member := fmt.Sprintf("%020d|%s", n.Seq, r.ID)
	return []string{s.key(recordsKey, watchID), s.key(deliveriesKey, watchID), s.key(watchKey, watchID), s.key(outboxKey), s.key(dstatKey), s.key(ddueKey)},
		[]any{r.ID, b, stamp(now).UnixMilli(), member, ref.member(), now.UnixMilli()}, nil
}

// addPending records the pending delivery of n to the watch at now (once
// per pair): due at once when the watch is active, held otherwise. It
// reports whether it created one.
func (s *Store) addPending(ctx context.Context, watchID string, n *notice.Notice, now time.Time) (bool, error) {
	keys, args, err := s.pendingArgs(watchID, n, now)
	if err != nil {
		return false, err
	}
	k, err := createDeliveryScript.Run(ctx, s.rdb, keys, args...).Int()
	if err != nil {
		return false, s.fail("record delivery", err)
	}
	return k == 1, nil
}

// CreateDeliveries creates the deliveries of matched (watch, notice_seq)
// pairs (from the <namespace>:matched stream) that are eligible at now:
// the watch has a webhook, the notice arrived after the watch was created
// and was published within delivery.Window (delivery.Eligible). Each pair
// gets at most one delivery ever, however often it is handed in. It
// returns how many it created.
func (s *Store) CreateDeliveries(ctx context.Context, pairs []Ref, now time.Time) (int, error) {
	if len(pairs) == 0 {
		return 0, nil
	}
	seqs := make([]int64, 0, len(pairs))
	seen := map[int64]bool{}
	for _, p := range pairs {
		if !seen[p.NoticeSeq] {
			seen[p.NoticeSeq] = true
			seqs = append(seqs, p.NoticeSeq)
		}
	}
	ns, err := s.source.NoticesBySeq(ctx, seqs)
	if err != nil {
		return 0, err
	}
	bySeq := make(map[int64]*notice.Notice, len(ns))
	for i := range ns {
		bySeq[ns[i].Seq] = &ns[i]
	}
	eseqs := map[string]int64{}
	pipe := s.rdb.Pipeline()
	var cmds []*redis.Cmd
	for _, p := range pairs {
		n := bySeq[p.NoticeSeq]
		if n == nil {
			continue // not readable: never delivered (the source lost it)
		}
		eseq, ok := eseqs[p.WatchID]
		if !ok {
			v, err := s.rdb.HMGet(ctx, s.key(watchKey, p.WatchID), "eseq", "secret").Result()
			if err != nil {
				return 0, s.fail("read watch", err)
			}
			eseq = -1 // no webhook or no watch: nothing to deliver
			if str(v[1]) != "" {
				eseq, _ = strconv.ParseInt(str(v[0]), 10, 64)
			}
			eseqs[p.WatchID] = eseq
		}
		if eseq < 0 {
			continue
		}
		pub, err := time.Parse(time.RFC3339Nano, n.PublishedAt)
		if err != nil || !delivery.Eligible(n.Seq, eseq, pub, delivery.JudgedAt(n.CollectedAt, now)) {
			continue
		}
		keys, args, err := s.pendingArgs(p.WatchID, n, now)
		if err != nil {
			return 0, err
		}
		// One round trip for the batch: the script's source is sent with
		// each call (Redis caches it compiled), so no NOSCRIPT can arise.
		cmds = append(cmds, createDeliveryScript.Eval(ctx, pipe, keys, args...))
	}
	if len(cmds) == 0 {
		return 0, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, s.fail("record deliveries", err)
	}
	created := 0
	for _, c := range cmds {
		if k, _ := c.Int(); k == 1 {
			created++
		}
	}
	return created, nil
}

// claimDueScript takes up to ARGV[3] outbox entries due at ARGV[1] (ms)
// and hides them from other pumps until ARGV[2] (ms). KEYS: dq.
var claimDueScript = redis.NewScript(`
local ms = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, m in ipairs(ms) do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], m) end
return ms
`)

// ClaimDue takes up to limit outbox entries due at now for one pump: they
// are hidden from other pumps for lease, after which, if the pump has not
// removed them (Scheduled) because it died, they are due again.
func (s *Store) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Ref, error) {
	ms, err := claimDueScript.Run(ctx, s.rdb, []string{s.key(outboxKey)}, now.UnixMilli(), now.Add(lease).UnixMilli(), limit).StringSlice()
	if err != nil {
		return nil, s.fail("read the delivery outbox", err)
	}
	out := make([]Ref, 0, len(ms))
	for _, m := range ms {
		if r, ok := parseRef(m); ok {
			out = append(out, r)
		} else {
			_ = s.rdb.ZRem(ctx, s.key(outboxKey), m).Err()
		}
	}
	return out, nil
}

// Scheduled removes refs from the outbox once their tasks exist.
func (s *Store) Scheduled(ctx context.Context, refs []Ref) error {
	if len(refs) == 0 {
		return nil
	}
	ms := make([]any, len(refs))
	for i, r := range refs {
		ms[i] = r.member()
	}
	return s.fail("update the delivery outbox", s.rdb.ZRem(ctx, s.key(outboxKey), ms...).Err())
}

// Postpone moves refs' outbox entries to at (their task could not be made
// yet).
func (s *Store) Postpone(ctx context.Context, refs []Ref, at time.Time) error {
	for _, r := range refs {
		if err := s.rdb.ZAddXX(ctx, s.key(outboxKey), redis.Z{Score: float64(at.UnixMilli()), Member: r.member()}).Err(); err != nil {
			return s.fail("update the delivery outbox", err)
		}
	}
	return nil
}

// Pending lists the pending deliveries of active watches with a webhook
// that were due at or before dueBy (not held): what must have an asynq
// task by then. The scheduler's sweep compares them with the tasks that
// exist, after a crash or a lost task, so none stays pending without a
// scheduled attempt; it passes a dueBy in the past, so a delivery whose
// attempt is not due yet (a retry minutes or hours away) is not looked at.
// It reads the gauge key ddue (gauges.go), which every delivery script
// keeps to exactly that set scored by the due time, computing it first in
// a namespace written before it existed: the cost is the number of
// deliveries due by dueBy, not of every pending one or every record kept.
func (s *Store) Pending(ctx context.Context, dueBy time.Time) ([]Ref, error) {
	computed, err := s.rdb.HExists(ctx, s.key(dstatKey), "v").Result()
	if err != nil {
		return nil, s.fail("list pending deliveries", err)
	}
	if !computed {
		if err := s.RebuildGauges(ctx); err != nil {
			return nil, err
		}
	}
	var out []Ref
	upTo := strconv.FormatInt(dueBy.UnixMilli(), 10)
	for lo := int64(0); ; lo += batch {
		ms, err := s.rdb.ZRangeByScore(ctx, s.key(ddueKey), &redis.ZRangeBy{Min: "-inf", Max: upTo, Offset: lo, Count: batch}).Result()
		if err != nil {
			return nil, s.fail("list pending deliveries", err)
		}
		for _, m := range ms {
			if r, ok := parseRef(m); ok {
				out = append(out, r)
			}
		}
		if len(ms) < batch {
			return out, nil
		}
	}
}

// Reschedule puts refs in the outbox, due at now (the sweep's repair).
func (s *Store) Reschedule(ctx context.Context, refs []Ref, now time.Time) error {
	for _, r := range refs {
		if err := s.rdb.ZAddNX(ctx, s.key(outboxKey), redis.Z{Score: float64(now.UnixMilli()), Member: r.member()}).Err(); err != nil {
			return s.fail("update the delivery outbox", err)
		}
	}
	return nil
}

// Begin outcomes.
const (
	// BeginAttempt: the attempt may go ahead with the returned Job.
	BeginAttempt = "attempt"
	// BeginDone: the delivery is no longer pending (delivered, dead,
	// webhook removed, watch deleted): nothing to do.
	BeginDone = "done"
	// BeginHeld: the watch is inactive; the delivery is held until it is
	// reactivated, which puts it back in the outbox.
	BeginHeld = "held"
	// BeginEarly: the attempt is not due yet (asynq schedules by whole
	// seconds); wait Until and begin again.
	BeginEarly = "early"
	// BeginBusy: another task holds the attempt and its lease runs: this
	// task has nothing to do (the holder, or the recovery of its lease,
	// carries the delivery on).
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
// with a webhook, counting it (an attempt begun and never finished, cut
// off by a crash, is not counted again). The attempt is held by task
// ARGV[5] until ARGV[6] (ms; 0: no lease), recorded in the record
// ("holder", "lease") and in dlease: while the lease runs, another task
// is told 'busy'; once it ran out, the attempt is taken over (its worker
// died) with the same number. A delivery that is done or held leaves
// dlease. KEYS: dr:<watch>, w:<watch>, dstat, ddue, dlease. ARGV: delivery
// id, now (timestamp), now ms, gauge member (<watch>|<delivery id>|<notice
// seq>), holder, lease end ms.
// Returns {state, attempt, sealed secret, url, next_attempt_at}.
var beginScript = redis.NewScript(`
local function done() redis.call('ZREM', KEYS[5], ARGV[4]) return {'done'} end
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return done() end
local r = cjson.decode(raw)
if r.status ~= 'pending' then return done() end
local v = redis.call('HMGET', KEYS[2], 'doc', 'secret')
if not v[1] or not v[2] then return done() end
local w = cjson.decode(v[1])
if not w.active then
  if r.next_attempt_at ~= nil and r.next_attempt_at ~= cjson.null then
    r.next_attempt_at = nil
    redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
    redis.call('ZREM', KEYS[4], ARGV[4])
  end
  redis.call('ZREM', KEYS[5], ARGV[4])
  return {'held'}
end
local next = ''
if r.next_attempt_at ~= nil and r.next_attempt_at ~= cjson.null then next = r.next_attempt_at end
if next ~= '' and next > ARGV[2] then return {'early', 0, '', '', next} end
local n = r.inflight
if n == nil or n == cjson.null then
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
	// Lease bounds the attempt; 0 takes no lease (the attempt is never
	// taken over, and never refused as busy).
	Lease time.Duration
}

// Begin starts an attempt of the delivery ref at now: it reads the
// webhook URL, the current secret (opened with the store's secret box) and
// the watch's state at this moment, so a rotation applies to every later
// attempt, a removed webhook ends the delivery and an inactive watch holds
// it. The attempt is counted here; Complete records its outcome. hold's
// task holds the attempt for hold.Lease (Renew extends it): another task
// that begins it meanwhile is answered BeginBusy; once the lease ran out
// without an outcome (the worker died), LapsedAttempts hands it to a
// recovery task, which takes it over under the same attempt number.
func (s *Store) Begin(ctx context.Context, ref Ref, now time.Time, hold Hold) (Begun, error) {
	until := int64(0)
	if hold.Lease > 0 {
		until = now.Add(hold.Lease).UnixMilli()
	}
	v, err := beginScript.Run(ctx, s.rdb, []string{s.key(recordsKey, ref.WatchID), s.key(watchKey, ref.WatchID), s.key(dstatKey), s.key(ddueKey), s.key(dleaseKey)},
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
		b.Job = store.Job{DeliveryID: ref.DeliveryID, WatchID: ref.WatchID, URL: fmt.Sprint(v[3]), Secret: secret,
			Attempt: int(n), Token: itoa(n)}
	}
	return b, nil
}

// renewScript moves the lease of the attempt in flight of a delivery to
// ARGV[3] (ms) if task ARGV[2] still holds it. KEYS: dr:<watch>, dlease.
// ARGV: delivery id, holder, lease end ms, gauge member.
var renewScript = redis.NewScript(`
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local r = cjson.decode(raw)
if r.status ~= 'pending' or r.holder ~= ARGV[2] or r.inflight == nil or r.inflight == cjson.null then return 0 end
r.lease = ARGV[3]
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return 1
`)

// Renew extends the lease of the attempt of ref that task holds to until,
// while the attempt runs (an attempt may wait for its endpoint's slot
// longer than any fixed lease). It reports false when task no longer
// holds it (the attempt ended, or its lease ran out and a recovery task
// took it over): the caller should stop.
func (s *Store) Renew(ctx context.Context, ref Ref, task string, until time.Time) (bool, error) {
	n, err := renewScript.Run(ctx, s.rdb, []string{s.key(recordsKey, ref.WatchID), s.key(dleaseKey)},
		ref.DeliveryID, task, until.UnixMilli(), ref.member()).Int()
	if err != nil {
		return false, s.fail("renew a delivery attempt's lease", err)
	}
	return n == 1, nil
}

// Lapsed is an attempt whose lease ran out without an outcome.
type Lapsed struct {
	Ref
	// LeaseMS is the end of the lapsed lease (unix ms): with the delivery
	// id, it names the recovery task once per lapse.
	LeaseMS int64
}

// claimLapsedScript takes up to ARGV[3] members of dlease whose lease
// ended at or before ARGV[1] (ms) and moves them to ARGV[2], so another
// worker does not take them too. KEYS: dlease. Returns member, score pairs.
var claimLapsedScript = redis.NewScript(`
local ms = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
for i = 1, #ms, 2 do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], ms[i]) end
return ms
`)

// LapsedAttempts takes up to limit attempts whose lease ran out at or
// before now without an outcome (their worker died mid-attempt): each is
// hidden from other callers for claim, after which, if no task took it
// over meanwhile, it is handed out again. The cost is one call that reads
// only the lapsed attempts.
func (s *Store) LapsedAttempts(ctx context.Context, now time.Time, claim time.Duration, limit int) ([]Lapsed, error) {
	v, err := claimLapsedScript.Run(ctx, s.rdb, []string{s.key(dleaseKey)}, now.UnixMilli(), now.Add(claim).UnixMilli(), limit).StringSlice()
	if err != nil {
		return nil, s.fail("read the lapsed delivery attempts", err)
	}
	var out []Lapsed
	for i := 0; i+1 < len(v); i += 2 {
		r, ok := parseRef(v[i])
		ms, err := strconv.ParseInt(v[i+1], 10, 64)
		if !ok || err != nil {
			_ = s.rdb.ZRem(ctx, s.key(dleaseKey), v[i]).Err()
			continue
		}
		out = append(out, Lapsed{Ref: r, LeaseMS: ms})
	}
	return out, nil
}

// completeScript records an attempt's outcome as decided by
// delivery.Decide. KEYS: dr:<watch>, w:<watch>, dstat, ddue, wdeact,
// dl:<watch>, df:<watch>, dlease. ARGV: delivery id, attempt n, status, last_error,
// updated_at, next_attempt_at, next_attempt_at ms, watch id,
// delivery.DeactivateAfter, delivered_at (the time the delivered body was
// sent), delivery.KeepRecords, the KeepAge cutoff (created_at ms),
// delivery.TrimStep.
// A final outcome (delivered, dead) adds the record to df:<watch>, the
// watch's final records by created_at, and removes, among the oldest
// TrimStep of those beyond its newest KeepRecords, the ones created
// before the cutoff (final()): a watch keeps its newest KeepRecords final
// records, every pending one, and every one of the last KeepAge.
// Returns the watch's consecutive failed notices after a dead outcome, -1
// otherwise. A dead outcome that brings an active watch to
// DeactivateAfter records the deactivation it owes in wdeact, in the same
// step (deactivate clears it); a delivered one clears it.
var completeScript = redis.NewScript(`
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return -1 end
local r = cjson.decode(raw)
if r.status ~= 'pending' then return -1 end
local n = tonumber(ARGV[2])
local member = ARGV[8] .. '|' .. ARGV[1] .. '|' .. string.format('%d', r.notice_seq)
local function final()
  local m = string.format('%020d', r.notice_seq) .. '|' .. ARGV[1]
  redis.call('ZADD', KEYS[7], redis.call('ZSCORE', KEYS[6], m) or 0, m)
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
local function leave(status)
  redis.call('HINCRBY', KEYS[3], 'pending', -1)
  redis.call('HINCRBY', KEYS[3], status, 1)
  if (r.attempts or 0) > 0 then redis.call('HINCRBY', KEYS[3], 'retry', -1) end
  redis.call('ZREM', KEYS[4], member)
end
r.updated_at = ARGV[5]
if ARGV[3] == 'delivered' then
  leave('delivered')
  r.status = 'delivered'
  r.delivered_at = ARGV[10]
  r.next_attempt_at = nil
  r.inflight = nil
  r.holder = nil
  r.lease = nil
  redis.call('ZREM', KEYS[8], member)
  redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HSET', KEYS[2], 'failures', 0) end
  redis.call('HDEL', KEYS[5], ARGV[8])
  final()
  return -1
end
if r.inflight ~= n then
  -- a stale attempt: the newer one owns the schedule
  r.last_error = 'attempt ' .. n .. ': ' .. ARGV[4]
  redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
  return -1
end
r.inflight = nil
r.holder = nil
r.lease = nil
redis.call('ZREM', KEYS[8], member)
r.last_error = ARGV[4]
if ARGV[3] == 'pending' then
  local doc = redis.call('HGET', KEYS[2], 'doc')
  if doc and cjson.decode(doc).active then
    r.next_attempt_at = ARGV[6]
    redis.call('ZADD', KEYS[4], ARGV[7], member)
  else
    r.next_attempt_at = nil
    redis.call('ZREM', KEYS[4], member)
  end
  redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
  return -1
end
leave('dead')
r.status = 'dead'
r.next_attempt_at = nil
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
final()
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
local f = redis.call('HINCRBY', KEYS[2], 'failures', 1)
if f >= tonumber(ARGV[9]) and cjson.decode(redis.call('HGET', KEYS[2], 'doc')).active then
  redis.call('HSET', KEYS[5], ARGV[8], cjson.encode({n = f, e = ARGV[4], at = ARGV[5]}))
end
return f
`)

// Complete records the outcome of job (begun by Begin) at now by
// delivery.Decide: delivered (the watch's consecutive failures start
// again), rescheduled after the retry wait, or dead, which counts a failed
// notice and deactivates the watch when delivery.Deactivates (its pending
// deliveries are then held).
func (s *Store) Complete(ctx context.Context, job store.Job, out store.Outcome, now time.Time) error {
	d := delivery.Decide(job.Attempt, out.OK, out.LastError, out.RetryUnit)
	ts := notice.Timestamp(now)
	next := now.Add(d.Wait)
	deliveredAt := ts
	if !out.SentAt.IsZero() {
		deliveredAt = notice.Timestamp(out.SentAt)
	}
	failures, err := completeScript.Run(ctx, s.rdb, []string{s.key(recordsKey, job.WatchID), s.key(watchKey, job.WatchID), s.key(dstatKey), s.key(ddueKey), s.key(wdeactKey), s.key(deliveriesKey, job.WatchID), s.key(finalKey, job.WatchID), s.key(dleaseKey)},
		job.DeliveryID, job.Attempt, d.Status, d.LastError, ts, notice.Timestamp(next), next.UnixMilli(), job.WatchID, delivery.DeactivateAfter, deliveredAt,
		delivery.KeepRecords, stamp(now.Add(-delivery.KeepAge)).UnixMilli(), delivery.TrimStep).Int()
	if err != nil {
		return s.fail("record a delivery outcome", err)
	}
	if failures < 0 || !delivery.Deactivates(failures) {
		return nil
	}
	if s.stopBefore != nil && s.stopBefore("deactivate") {
		return nil
	}
	return s.deactivate(ctx, job.WatchID, failures, d.LastError, now)
}

// Signing returns the current webhook URL and secret of job's watch (see
// store.Ledger), or errs.NotFound when the watch or its webhook is gone.
// Only the secret is read while it is the one job carries: every change of
// URL comes with a new secret (registration makes one), so the watch's
// document, which holds its identifiers, is read only after a change.
func (s *Store) Signing(ctx context.Context, job store.Job) (url, secret string, err error) {
	sealed, err := s.rdb.HGet(ctx, s.key(watchKey, job.WatchID), "secret").Result()
	if errors.Is(err, redis.Nil) || err == nil && sealed == "" {
		return "", "", noWebhook(job.WatchID)
	}
	if err != nil {
		return "", "", s.fail("read a webhook secret", err)
	}
	if secret, err = s.openSecret(job.WatchID, sealed); err != nil {
		return "", "", err
	}
	if secret == job.Secret {
		return job.URL, secret, nil
	}
	raw, err := s.rdb.HGet(ctx, s.key(watchKey, job.WatchID), "doc").Result()
	if errors.Is(err, redis.Nil) {
		return "", "", noWebhook(job.WatchID)
	}
	if err != nil {
		return "", "", s.fail("read a webhook URL", err)
	}
	w, err := decodeWatch(raw)
	if err != nil {
		return "", "", err
	}
	if w.WebhookURL == nil {
		return "", "", noWebhook(job.WatchID)
	}
	return *w.WebhookURL, secret, nil
}

// holdScript holds every pending delivery of a watch (next_attempt_at
// null). KEYS: dr:<watch>, ddue. ARGV: updated_at, watch id.
var holdScript = redis.NewScript(`
for _, raw in ipairs(redis.call('HVALS', KEYS[1])) do
  local r = cjson.decode(raw)
  if r.status == 'pending' and r.next_attempt_at ~= nil and r.next_attempt_at ~= cjson.null then
    r.next_attempt_at = nil
    redis.call('HSET', KEYS[1], r.id, cjson.encode(r))
    redis.call('ZREM', KEYS[2], ARGV[2] .. '|' .. r.id .. '|' .. string.format('%d', r.notice_seq))
  end
end
return 1
`)

// hold holds the watch's pending deliveries: their tasks find the watch
// inactive and do nothing.
func (s *Store) hold(ctx context.Context, watchID string, now time.Time) error {
	return s.fail("hold deliveries", holdScript.Run(ctx, s.rdb, []string{s.key(recordsKey, watchID), s.key(ddueKey)}, notice.Timestamp(now), watchID).Err())
}

// releaseScript makes every held delivery of an active watch due at once
// and puts it in the outbox, without the window check, and takes the watch
// out of wrel. A watch deleted or switched off again meanwhile is only
// taken out. KEYS: dr:<watch>, dq, ddue, wrel, w:<watch>, dlease. ARGV: now
// timestamp, now ms, watch id.
var releaseScript = redis.NewScript(`
redis.call('SREM', KEYS[4], ARGV[3])
local doc = redis.call('HGET', KEYS[5], 'doc')
if not doc or not cjson.decode(doc).active then return 0 end
local n = 0
for _, raw in ipairs(redis.call('HVALS', KEYS[1])) do
  local r = cjson.decode(raw)
  if r.status == 'pending' and (r.next_attempt_at == nil or r.next_attempt_at == cjson.null) then
    r.next_attempt_at = ARGV[1]
    r.updated_at = ARGV[1]
    r.inflight = nil
    r.holder = nil
    r.lease = nil
    redis.call('HSET', KEYS[1], r.id, cjson.encode(r))
    local m = ARGV[3] .. '|' .. r.id .. '|' .. string.format('%d', r.notice_seq)
    redis.call('ZREM', KEYS[6], m)
    redis.call('ZADD', KEYS[2], ARGV[2], m)
    redis.call('ZADD', KEYS[3], ARGV[2], m)
    n = n + 1
  end
end
return n
`)

// Release makes every held delivery of the watch due at now (it was just
// reactivated): all of them at once, without the two-day window check.
func (s *Store) Release(ctx context.Context, watchID string, now time.Time) (int, error) {
	n, err := releaseScript.Run(ctx, s.rdb, []string{s.key(recordsKey, watchID), s.key(outboxKey), s.key(ddueKey), s.key(wrelKey), s.key(watchKey, watchID), s.key(dleaseKey)},
		notice.Timestamp(now), now.UnixMilli(), watchID).Int()
	return n, s.fail("release held deliveries", err)
}

// Options in steps.

// deliveryStateChanged holds a deactivated watch's pending deliveries and
// releases a reactivated one's (UpdateWatch).
func (s *Store) deliveryStateChanged(ctx context.Context, watchID string, was, now bool, at time.Time) error {
	switch {
	case was && !now:
		return s.hold(ctx, watchID, at)
	case !was && now:
		if s.stopBefore != nil && s.stopBefore("release") {
			return nil
		}
		_, err := s.Release(ctx, watchID, at)
		return err
	}
	return nil
}

// Reconcile finishes the changes that a stopped process (or a lost
// connection) left half done: it finishes a register load that died
// between its two commits (CompleteRegister), undoes every create whose creator stopped
// before finishing it (wpend, lease run out), finishes every delete whose
// deleter stopped before removing the watch's remains (trash, sweepTrash), releases the held deliveries
// of every watch turned back on (wrel), and switches off every watch owed
// a deactivation (wdeact) whose consecutive failed notices still reach
// delivery.DeactivateAfter. The scheduler's sweep calls it; it
// returns how many changes it finished.
func (s *Store) Reconcile(ctx context.Context, now time.Time) (int, error) {
	repaired := 0
	// A register load that died between its two commits (regpending.go).
	if how, err := s.CompleteRegister(ctx); err != nil {
		return repaired, err
	} else if how != "" {
		repaired++
	}
	// A create that cannot be undone now must not hold up the rest.
	done, undoErr := s.undoStalledCreates(ctx, now)
	done += repaired
	// Deletes whose deleter stopped before removing the watch's remains;
	// one that cannot be finished now must not hold up the rest either.
	swept, trashErr := s.sweepTrash(ctx, now)
	done += swept
	undoErr = errors.Join(undoErr, trashErr)
	rel, err := s.rdb.SMembers(ctx, s.key(wrelKey)).Result()
	if err != nil {
		return done, s.fail("read the watches to release", err)
	}
	for _, id := range rel {
		if _, err := s.Release(ctx, id, now); err != nil {
			return done, err
		}
		done++
	}
	owed, err := s.rdb.HGetAll(ctx, s.key(wdeactKey)).Result()
	if err != nil {
		return done, s.fail("read the watches to deactivate", err)
	}
	for id, raw := range owed {
		var d struct {
			N  int    `json:"n"`
			E  string `json:"e"`
			At string `json:"at"`
		}
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			return done, fmt.Errorf("redisstore: deactivation owed to watch %s is unreadable (%q): %w", id, raw, err)
		}
		failures, err := s.rdb.HGet(ctx, s.key(watchKey, id), "failures").Int()
		if err != nil && !errors.Is(err, redis.Nil) {
			return done, s.fail("read a watch's failures", err)
		}
		if !delivery.Deactivates(failures) {
			// A delivered notice (or a reactivation) reset the count since.
			if err := s.rdb.HDel(ctx, s.key(wdeactKey), id).Err(); err != nil {
				return done, s.fail("drop a deactivation", err)
			}
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, d.At)
		if err != nil {
			at = now
		}
		if err := s.deactivate(ctx, id, d.N, d.E, at); err != nil {
			return done, err
		}
		done++
	}
	return done, undoErr
}

// NoticeBySeq returns the notice with notice_seq seq from the store's
// notice source (ok false when the source no longer has it): the body of
// an attempt is built at attempt time, so an amended notice is sent as
// amended.
func (s *Store) NoticeBySeq(ctx context.Context, seq int64) (notice.Notice, bool, error) {
	ns, err := s.source.NoticesBySeq(ctx, []int64{seq})
	if err != nil || len(ns) == 0 {
		return notice.Notice{}, false, err
	}
	return ns[0], true, nil
}
