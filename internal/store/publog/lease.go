package publog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/lease"
)

// ErrStale is the answer to a lease's call once the lease has passed to
// another writer (it lapsed): what the writer did under it is not
// published, and it writes its batch again under a new lease.
var ErrStale = errors.New("publog: the writer lease lapsed and passed to another writer; write the batch again under a new lease")

// acquireScript takes the writer lease if nobody holds it and no writer
// that asked before this one is still waiting: writers queue in arrival
// order (a waiter that stopped asking for staleMs leaves the queue). KEYS
// writer, epoch, seq, published, dirty, version, old seq, old watermark,
// old version, queue; ARGV the lease's value, its time to live (ms), the
// waiter's queue member, staleMs. The first acquisition in a namespace
// starts the epoch at Redis's clock in ms plus an hour (above the
// wall-clock versions earlier writers stamped, whatever their clocks'
// skew) and the counters at the fenced writer's. It returns {1, epoch,
// published, allocated, dirty epoch, dirty since} or {0, holder, ms left}.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[10], '-inf', now - tonumber(ARGV[4]))
local cur = redis.call('GET', KEYS[1])
if not cur then
  -- Waiters are ordered by arrival, then by member (unique: it holds a
  -- random token), so two that arrived in the same millisecond do not
  -- each wait for the other.
  local function before(m, at, n, nat) return at < nat or (at == nat and m < n) end
  local mine = tonumber(string.match(ARGV[3], '^(%d+)|'))
  local first, firstAt = nil, nil
  for _, m in ipairs(redis.call('ZRANGE', KEYS[10], 0, -1)) do
    local at = tonumber(string.match(m, '^(%d+)|'))
    if m ~= ARGV[3] and at and (not first or before(m, at, first, firstAt)) then first, firstAt = m, at end
  end
  if first and before(first, firstAt, ARGV[3], mine) then cur = string.match(first, '^%d+|(.*)$') end
end
if cur then
  redis.call('ZADD', KEYS[10], now, ARGV[3])
  return {0, cur, redis.call('PTTL', KEYS[1])}
end
redis.call('ZREM', KEYS[10], ARGV[3])
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[2], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + 3600000)
end
for i, old in ipairs({KEYS[7], KEYS[8], KEYS[9]}) do
  local k = ({KEYS[3], KEYS[4], KEYS[6]})[i]
  if redis.call('EXISTS', k) == 0 then redis.call('SET', k, redis.call('GET', old) or '0') end
end
local epoch = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local d = redis.call('HMGET', KEYS[5], 'epoch', 'since')
return {1, epoch, redis.call('GET', KEYS[4]), redis.call('GET', KEYS[3]), d[1] or '0', d[2] or '0'}`)

// renewScript extends the lease while this writer holds it under its
// epoch. KEYS writer, epoch; ARGV value, epoch, ttl ms.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[3])`)

// releaseScript gives the lease up while this writer holds it; with
// ARGV[3] = 1 it also clears dirty (nothing of this writer's is left
// unpublished). KEYS writer, epoch, dirty; ARGV value, epoch, clean.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
if ARGV[3] == '1' then redis.call('DEL', KEYS[3]) end
return redis.call('DEL', KEYS[1])`)

// allocateScript marks the namespace dirty (once: an earlier dead
// writer's mark is kept, as the takeover must look back to it) and hands
// out n seqs, while this writer holds the lease. KEYS writer, epoch, seq,
// dirty; ARGV value, epoch, n. It returns the last seq handed out, or -1
// when the lease is not this writer's.
var allocateScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('GET', KEYS[2]) ~= ARGV[2] then return -1 end
if redis.call('EXISTS', KEYS[4]) == 0 then
  local t = redis.call('TIME')
  redis.call('HSET', KEYS[4], 'epoch', ARGV[2], 'since', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
return redis.call('INCRBY', KEYS[3], ARGV[3])`)

// Dirty says what an earlier writer may have left written but not
// published: the takeover looks at documents with notice_seq above
// Published (up to Allocated) and at documents written since Since under an
// epoch at least Epoch.
type Dirty struct {
	// Epoch is the epoch of the first writer that did not publish.
	Epoch int64
	// Since is when it began writing (Redis's clock).
	Since time.Time
}

// Lease is the writer lease, held by one writer of the namespace at a
// time. It is renewed in the background until Release.
type Lease struct {
	log   *Log
	value string
	// Epoch is this lease's epoch: the external version of every document
	// written under it.
	Epoch int64
	// Published and Allocated are the counters as the lease was taken.
	Published, Allocated int64
	// Dirty is set when an earlier writer may have left notices written
	// but unpublished: take them over (publish them) before writing.
	Dirty *Dirty

	stop func()
	// Shared by the turns writing under it (Turn), guarded by log.mu:
	// users holding it, no more may join, one left something unpublished.
	users         int
	closing, left bool
}

// pollEvery is how often a waiting writer tries the lease again;
// staleWaiter is how long a waiter that stopped asking keeps its place.
const (
	pollEvery   = 100 * time.Millisecond
	staleWaiter = 10 * time.Second
)

// Acquire takes the writer lease, waiting while another writer holds it
// (Options.Waiting hears who). It returns at once with an error when Redis
// cannot be reached, or when ctx ends.
func (l *Log) Acquire(ctx context.Context) (*Lease, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	value := hex.EncodeToString(b[:]) + "|" + l.opt.Who
	member := strconv.FormatInt(time.Now().UnixMicro(), 10) + "|" + value
	told := ""
	k := l.keys
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := acquireScript.Run(cctx, l.rdb, []string{k.Writer, k.Epoch, k.Seq, k.Published, k.Dirty, k.Version,
			k.OldSeq, k.OldWatermark, k.OldVersion, k.Queue}, value, l.opt.LeaseTTL.Milliseconds(), member, staleWaiter.Milliseconds()).Slice()
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, Unavailable(err)
		}
		if n, _ := res[0].(int64); n == 1 {
			le := &Lease{log: l, value: value}
			le.Epoch, _ = res[1].(int64)
			le.Published = toInt(res[2])
			le.Allocated = toInt(res[3])
			if de := toInt(res[4]); de > 0 || le.Allocated > le.Published {
				le.Dirty = &Dirty{Epoch: de, Since: time.UnixMilli(toInt(res[5]))}
			}
			le.stop = lease.Keep(l.opt.RenewEvery, le.renew)
			return le, nil
		}
		holder, _ := res[1].(string)
		if _, who, ok := strings.Cut(holder, "|"); ok && who != told && l.opt.Waiting != nil {
			l.opt.Waiting(who)
			told = who
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// toInt reads an integer or a numeric string of a script's answer.
func toInt(v any) int64 {
	if s, ok := v.(string); ok {
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	n, _ := v.(int64)
	return n
}

// renew extends the lease while it is this writer's (a lease that passed
// on stays lost: the publish is refused then).
func (le *Lease) renew(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	k := le.log.keys
	_ = renewScript.Run(ctx, le.log.rdb, []string{k.Writer, k.Epoch}, le.value, le.Epoch, le.log.opt.LeaseTTL.Milliseconds()).Err()
}

// Allocate hands out n new notice_seqs (n may be 0), consecutive, and
// marks the namespace dirty until this writer publishes: call it before
// the first write to Elasticsearch under the lease. It returns the first
// seq (the last minus n plus one), or ErrStale.
func (le *Lease) Allocate(ctx context.Context, n int) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	k := le.log.keys
	last, err := allocateScript.Run(ctx, le.log.rdb, []string{k.Writer, k.Epoch, k.Seq, k.Dirty}, le.value, le.Epoch, n).Int64()
	if err != nil {
		return 0, Unavailable(err)
	}
	if last < 0 {
		return 0, ErrStale
	}
	return last - int64(n) + 1, nil
}

// Release gives the lease up (best effort: a lease Redis does not hear of
// ends by itself one time to live later). With clean, nothing this writer
// wrote is left unpublished (it published, or wrote nothing), so the next
// writer has nothing to take over.
func (le *Lease) Release(ctx context.Context, clean bool) {
	le.stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	k := le.log.keys
	_ = releaseScript.Run(ctx, le.log.rdb, []string{k.Writer, k.Epoch, k.Dirty}, le.value, le.Epoch, clean).Err()
}
