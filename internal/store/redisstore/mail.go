package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/mail"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/watch"
)

// The mail queue of scale mode (keys mail:<id>, mq, mpd, mdead, mlasterr,
// mdw and the watch's dseq: docs/redis.md). The alert is queued by the
// script that deactivates the watch, so once per deactivation.

var _ store.Mail = (*Store)(nil)

// LastDigestWindow reads the last digest window run (key mdw, unix ms).
func (s *Store) LastDigestWindow(ctx context.Context) (time.Time, error) {
	ms, err := s.rdb.Get(ctx, s.key(digestsKey)).Int64()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, s.fail("read the digest window", err)
	}
	return time.UnixMilli(ms).UTC(), nil
}

// setWindowScript moves mdw forward only. KEYS: mdw. ARGV: window ms.
var setWindowScript = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > cur then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
`)

// SetDigestWindow records window as run, never moving it back.
func (s *Store) SetDigestWindow(ctx context.Context, window time.Time) error {
	return s.fail("record the digest window", setWindowScript.Run(ctx, s.rdb, []string{s.key(digestsKey)}, window.UnixMilli()).Err())
}

// DigestTargets lists the watches with an alert_email whose create has
// finished.
func (s *Store) DigestTargets(ctx context.Context) ([]mail.Target, error) {
	ids, err := s.rdb.SMembers(ctx, s.key(watchesKey)).Result()
	if err != nil {
		return nil, s.fail("list watches", err)
	}
	var out []mail.Target
	for _, id := range ids {
		v, err := s.rdb.HMGet(ctx, s.key(watchKey, id), "account", "doc", "eseq", "dseq", "a0").Result()
		if err != nil {
			return nil, s.fail("read watch", err)
		}
		if str(v[1]) == "" || v[4] == nil {
			continue // deleted meanwhile, or its create has not finished (shown)
		}
		w, err := decodeWatch(str(v[1]))
		if err != nil {
			return nil, err
		}
		if w.AlertEmail == nil || *w.AlertEmail == "" {
			continue
		}
		sent, _ := strconv.ParseInt(cmp.Or(str(v[3]), str(v[2])), 10, 64) // dseq, else eseq
		out = append(out, mail.Target{WatchID: id, AccountID: str(v[0]), Name: w.Name, Email: *w.AlertEmail, SentSeq: sent})
	}
	return out, nil
}

// queueDigestScript stores a digest job unless its id exists, the watch is
// gone or has a digest pending. KEYS: mail:<id>, mq, mpd:<watch>,
// w:<watch>. ARGV: id, job JSON, kind, watch, now ms, now timestamp.
var queueDigestScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[4]) == 0 then return 0 end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'job', ARGV[2], 'kind', ARGV[3], 'watch', ARGV[4], 'status', 'pending', 'attempts', 0, 'updated_at', ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
redis.call('SET', KEYS[3], ARGV[1])
return 1
`)

// QueueDigest stores a digest job unless its id exists or the watch has a
// digest pending.
func (s *Store) QueueDigest(ctx context.Context, job mail.Job, now time.Time) (bool, error) {
	b, err := json.Marshal(job)
	if err != nil {
		return false, err
	}
	n, err := queueDigestScript.Run(ctx, s.rdb,
		[]string{s.key(mailKey, job.ID), s.key(mailQueueKey), s.key(digestKey, job.WatchID), s.key(watchKey, job.WatchID)},
		job.ID, b, job.Kind, job.WatchID, now.UnixMilli(), notice.Timestamp(now)).Int()
	if err != nil {
		return false, s.fail("queue a digest", err)
	}
	return n == 1, nil
}

// completeMailScript records an outcome. KEYS: mail:<id>, mq,
// mpd:<watch>, w:<watch>, mdead, mlasterr. ARGV: id, token, outcome (sent,
// retry, dead), error, next ms, through seq (digests; 0 otherwise), now
// timestamp, retention ms, now ms. A failure counts only for the current
// claim (token); a success always.
var completeMailScript = redis.NewScript(`
local k = KEYS[1]
if redis.call('HGET', k, 'status') ~= 'pending' then return 0 end
local sent = ARGV[3] == 'sent'
if not sent then
  if redis.call('HGET', k, 'token') ~= ARGV[2] then return 0 end
  redis.call('HSET', k, 'last_error', ARGV[4])
  redis.call('SET', KEYS[6], ARGV[4])
end
redis.call('HSET', k, 'updated_at', ARGV[7])
redis.call('HDEL', k, 'token')
if ARGV[3] == 'retry' then
  redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
  return 1
end
redis.call('HSET', k, 'status', ARGV[3])
redis.call('PEXPIRE', k, ARGV[8])
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
if not sent then
  redis.call('ZADD', KEYS[5], ARGV[9], ARGV[1])
  return 1
end
local through = tonumber(ARGV[6])
if through > 0 and redis.call('EXISTS', KEYS[4]) == 1 then
  local cur = tonumber(redis.call('HGET', KEYS[4], 'dseq') or '0')
  if through > cur then redis.call('HSET', KEYS[4], 'dseq', through) end
end
return 1
`)

// CompleteMail records the outcome of a claimed attempt.
func (s *Store) CompleteMail(ctx context.Context, job mail.Job, out mail.Outcome, now time.Time) error {
	outcome, next := "sent", now
	if out.Err != "" {
		outcome = "dead"
		if wait, ok := mail.RetryWait(job.Attempt, out.RetryUnit); ok {
			outcome, next = "retry", now.Add(wait)
		}
	}
	var through int64
	if job.Kind == mail.KindDigest && job.Digest != nil {
		through = job.Digest.ThroughSeq
	}
	err := completeMailScript.Run(ctx, s.rdb,
		[]string{s.key(mailKey, job.ID), s.key(mailQueueKey), s.key(digestKey, job.WatchID), s.key(watchKey, job.WatchID), s.key(mailDeadKey), s.key(mailErrKey)},
		job.ID, job.Token, outcome, out.Err, next.UnixMilli(), through, notice.Timestamp(now), mail.Retention.Milliseconds(), now.UnixMilli()).Err()
	return s.fail("record a mail outcome", err)
}

// PruneMail forgets dead jobs that died before before (their hashes
// expire by themselves after mail.Retention).
func (s *Store) PruneMail(ctx context.Context, before time.Time) error {
	return s.fail("prune the mail queue", s.rdb.ZRemRangeByScore(ctx, s.key(mailDeadKey), "-inf", "("+strconv.FormatInt(before.UnixMilli(), 10)).Err())
}

// MailStatus counts the queue.
func (s *Store) MailStatus(ctx context.Context) (mail.QueueStatus, error) {
	var st mail.QueueStatus
	p := s.rdb.Pipeline()
	pending := p.ZCard(ctx, s.key(mailQueueKey))
	dead := p.ZCard(ctx, s.key(mailDeadKey))
	last := p.Get(ctx, s.key(mailErrKey))
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return st, s.fail("read the mail queue", err)
	}
	st.Pending, st.Dead, st.LastError = int(pending.Val()), int(dead.Val()), last.Val()
	if st.Pending == 0 && st.Dead == 0 {
		st.LastError = ""
	}
	return st, nil
}

// deactivate switches the watch off as wdeact owes (n consecutive failed
// notices, the last error, when: completeScript's entry), holding its
// pending deliveries and queueing its alert (casWatchScript). An entry whose
// watch is gone or off is dropped (true), as is one whose count a
// delivered notice or a reactivation reset since (false).
func (s *Store) deactivate(ctx context.Context, watchID string, now time.Time) (bool, error) {
	for {
		var owed *redis.StringCmd
		var v *redis.SliceCmd
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			owed = p.HGet(ctx, s.key(wdeactKey), watchID)
			v = p.HMGet(ctx, s.key(watchKey, watchID), "doc", "failures")
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return false, s.fail("deactivate watch", err)
		}
		if owed.Val() == "" {
			return false, nil
		}
		var d struct {
			N  int    `json:"n"`
			E  string `json:"e"`
			At string `json:"at"`
		}
		if err := json.Unmarshal([]byte(owed.Val()), &d); err != nil {
			return false, fmt.Errorf("redisstore: deactivation owed to watch %s is unreadable (%q): %w", watchID, owed.Val(), err)
		}
		raw := str(v.Val()[0])
		failures, _ := strconv.Atoi(str(v.Val()[1]))
		w, err := decodeWatch(cmp.Or(raw, "{}"))
		if err != nil {
			return false, err
		}
		if raw == "" || !w.Active || !delivery.Deactivates(failures) {
			return raw == "" || !w.Active, s.fail("drop a deactivation", s.rdb.HDel(ctx, s.key(wdeactKey), watchID).Err())
		}
		at, err := time.Parse(time.RFC3339Nano, d.At)
		if err != nil {
			at = now
		}
		w.Active, w.DeactivatedReason, w.UpdatedAt = false, delivery.DeactivationReason(d.N, d.E), stamp(at)
		alert, err := alertJob(w, d.E, at)
		if err != nil {
			return false, err
		}
		keys, args, err := s.casArgs(raw, w, true, alert, at)
		if err != nil {
			return false, err
		}
		// -1: the doc changed meanwhile (a cancelled ctx fails the call).
		if n, err := casWatchScript.Run(ctx, s.rdb, keys, args...).Int(); err != nil || n == 1 {
			return n == 1, s.fail("deactivate watch", err)
		}
	}
}

// alertJob is the deactivation alert (id, JSON) of w, just switched off
// after a failure with lastErr: JSON "" when w has no alert_email; the
// script adds the held count.
func alertJob(w watch.Watch, lastErr string, now time.Time) ([2]string, error) {
	id := mail.DeactivatedID(w.ID, now)
	if w.AlertEmail == nil || *w.AlertEmail == "" {
		return [2]string{id, ""}, nil
	}
	b, err := json.Marshal(mail.Job{ID: id, Kind: mail.KindDeactivated, WatchID: w.ID, To: *w.AlertEmail,
		Deactivated: &mail.Deactivated{WatchName: w.Name, Reason: w.DeactivatedReason, LastError: lastErr, At: notice.Timestamp(now)}})
	return [2]string{id, string(b)}, err
}

// takeMailScript leases until ARGV[2] ms each job passed still pending and
// due at ARGV[1] ms (one another taker took meanwhile is left alone; one
// no longer pending leaves mq). KEYS: mq, then each job's mail:<id>. ARGV:
// due-by ms, lease end ms, then each job's id. Returns {id, attempts, ...}.
var takeMailScript = redis.NewScript(`
local out = {}
for i = 3, #ARGV do
  local id, k = ARGV[i], KEYS[i - 1]
  local due = redis.call('ZSCORE', KEYS[1], id)
  if not due or tonumber(due) > tonumber(ARGV[1]) then
    -- taken meanwhile
  elseif redis.call('HGET', k, 'status') ~= 'pending' then
    redis.call('ZREM', KEYS[1], id)
  else
    redis.call('ZADD', KEYS[1], ARGV[2], id)
    out[#out + 1] = id
    out[#out + 1] = redis.call('HGET', k, 'attempts') or '0'
  end
end
return out
`)

// MailRef names a due mail job for the asynq scheduler: its id and the
// attempts made so far.
type MailRef struct {
	ID       string
	Attempts int
}

// TakeDueMail takes up to limit jobs due at now for one pump of the asynq
// scheduler, hidden until now+lease (due again if the attempt's worker
// died).
func (s *Store) TakeDueMail(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]MailRef, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.key(mailQueueKey), &redis.ZRangeBy{Min: "-inf", Max: itoa(now.UnixMilli()), Count: int64(limit)}).Result()
	if err != nil || len(ids) == 0 {
		return nil, s.fail("read the mail queue", err)
	}
	keys, args := []string{s.key(mailQueueKey)}, []any{now.UnixMilli(), now.Add(lease).UnixMilli()}
	for _, id := range ids {
		keys, args = append(keys, s.key(mailKey, id)), append(args, id)
	}
	v, err := takeMailScript.Run(ctx, s.rdb, keys, args...).StringSlice()
	out := make([]MailRef, 0, len(v)/2)
	for i := 0; i+1 < len(v); i += 2 {
		n, _ := strconv.Atoi(v[i+1])
		out = append(out, MailRef{ID: v[i], Attempts: n})
	}
	return out, s.fail("read the mail queue", err)
}

// beginMailScript counts an attempt of a pending job of watch ARGV[2] and
// leases it until ARGV[3] ms; the mail of a deleted watch is dropped
// (status deleted, expiring after ARGV[4] ms). KEYS: mq, mail:<id>,
// w:<watch>. ARGV: id, watch (read before; a job's watch never changes),
// lease end ms, retention ms. Returns {job, attempts, held} or {}.
var beginMailScript = redis.NewScript(`
local k = KEYS[2]
if redis.call('HGET', k, 'status') ~= 'pending' or redis.call('HGET', k, 'watch') ~= ARGV[2] then return {} end
if redis.call('EXISTS', KEYS[3]) == 0 then
  -- the watch was deleted: its mail goes with it, as embedded
  redis.call('HSET', k, 'status', 'deleted')
  redis.call('PEXPIRE', k, ARGV[4])
  redis.call('ZREM', KEYS[1], ARGV[1])
  return {}
end
local n = redis.call('HINCRBY', k, 'attempts', 1)
redis.call('HSET', k, 'token', tostring(n))
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
local v = redis.call('HMGET', k, 'job', 'held')
return {v[1], tostring(n), v[2] or ''}
`)

// BeginMail starts an attempt of one job (an asynq task's), counted and
// hidden from the pump until now+lease; the attempt number is also the
// claim token. ok is false when the job is no longer pending or its watch
// was deleted (the mail is dropped).
func (s *Store) BeginMail(ctx context.Context, id string, now time.Time, lease time.Duration) (mail.Job, bool, error) {
	var j mail.Job
	watch, err := s.rdb.HGet(ctx, s.key(mailKey, id), "watch").Result()
	if err == redis.Nil {
		return j, false, nil
	}
	if err != nil {
		return j, false, s.fail("begin a mail attempt", err)
	}
	v, err := beginMailScript.Run(ctx, s.rdb, []string{s.key(mailQueueKey), s.key(mailKey, id), s.key(watchKey, watch)},
		id, watch, now.Add(lease).UnixMilli(), mail.Retention.Milliseconds()).StringSlice()
	if err != nil || len(v) < 3 {
		return j, false, s.fail("begin a mail attempt", err)
	}
	if err := json.Unmarshal([]byte(v[0]), &j); err != nil {
		return j, false, fmt.Errorf("redisstore: mail job %s has unreadable JSON: %w", id, err)
	}
	j.Attempt, _ = strconv.Atoi(v[1])
	j.Token = v[1]
	if j.Deactivated != nil && v[2] != "" {
		j.Deactivated.Held, _ = strconv.Atoi(v[2])
	}
	return j, true, nil
}

// ClaimMail leases due pending jobs (the embedded loop's claim, which the
// contract suites run here too): TakeDueMail, then BeginMail of each.
func (s *Store) ClaimMail(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]mail.Job, error) {
	refs, err := s.TakeDueMail(ctx, now, lease, limit)
	var jobs []mail.Job
	for _, r := range refs {
		j, ok, err := s.BeginMail(ctx, r.ID, now, lease)
		if err != nil {
			return jobs, err
		}
		if ok {
			jobs = append(jobs, j)
		}
	}
	return jobs, err
}
