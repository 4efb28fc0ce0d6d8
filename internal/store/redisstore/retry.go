package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// WebhookTarget returns the URL and current secret of the account's
// watch's webhook (as Signing reads them): store.NoWebhook when it has none.
func (s *Store) WebhookTarget(ctx context.Context, accountID, watchID string) (url, secret string, err error) {
	if _, err := s.ownWatch(ctx, accountID, watchID, "read a webhook", noWatch); err != nil {
		return "", "", err
	}
	url, secret, err = s.Signing(ctx, store.Job{AccountID: accountID, WatchID: watchID})
	if errs.Is(err, errs.NotFound) {
		return "", "", store.NoWebhook(watchID)
	}
	return url, secret, err
}

// retryScript makes a dead delivery pending again as pend makes a new
// one: attempts 0, due at once and in the outbox when the
// watch is active, held otherwise; last_error is kept until the next
// outcome. It takes the record out of df and dlease, and moves dstat from
// dead to pending (retry counts deliveries with attempts: unchanged).
// KEYS (the account's): dr:<watch>, w:<watch>, dstat, ddue, dq,
// df:<watch>, dlease. ARGV:
// delivery id, now timestamp, now ms, watch id. Returns {'ok', record},
// {'missing'}, {'status', status} or {'nohook'}.
var retryScript = redis.NewScript(ledgerLua + `
local r = rec()
if not r then return {'missing'} end
if r.status ~= 'dead' then return {'status', r.status} end
local v = redis.call('HMGET', KEYS[2], 'doc', 'secret')
if not v[1] or not v[2] or v[2] == '' then return {'nohook'} end
local w = cjson.decode(v[1])
if not set(w.webhook_url) then return {'nohook'} end
local m = gm(ARGV[4], ARGV[1], r)
r.status = 'pending'
r.attempts = 0
r.updated_at = ARGV[2]
r.delivered_at = nil
unlease(r)
redis.call('HINCRBY', KEYS[3], 'dead', -1)
redis.call('HINCRBY', KEYS[3], 'pending', 1)
redis.call('ZREM', KEYS[6], lm(ARGV[1], r))
redis.call('ZREM', KEYS[7], m)
due(KEYS[1], ARGV[1], r, w.active, m, KEYS[4], ARGV[2], ARGV[3], KEYS[5])
return {'ok', cjson.encode(r)}
`)

// RetryDelivery makes a dead delivery of the account's watch pending again
// at now in one script: same delivery id, attempts from 0. The outbox pump
// makes its task as a new delivery's (Scheduler.Enqueue replaces a
// finished task of that id), and the sweep gives it one if that is lost.
func (s *Store) RetryDelivery(ctx context.Context, accountID, watchID, deliveryID string, now time.Time) (delivery.Record, error) {
	if _, err := s.ownWatch(ctx, accountID, watchID, "retry a delivery", noWatch); err != nil {
		return delivery.Record{}, err
	}
	a := func(parts ...string) string { return s.akey(accountID, parts...) }
	res, err := retryScript.Run(ctx, s.rdb, []string{a(recordsKey, watchID), a(watchKey, watchID), a(dstatKey), a(ddueKey),
		a(outboxKey), a(finalKey, watchID), a(dleaseKey)}, deliveryID, notice.Timestamp(now), now.UnixMilli(), watchID).StringSlice()
	if err != nil {
		return delivery.Record{}, s.fail("retry a delivery", err)
	}
	// The outbox note after the script (a crash between: Reconcile notes
	// the account again, and the pending sweep finds the delivery).
	if res[0] == "ok" {
		if err := s.wake(ctx, wakeOutbox, accountID, now); err != nil {
			return delivery.Record{}, err
		}
	}
	switch res[0] {
	case "missing":
		return delivery.Record{}, store.NoDelivery(watchID, deliveryID)
	case "status":
		return delivery.Record{}, store.DeliveryNotDead(deliveryID, res[1])
	case "nohook":
		return delivery.Record{}, store.NoWebhook(watchID)
	}
	var r delivery.Record
	if err := json.Unmarshal([]byte(res[1]), &r); err != nil {
		return r, fmt.Errorf("redisstore: unreadable delivery record %s of watch %s: %w", deliveryID, watchID, err)
	}
	return r, s.replicated(ctx, "delivery retry", s.tags(accountID)...)
}
