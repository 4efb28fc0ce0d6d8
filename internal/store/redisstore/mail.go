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

// The mail queue of scale mode (the account's keys mail:<id>, mq, mpd,
// mdead and the watch's dseq, the shared mlasterr and mdw: docs/redis.md).
// The alert is queued by the script that deactivates the watch, so once
// per deactivation.

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
	ws, err := s.allWatches(ctx)
	if err != nil {
		return nil, err
	}
	var out []mail.Target
	for _, ow := range ws {
		id := ow.id
		v, err := s.rdb.HMGet(ctx, s.akey(ow.acct, watchKey, id), "account", "doc", "eseq", "dseq", "a0").Result()
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
// gone or has a digest pending. KEYS (the account's): mail:<id>, mq,
// mpd:<watch>, w:<watch>. ARGV: id, job JSON, kind, watch, now ms, now timestamp.
var queueDigestScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[4]) == 0 then return 0 end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'job', ARGV[2], 'kind', ARGV[3], 'watch', ARGV[4], 'status', 'pending', 'attempts', 0, 'updated_at', ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
redis.call('SET', KEYS[3], ARGV[1])
return 1
`)

// QueueDigest stores a digest job (queueDigestScript says when not).
func (s *Store) QueueDigest(ctx context.Context, job mail.Job, now time.Time) (bool, error) {
	b, err := json.Marshal(job)
	if err != nil {
		return false, err
	}
	acct, err := s.accountOf(ctx, job.WatchID)
	if err != nil || acct == "" {
		return false, err // the watch is gone
	}
	a := func(parts ...string) string { return s.akey(acct, parts...) }
	n, err := queueDigestScript.Run(ctx, s.rdb, []string{a(mailKey, job.ID), a(mailQueueKey), a(digestKey, job.WatchID), a(watchKey, job.WatchID)},
		job.ID, b, job.Kind, job.WatchID, now.UnixMilli(), notice.Timestamp(now)).Int()
	if err != nil {
		return false, s.fail("queue a digest", err)
	}
	if n == 1 {
		// The mail queue's note after the script (a crash between:
		// Reconcile notes the account again).
		err = s.wake(ctx, wakeMail, acct, now)
	}
	return n == 1, err
}

// completeMailScript records an outcome. KEYS (the account's): mail:<id>,
// mq, mpd:<watch>, w:<watch>, mdead. ARGV: id, token, outcome (sent,
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
	acct, err := s.accountOf(ctx, job.WatchID)
	if err != nil || acct == "" {
		return err // the watch's delete finished: its mail was dropped
	}
	a := func(parts ...string) string { return s.akey(acct, parts...) }
	n, err := completeMailScript.Run(ctx, s.rdb, []string{a(mailKey, job.ID), a(mailQueueKey), a(digestKey, job.WatchID), a(watchKey, job.WatchID), a(mailDeadKey)},
		job.ID, job.Token, outcome, out.Err, next.UnixMilli(), through, notice.Timestamp(now), mail.Retention.Milliseconds(), now.UnixMilli()).Int()
	if err != nil || n == 0 {
		return s.fail("record a mail outcome", err)
	}
	// After the script: the latest error (for /health), and a retry's
	// note (a crash between: Reconcile notes the account again).
	if out.Err != "" {
		err = s.rdb.Set(ctx, s.key(mailErrKey), out.Err, 0).Err()
	}
	if err == nil && outcome == "retry" {
		return s.wake(ctx, wakeMail, acct, next)
	}
	return s.fail("record a mail outcome", err)
}

// PruneMail forgets dead jobs that died before before (their hashes
// expire by themselves after mail.Retention).
func (s *Store) PruneMail(ctx context.Context, before time.Time) error {
	accts, err := s.accounts(ctx)
	if err != nil {
		return err
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, a := range accts {
			p.ZRemRangeByScore(ctx, s.akey(a, mailDeadKey), "-inf", "("+strconv.FormatInt(before.UnixMilli(), 10))
		}
		return nil
	})
	return s.fail("prune the mail queue", err)
}

// MailStatus counts the queue: every account's, in one pipeline
// (O(accounts), as the gauges).
func (s *Store) MailStatus(ctx context.Context) (mail.QueueStatus, error) {
	var st mail.QueueStatus
	accts, err := s.accounts(ctx)
	if err != nil {
		return st, err
	}
	p := s.rdb.Pipeline()
	var counts []*redis.IntCmd
	for _, a := range accts {
		counts = append(counts, p.ZCard(ctx, s.akey(a, mailQueueKey)), p.ZCard(ctx, s.akey(a, mailDeadKey)))
	}
	last := p.Get(ctx, s.key(mailErrKey))
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return st, s.fail("read the mail queue", err)
	}
	for i, c := range counts {
		if i%2 == 0 {
			st.Pending += int(c.Val())
		} else {
			st.Dead += int(c.Val())
		}
	}
	st.LastError = last.Val()
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
func (s *Store) deactivate(ctx context.Context, acct, watchID string, now time.Time) (bool, error) {
	for {
		var owed *redis.StringCmd
		var v *redis.SliceCmd
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			owed = p.HGet(ctx, s.akey(acct, wdeactKey), watchID)
			v = p.HMGet(ctx, s.akey(acct, watchKey, watchID), "doc", "failures")
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
			return raw == "" || !w.Active, s.fail("drop a deactivation", s.rdb.HDel(ctx, s.akey(acct, wdeactKey), watchID).Err())
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
			if n == 1 && alert[1] != "" {
				// The alert's note after the script (a crash between:
				// Reconcile notes the account again).
				err = s.wake(ctx, wakeMail, acct, at)
			}
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

// claimMailScript claims each job passed still due at ARGV[1] ms as
// ClaimMail says (one claimed meanwhile is left alone; one no longer
// pending leaves mq); the mail of a deleted watch is dropped
// (status deleted, expiring after ARGV[3] ms), as embedded. KEYS (the
// account's): mq, then each job's mail:<id> and w:<watch>. ARGV: due-by ms, lease end ms,
// retention ms, then each job's id and watch (read before; a job's watch
// never changes). Returns {id, job, attempts, held, ...}.
var claimMailScript = redis.NewScript(`
local out = {}
for i = 1, (#KEYS - 1) / 2 do
  local id, k, w = ARGV[2 * i + 2], KEYS[2 * i], KEYS[2 * i + 1]
  local due = redis.call('ZSCORE', KEYS[1], id)
  if not due or tonumber(due) > tonumber(ARGV[1]) then
    -- claimed meanwhile
  elseif redis.call('HGET', k, 'status') ~= 'pending' then
    redis.call('ZREM', KEYS[1], id)
  elseif redis.call('HGET', k, 'watch') ~= ARGV[2 * i + 3] then
    -- not the watch read before: left for the next claim
  elseif redis.call('EXISTS', w) == 0 then
    redis.call('HSET', k, 'status', 'deleted')
    redis.call('PEXPIRE', k, ARGV[3])
    redis.call('ZREM', KEYS[1], id)
  else
    local n = redis.call('HINCRBY', k, 'attempts', 1)
    redis.call('HSET', k, 'token', tostring(n))
    redis.call('ZADD', KEYS[1], ARGV[2], id)
    local v = redis.call('HMGET', k, 'job', 'held')
    out[#out + 1] = id
    out[#out + 1] = v[1]
    out[#out + 1] = tostring(n)
    out[#out + 1] = v[2] or ''
  end
end
return out
`)

// ClaimMail claims up to limit jobs due at now, each counted as an attempt
// and hidden from other claims until now+lease (due again if the process
// sending it died); the attempt number is the claim token.
func (s *Store) ClaimMail(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]mail.Job, error) {
	var v []string
	err := s.eachWoken(ctx, wakeMail, now, limit, func(acct string) error {
		got, err := s.claimMail(ctx, acct, now, limit-len(v)/4, lease)
		v = append(v, got...)
		return err
	})
	if err != nil && len(v) == 0 {
		return nil, err
	}
	jobs := make([]mail.Job, 0, len(v)/4)
	for i := 0; i+3 < len(v); i += 4 {
		var j mail.Job
		if err := json.Unmarshal([]byte(v[i+1]), &j); err != nil {
			return jobs, fmt.Errorf("redisstore: mail job %s has unreadable JSON: %w", v[i], err)
		}
		j.Attempt, _ = strconv.Atoi(v[i+2])
		j.Token = v[i+2]
		if j.Deactivated != nil && v[i+3] != "" {
			j.Deactivated.Held, _ = strconv.Atoi(v[i+3])
		}
		jobs = append(jobs, j)
	}
	return jobs, err
}

// claimMail runs claimMailScript on account acct's due jobs (up to limit).
func (s *Store) claimMail(ctx context.Context, acct string, now time.Time, limit int, lease time.Duration) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	a := func(parts ...string) string { return s.akey(acct, parts...) }
	ids, err := s.rdb.ZRangeByScore(ctx, a(mailQueueKey), &redis.ZRangeBy{Min: "-inf", Max: itoa(now.UnixMilli()), Count: int64(limit)}).Result()
	if err != nil || len(ids) == 0 {
		return nil, s.fail("read the mail queue", err)
	}
	watches := make([]*redis.StringCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			watches[i] = p.HGet(ctx, a(mailKey, id), "watch")
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, s.fail("read the mail queue", err)
	}
	keys, args := []string{a(mailQueueKey)}, []any{now.UnixMilli(), now.Add(lease).UnixMilli(), mail.Retention.Milliseconds()}
	for i, id := range ids {
		w := watches[i].Val()
		keys, args = append(keys, a(mailKey, id), a(watchKey, w)), append(args, id, w)
	}
	v, err := claimMailScript.Run(ctx, s.rdb, keys, args...).StringSlice()
	return v, s.fail("claim mail", err)
}
