package redisstore

import (
	"cmp"
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

// RebuildGauges computes the gauge keys from the records, replacing what
// they held: once, on a namespace that never had them (a new one, or one
// an older version wrote). The lapsed accounts first (rebuildLapsed), then
// the rest in one script (no state change interleaves), which holds Redis
// for time in proportion to the watches and deliveries stored. The
// watches are read first for KEYS, and again when the script finds they
// changed (casRun).
func (s *Store) RebuildGauges(ctx context.Context) error {
	if err := s.rebuildLapsed(ctx); err != nil {
		return err
	}
	_, err := s.casRun(ctx, "compute gauges", rebuildGaugesScript, func() ([]string, []any, error) {
		watches, err := s.rdb.SMembers(ctx, s.key(watchesKey)).Result()
		if err != nil {
			return nil, nil, s.fail("compute gauges", err)
		}
		keys := []string{s.key(winactiveKey), s.key(dstatKey), s.key(ddueKey), s.key(watchesKey)}
		var args []any
		for _, id := range watches {
			keys, args = append(keys, s.key(watchKey, id), s.key(recordsKey, id)), append(args, id)
		}
		return keys, args, nil
	})
	return err
}

// rebuildLapsed shows every account's subscription state in the lapsed
// gauge: each account's active flag and subscription version, read in its
// own slot (one pipeline over the masters), applied as SetSubscription
// applies one (applyLapsedScript): a change made meanwhile is newer and
// wins, so no script needs every account's record at once.
func (s *Store) rebuildLapsed(ctx context.Context) error {
	ids, err := s.rdb.ZRange(ctx, s.key(acctsKey), 0, -1).Result()
	if err != nil {
		return s.fail("compute gauges", err)
	}
	cmds := make([]*redis.SliceCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HMGet(ctx, s.akey(id, acctKey), "active", "sub_v")
		}
		return nil
	}); err != nil {
		return s.fail("compute gauges", err)
	}
	var args []any
	for i, c := range cmds {
		if v := c.Val(); v[0] != nil {
			args = append(args, ids[i], cmp.Or(str(v[1]), "0"), str(v[0]))
		}
	}
	if len(args) == 0 {
		return nil
	}
	return s.fail("compute gauges", s.applyLapsed(ctx, args))
}

// rebuildGaugesScript recomputes the gauge keys but acct:lapsed. KEYS:
// winactive, dstat, ddue, watches, then w:<id> and dr:<id> of each watch.
// ARGV: the watch ids. It returns -1 when the watches are not those
// passed. next_attempt_at (layout
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
if redis.call('SCARD', KEYS[4]) ~= #ARGV then return -1 end
for i = 1, #ARGV do
  if redis.call('SISMEMBER', KEYS[4], ARGV[i]) == 0 then return -1 end
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
local c = {pending = 0, delivered = 0, dead = 0, retry = 0}
for j = 1, #ARGV do
  local id, wk, dk = ARGV[j], KEYS[3 + 2 * j], KEYS[4 + 2 * j]
  local doc = redis.call('HGET', wk, 'doc')
  if doc and not cjson.decode(doc).active then redis.call('SADD', KEYS[1], id) end
  for _, raw in ipairs(redis.call('HVALS', dk)) do
    local r = cjson.decode(raw)
    c[r.status] = (c[r.status] or 0) + 1
    if r.status == 'pending' then
      if (r.attempts or 0) > 0 then c.retry = c.retry + 1 end
      if r.next_attempt_at ~= nil and r.next_attempt_at ~= cjson.null then
        redis.call('ZADD', KEYS[3], ms(r.next_attempt_at), id .. '|' .. r.id .. '|' .. string.format('%d', r.notice_seq))
      end
    end
  end
end
redis.call('HSET', KEYS[2], 'pending', c.pending, 'delivered', c.delivered, 'dead', c.dead, 'retry', c.retry, 'v', 1)
return 1
`)
