package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/watch"
)

var _ store.Webhooks = (*Store)(nil)

// Webhook registrations (the watch's w:<id> fields secret and failures)
// and delivery records (dr, dl, df: docs/redis.md). Attempts are the
// ledger's (ledger.go).

func noWatch(id string) error {
	return errs.New(errs.NotFound, "no watch %s in this account; list your watches with GET /v1/watches", errs.Quote(id))
}

func noWebhook(id string) error {
	return errs.New(errs.NotFound, "watch %s has no webhook; register one with POST /v1/watches/%s/webhook", errs.Quote(id), id)
}

// casWatchScript replaces a watch's doc if it is still what was read, sets
// extra fields, and keeps winactive in step; a watch turned back on enters
// wrel until Release (or Reconcile) releases its held deliveries. One
// switched off (ARGV[3] "1") leaves wdeact, its pending deliveries are
// held, and its deactivation alert (ARGV[5], unless empty or queued) is
// queued counting them. KEYS (the account's): w:<id>, winactive, wrel,
// dr:<id>, ddue, wdeact, then with an alert mail:<alert id>, mq. ARGV: old doc, new doc,
// switched off, alert id, alert job JSON, now ms, now timestamp, then
// field, value, ... Returns 1, or -1 when the doc changed meanwhile.
var casWatchScript = redis.NewScript(ledgerLua + `
if redis.call('HGET', KEYS[1], 'doc') ~= ARGV[1] then return -1 end
redis.call('HSET', KEYS[1], 'doc', ARGV[2])
local id = string.match(KEYS[1], '[^:]+$')
if cjson.decode(ARGV[2]).active then
  if redis.call('SREM', KEYS[2], id) == 1 then redis.call('SADD', KEYS[3], id) end
else
  redis.call('SADD', KEYS[2], id)
  redis.call('SREM', KEYS[3], id)
end
if ARGV[3] == '1' then
  redis.call('HDEL', KEYS[6], id)
  local held = 0
  for _, raw in ipairs(redis.call('HVALS', KEYS[4])) do
    local r = cjson.decode(raw)
    if r.status == 'pending' then held = held + 1 end
    if r.status == 'pending' and set(r.next_attempt_at) then
      due(KEYS[4], r.id, r, false, gm(id, r.id, r), KEYS[5])
    end
  end
  if ARGV[5] ~= '' and redis.call('EXISTS', KEYS[7]) == 0 then
    redis.call('HSET', KEYS[7], 'job', ARGV[5], 'kind', 'deactivated', 'watch', id, 'status', 'pending', 'attempts', 0, 'held', held, 'updated_at', ARGV[7])
    redis.call('ZADD', KEYS[8], ARGV[6], ARGV[4])
    redis.call('HSET', KEYS[1], 'malert', ARGV[4])
  end
end
for i = 8, #ARGV, 2 do
  if ARGV[i + 1] == '' then redis.call('HDEL', KEYS[1], ARGV[i]) else redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
return 1
`)

// casArgs are casWatchScript's keys and arguments to write w over its doc
// old: off says w was just switched off; alert is its deactivation alert
// (id and job JSON from alertJob) queued at now.
func (s *Store) casArgs(old string, w watch.Watch, off bool, alert [2]string, now time.Time, fields ...string) ([]string, []any, error) {
	doc, err := encodeWatch(w)
	a := func(parts ...string) string { return s.akey(w.AccountID, parts...) }
	keys := []string{a(watchKey, w.ID), a(winactiveKey), a(wrelKey), a(recordsKey, w.ID), a(ddueKey), a(wdeactKey)}
	if alert[1] != "" {
		keys = append(keys, a(mailKey, alert[0]), a(mailQueueKey))
	}
	return keys, append([]any{old, doc, boolArg(off), alert[0], alert[1], now.UnixMilli(), notice.Timestamp(now)}, anys(fields)...), err
}

// modifyWatch applies change to the account's watch as a compare-and-set
// (casRun: read again if another write won); change also returns w:<id>
// fields to set (name, value pairs; "" deletes one). Another account's is
// notFound.
func (s *Store) modifyWatch(ctx context.Context, accountID, id string, notFound func(string) error,
	change func(w *watch.Watch) (fields []string, err error)) (watch.Watch, error) {
	var w watch.Watch
	_, err := s.casRun(ctx, "update watch", casWatchScript, func() ([]string, []any, error) {
		v, err := s.ownWatch(ctx, accountID, id, "update watch", notFound, "doc")
		if err == nil {
			w, err = decodeWatch(str(v[0]))
		}
		if err != nil {
			return nil, nil, err
		}
		was := w.Active
		fields, err := change(&w)
		if err != nil {
			return nil, nil, err
		}
		return s.casArgs(str(v[0]), w, was && !w.Active, [2]string{}, time.Time{}, fields...)
	})
	return w, err
}

// ownWatch reads fields of the account's watch, or notFound when it is
// not the account's or its create has not finished (shown).
func (s *Store) ownWatch(ctx context.Context, accountID, watchID, what string, notFound func(string) error, fields ...string) ([]any, error) {
	if accountID == "" {
		return nil, notFound(watchID)
	}
	v, err := s.rdb.HMGet(ctx, s.akey(accountID, watchKey, watchID), append([]string{"account", "a0"}, fields...)...).Result()
	if err != nil {
		return nil, s.fail(what, err)
	}
	if !shown(accountID, v) {
		return nil, notFound(watchID)
	}
	return v[2:], nil
}

func stamp(now time.Time) time.Time { return now.UTC().Truncate(time.Millisecond) }

// SetWebhook registers or replaces the watch's webhook at now and creates
// the pending deliveries its matches are owed (store.Webhooks).
func (s *Store) SetWebhook(ctx context.Context, accountID, watchID, url, secret string, now time.Time) (watch.Watch, error) {
	sealed, err := s.sealSecret(watchID, secret)
	if err != nil {
		return watch.Watch{}, err
	}
	w, err := s.modifyWatch(ctx, accountID, watchID, noWatch, func(w *watch.Watch) ([]string, error) {
		w.WebhookURL, w.UpdatedAt = &url, stamp(now)
		return []string{"secret", sealed, "failures", "0"}, nil
	})
	if err != nil {
		return w, err
	}
	if s.matchOnRead {
		if _, err := s.catchUpSome(ctx, math.MaxInt); err != nil {
			return w, err
		}
	}
	cseq, err := s.rdb.HGet(ctx, s.akey(accountID, watchKey, watchID), "eseq").Int64()
	if err != nil && err != redis.Nil {
		return w, s.fail("register webhook", err)
	}
	seqs, err := s.rdb.ZRangeByScore(ctx, s.akey(accountID, matchLogKey, watchID), &redis.ZRangeBy{Min: "(" + itoa(cseq), Max: "+inf"}).Result()
	if err != nil {
		return w, s.fail("register webhook", err)
	}
	pairs := make([]Ref, len(seqs))
	for i, q := range seqs {
		pairs[i].AccountID, pairs[i].WatchID = accountID, watchID
		pairs[i].NoticeSeq, _ = strconv.ParseInt(q, 10, 64)
	}
	if _, err := s.createDeliveries(ctx, "record delivery", pairs, now, false); err != nil {
		return w, err
	}
	return w, s.replicated(ctx, "webhook registration", s.tags(accountID)...)
}

// RotateSecret replaces the secret at now; the old one is no longer read.
func (s *Store) RotateSecret(ctx context.Context, accountID, watchID, secret string, now time.Time) (watch.Watch, error) {
	sealed, err := s.sealSecret(watchID, secret)
	if err != nil {
		return watch.Watch{}, err
	}
	w, err := s.modifyWatch(ctx, accountID, watchID, noWatch, func(w *watch.Watch) ([]string, error) {
		if w.WebhookURL == nil {
			return nil, noWebhook(watchID)
		}
		w.UpdatedAt = stamp(now)
		return []string{"secret", sealed}, nil
	})
	if err != nil {
		return w, err
	}
	return w, s.replicated(ctx, "webhook secret rotation", s.tags(accountID)...)
}

// deadScript marks every pending delivery of a watch dead (and final).
// KEYS (the account's): dr:<watch>, dstat, ddue, dl:<watch>, df:<watch>. ARGV:
// last_error, updated_at, watch id.
var deadScript = redis.NewScript(ledgerLua + `
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local r = cjson.decode(all[i + 1])
  if r.status == 'pending' then
    r.last_error = ARGV[1]
    r.updated_at = ARGV[2]
    settle(KEYS[2], KEYS[3], KEYS[1], KEYS[4], KEYS[5], all[i], gm(ARGV[3], all[i], r), r, 'dead')
  end
end
return 1
`)

// DeleteWebhook stops delivery at now: the pending deliveries become dead
// with last_error delivery.WebhookRemoved.
func (s *Store) DeleteWebhook(ctx context.Context, accountID, watchID string, now time.Time) error {
	_, err := s.modifyWatch(ctx, accountID, watchID, noWatch, func(w *watch.Watch) ([]string, error) {
		if w.WebhookURL == nil {
			return nil, noWebhook(watchID)
		}
		w.WebhookURL, w.UpdatedAt = nil, stamp(now)
		return []string{"secret", "", "failures", "0"}, nil
	})
	if err != nil {
		return err
	}
	a := func(parts ...string) string { return s.akey(accountID, parts...) }
	err = deadScript.Run(ctx, s.rdb, []string{a(recordsKey, watchID), a(dstatKey), a(ddueKey), a(deliveriesKey, watchID), a(finalKey, watchID)}, delivery.WebhookRemoved, notice.Timestamp(now), watchID).Err()
	if err != nil {
		return s.fail("cancel deliveries", err)
	}
	return s.replicated(ctx, "webhook removal", s.tags(accountID)...)
}

// Deliveries lists the watch's most recent deliveries, newest first;
// next_attempt_at is null while an attempt is in flight, as embedded.
func (s *Store) Deliveries(ctx context.Context, accountID, watchID string, limit int) ([]delivery.Record, error) {
	if _, err := s.ownWatch(ctx, accountID, watchID, "list deliveries", noWatch); err != nil {
		return nil, err
	}
	members, err := s.rdb.ZRevRange(ctx, s.akey(accountID, deliveriesKey, watchID), 0, int64(limit)-1).Result()
	if err != nil {
		return nil, s.fail("list deliveries", err)
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m[21:]
	}
	raw, err := s.hmget(ctx, s.akey(accountID, recordsKey, watchID), ids)
	if err != nil {
		return nil, err
	}
	out := []delivery.Record{}
	for _, r := range raw {
		if r == "" {
			continue
		}
		var rec struct {
			delivery.Record
			Inflight *int `json:"inflight"`
		}
		if err := json.Unmarshal([]byte(r), &rec); err != nil {
			return nil, fmt.Errorf("redisstore: unreadable delivery record of watch %s: %w", watchID, err)
		}
		if rec.Inflight != nil {
			rec.NextAttemptAt = nil
		}
		out = append(out, rec.Record)
	}
	return out, nil
}
