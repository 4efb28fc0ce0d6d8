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
// change the state they count keep exact (acct:lapsed, and each account's
// winactive, dstat, ddue, mq and mdead: docs/redis.md "Gauges"), so a
// scrape is a few commands per account in one round trip whatever the
// number of watches and deliveries.

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

// readGauges reads the gauge keys, summing the accounts'; ok is false
// when they were never computed (no gauges mark).
func (s *Store) readGauges(ctx context.Context) (g store.Gauges, ok bool, err error) {
	accts, err := s.accounts(ctx)
	if err != nil {
		return g, false, err
	}
	now := strconv.FormatInt(s.clock().UnixMilli(), 10)
	p := s.rdb.Pipeline()
	mark := p.Exists(ctx, s.key(gaugesKey))
	lapsed := p.SCard(ctx, s.key(lapsedKey))
	type acctGauges struct {
		watches, inactive, due, mail, dead *redis.IntCmd
		stat                               *redis.SliceCmd
	}
	per := make([]acctGauges, len(accts))
	for i, a := range accts {
		per[i] = acctGauges{p.ZCard(ctx, s.akey(a, watchesKey)), p.SCard(ctx, s.akey(a, winactiveKey)),
			p.ZCount(ctx, s.akey(a, ddueKey), "-inf", now), p.ZCard(ctx, s.akey(a, mailQueueKey)), p.ZCard(ctx, s.akey(a, mailDeadKey)),
			p.HMGet(ctx, s.akey(a, dstatKey), "pending", "delivered", "dead", "retry")}
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return g, false, s.fail("read gauges", err)
	}
	if mark.Val() == 0 {
		return g, false, nil
	}
	n := func(v any) int64 {
		x, _ := strconv.ParseInt(str(v), 10, 64)
		return x
	}
	g.AccountsLapsed = lapsed.Val()
	g.AccountsActive = int64(len(accts)) - g.AccountsLapsed
	for _, a := range per {
		v := a.stat.Val()
		g.WatchesInactive += a.inactive.Val()
		g.WatchesActive += a.watches.Val() - a.inactive.Val()
		g.DeliveriesPending, g.DeliveriesDelivered = g.DeliveriesPending+n(v[0]), g.DeliveriesDelivered+n(v[1])
		g.DeliveriesDead, g.RetryBacklog = g.DeliveriesDead+n(v[2]), g.RetryBacklog+n(v[3])
		g.QueueDue += a.due.Val()
		g.MailPending, g.MailDead = g.MailPending+a.mail.Val(), g.MailDead+a.dead.Val()
	}
	return g, true, nil
}

// RebuildGauges computes the gauge keys from the records, replacing what
// they held: once, on a namespace that never had them (a new one, or one
// an older version wrote), then sets the gauges mark. The lapsed accounts
// first (rebuildLapsed), then each account's watches and deliveries in one
// script (no change of the account interleaves), which holds Redis for
// time in proportion to its watches and deliveries. What a script covers
// is read first for KEYS, and again when the script finds it changed
// (casRun). A crash before the mark: the next scrape computes again.
func (s *Store) RebuildGauges(ctx context.Context) error {
	if err := s.rebuildLapsed(ctx); err != nil {
		return err
	}
	accts, err := s.accounts(ctx)
	if err != nil {
		return err
	}
	for _, acct := range accts {
		a := func(parts ...string) string { return s.akey(acct, parts...) }
		if _, err := s.casRun(ctx, "compute gauges", rebuildGaugesScript, func() ([]string, []any, error) {
			ws, err := s.rdb.ZRange(ctx, a(watchesKey), 0, -1).Result()
			if err != nil {
				return nil, nil, s.fail("compute gauges", err)
			}
			keys := []string{a(winactiveKey), a(dstatKey), a(ddueKey), a(watchesKey)}
			args := []any{joinList(ws)}
			for _, id := range ws {
				keys, args = append(keys, a(watchKey, id), a(recordsKey, id)), append(args, id)
			}
			return keys, args, nil
		}); err != nil {
			return err
		}
	}
	return s.fail("compute gauges", s.rdb.Set(ctx, s.key(gaugesKey), "1", 0).Err())
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

// rebuildGaugesScript recomputes one account's gauge keys. KEYS (the
// account's): winactive, dstat, ddue, watches, then w:<id> and dr:<id> of
// each watch. ARGV: the watch ids comma-joined, then each. It returns -1
// when the watches are not those passed. next_attempt_at (layout
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
if table.concat(redis.call('ZRANGE', KEYS[4], 0, -1), ',') ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
local c = {pending = 0, delivered = 0, dead = 0, retry = 0}
for j = 2, #ARGV do
  local id, wk, dk = ARGV[j], KEYS[1 + 2 * j], KEYS[2 + 2 * j]
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
redis.call('HSET', KEYS[2], 'pending', c.pending, 'delivered', c.delivered, 'dead', c.dead, 'retry', c.retry)
return 1
`)
