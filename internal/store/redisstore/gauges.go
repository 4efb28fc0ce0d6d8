package redisstore

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/store"
)

// The gauges of /metrics in scale mode are read from keys the scripts that
// change the state they count keep exact (acct:lapsed, winactive, dstat,
// ddue: docs/redis.md's key table), so a scrape is a handful of O(1) or
// O(log n) commands in one round trip whatever the data size.

var _ store.GaugeSource = (*Store)(nil)

// Gauges implements store.GaugeSource: the numbers the embedded store
// reports for the same state, in one pipelined round trip.
func (s *Store) Gauges(ctx context.Context) (store.Gauges, error) {
	g, ok, err := s.readGauges(ctx)
	if err == nil && !ok { // never computed in this namespace
		if err = s.RebuildGauges(ctx); err == nil {
			g, _, err = s.readGauges(ctx)
		}
	}
	return g, err
}

// readGauges reads the gauge keys; ok is false when the delivery counts
// were never computed (dstat has no v).
func (s *Store) readGauges(ctx context.Context) (g store.Gauges, ok bool, err error) {
	now := s.clock().UnixMilli()
	p := s.rdb.Pipeline()
	accts := p.ZCard(ctx, s.key(acctsKey))
	lapsed := p.SCard(ctx, s.key(lapsedKey))
	watches := p.SCard(ctx, s.key(watchesKey))
	inactive := p.SCard(ctx, s.key(winactiveKey))
	stat := p.HMGet(ctx, s.key(dstatKey), "v", "pending", "delivered", "dead", "retry")
	due := p.ZCount(ctx, s.key(ddueKey), "-inf", strconv.FormatInt(now, 10))
	mailPending := p.ZCard(ctx, s.key(mailQueueKey))
	mailDead := p.ZCard(ctx, s.key(mailDeadKey))
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return g, false, s.fail("read gauges", err)
	}
	v := stat.Val()
	if len(v) < 5 || v[0] == nil {
		return g, false, nil
	}
	n := func(i int) int64 {
		x, _ := strconv.ParseInt(str(v[i]), 10, 64)
		return x
	}
	g.AccountsLapsed = lapsed.Val()
	g.AccountsActive = accts.Val() - g.AccountsLapsed
	g.WatchesInactive = inactive.Val()
	g.WatchesActive = watches.Val() - g.WatchesInactive
	g.DeliveriesPending, g.DeliveriesDelivered, g.DeliveriesDead, g.RetryBacklog = n(1), n(2), n(3), n(4)
	g.QueueDue = due.Val()
	g.MailPending, g.MailDead = mailPending.Val(), mailDead.Val()
	return g, true, nil
}

// RebuildGauges computes the gauge keys from the records in one script
// (no state change interleaves), replacing what they held: once, on a
// namespace that never had them (a new one, or one an older version
// wrote). It holds Redis for time in proportion to the accounts, watches
// and deliveries stored. The accounts and watches are read first for
// KEYS, and again when the script finds they changed (casRun).
func (s *Store) RebuildGauges(ctx context.Context) error {
	_, err := s.casRun(ctx, "compute gauges", rebuildGaugesScript, func() ([]string, []any, error) {
		var accts, watches *redis.StringSliceCmd
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			accts, watches = p.ZRange(ctx, s.key(acctsKey), 0, -1), p.SMembers(ctx, s.key(watchesKey))
			return nil
		}); err != nil {
			return nil, nil, s.fail("compute gauges", err)
		}
		keys := []string{s.key(lapsedKey), s.key(winactiveKey), s.key(dstatKey), s.key(ddueKey), s.key(acctsKey), s.key(watchesKey)}
		args := []any{joinList(accts.Val()), len(accts.Val())}
		for _, id := range accts.Val() {
			keys, args = append(keys, s.key(acctKey, id)), append(args, id)
		}
		for _, id := range watches.Val() {
			keys, args = append(keys, s.key(watchKey, id), s.key(recordsKey, id)), append(args, id)
		}
		return keys, args, nil
	})
	return err
}

// rebuildGaugesScript recomputes the gauge keys. KEYS: acct:lapsed,
// winactive, dstat, ddue, accts, watches, acct:<a> of each account, then
// w:<id> and dr:<id> of each watch. ARGV: the account ids comma-joined,
// their number, the account ids, the watch ids. It returns -1 when the
// accounts or watches are not those passed. next_attempt_at (layout
// notice.TimestampLayout, UTC) becomes unix ms by the civil-date formula.
var rebuildGaugesScript = redis.NewScript(`
local function ms(ts)
  local y, mo, d, h, mi, s, f = string.match(ts, '^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)%.(%d+)Z$')
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  if mo <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (mo + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  local days = era * 146097 + doe - 719468
  return ((days * 24 + tonumber(h)) * 60 + tonumber(mi)) * 60000 + tonumber(s) * 1000 + tonumber(f)
end
if table.concat(redis.call('ZRANGE', KEYS[5], 0, -1), ',') ~= ARGV[1] then return -1 end
local na = tonumber(ARGV[2])
if redis.call('SCARD', KEYS[6]) ~= #ARGV - 2 - na then return -1 end
for i = 3 + na, #ARGV do
  if redis.call('SISMEMBER', KEYS[6], ARGV[i]) == 0 then return -1 end
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
for i = 1, na do
  if redis.call('HGET', KEYS[6 + i], 'active') == '0' then redis.call('SADD', KEYS[1], ARGV[2 + i]) end
end
local c = {pending = 0, delivered = 0, dead = 0, retry = 0}
for j = 1, #ARGV - 2 - na do
  local id, wk, dk = ARGV[2 + na + j], KEYS[5 + na + 2 * j], KEYS[6 + na + 2 * j]
  local doc = redis.call('HGET', wk, 'doc')
  if doc and not cjson.decode(doc).active then redis.call('SADD', KEYS[2], id) end
  for _, raw in ipairs(redis.call('HVALS', dk)) do
    local r = cjson.decode(raw)
    c[r.status] = (c[r.status] or 0) + 1
    if r.status == 'pending' then
      if (r.attempts or 0) > 0 then c.retry = c.retry + 1 end
      if r.next_attempt_at ~= nil and r.next_attempt_at ~= cjson.null then
        redis.call('ZADD', KEYS[4], ms(r.next_attempt_at), id .. '|' .. r.id .. '|' .. string.format('%d', r.notice_seq))
      end
    end
  end
end
redis.call('HSET', KEYS[3], 'pending', c.pending, 'delivered', c.delivered, 'dead', c.dead, 'retry', c.retry, 'v', 1)
return 1
`)
