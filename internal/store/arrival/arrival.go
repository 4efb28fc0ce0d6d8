// Package arrival allocates notice_seq and keeps the arrival watermark of
// the scale backend, in Redis (keys under "<namespace>:arrival:").
//
// A new notice gets its notice_seq exactly once, atomically across
// concurrent ingesters: Allocate runs a Lua script (per chunk of ids) that either reuses the
// seq already handed out for the notice id (another ingester is writing
// it) or takes the next value of the counter. Every seq handed out is
// in flight under the batch's lease until Clear, which the ingester calls
// once the batch is written and refreshed (searchable); the in-flight set
// holds one entry per script call (a chunk of at most allocateChunk ids),
// its lowest seq, since the watermark only needs the lowest in-flight seq.
//
// The watermark is the highest seq below which every seq is settled: the
// lowest in-flight seq minus one, or the counter when nothing is in
// flight. It never decreases and never passes an in-flight seq whose
// lease is alive; a crashed ingester's seqs stop holding it back when
// their lease expires, and are then revoked (Revoked) in the same step.
// Clear is the fence: it commits a chunk's seqs only if the watermark has
// not passed them, and reports those it has, so their writer gives the
// notices new seqs. Every seq at or below the watermark is thus committed
// (its notice searchable) or revoked (never read), and a watch poller
// reading notices with notice_seq <= Watermark, leaving revoked seqs out,
// sees each notice once, never below its cursor.
package arrival

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/lease"
)

// DefaultLease is how long a batch's seqs hold the watermark back without
// being cleared.
const DefaultLease = 5 * time.Minute

// callTimeout bounds every Redis call, so a Redis that hangs gives
// errs.BackendUnavailable instead of a stuck ingest.
const callTimeout = 5 * time.Second

// sourceTTL is how long the seq handed out for a notice id is remembered
// (so that concurrent ingesters of the same notice agree on it) when its
// batch is never cleared: Clear forgets the seqs of the notices it
// commits, which are then in Elasticsearch, where writers look first.
const sourceTTL = time.Hour

// Arrivals is the allocator and watermark of one namespace.
type Arrivals struct {
	rdb    redis.UniversalClient
	prefix string
	lease  time.Duration
}

// New returns the arrivals of namespace ns on rdb.
func New(rdb redis.UniversalClient, ns string, lease time.Duration) *Arrivals {
	if lease <= 0 {
		lease = DefaultLease
	}
	return &Arrivals{rdb: rdb, prefix: ns + ":arrival:", lease: lease}
}

func (a *Arrivals) counterKey() string   { return a.prefix + "seq" }
func (a *Arrivals) inflightKey() string  { return a.prefix + "inflight" }
func (a *Arrivals) watermarkKey() string { return a.prefix + "watermark" }
func (a *Arrivals) revokedKey() string   { return a.prefix + "revoked" }
func (a *Arrivals) clearedKey() string   { return a.prefix + "cleared" }

// Batch is the seqs of one write batch, in flight until Clear.
type Batch struct {
	// Token names the batch's lease.
	Token string
	// IDs, Seqs and Collected are parallel to the ids given to Allocate:
	// the notice id, notice_seq and collected_at of each.
	IDs       []string
	Seqs      []int64
	Collected []string
	// Settled marks ids whose seq was handed out earlier and has since
	// been passed by the watermark: the notice was written by another
	// ingester (look again, it is in the store) or its writer crashed
	// (call Allocate again with fresh set). A settled seq is not in flight.
	Settled []bool
	// Stale marks ids not allocated because another batch was cleared
	// (and forgot the seqs it had handed out) after mark was read: look
	// them up in the store again, and allocate the ones still missing
	// with a new Mark.
	Stale []bool
	// chunks are the batch's entries in flight, one per script call.
	chunks []part
}

// part is one script call's part of a batch: its member in flight, the
// range of its ids in the batch, and the seqs it took new (from..to, none
// when to < from).
type part struct {
	member   string
	lo, hi   int
	from, to int64
}

// allocate: KEYS counter, inflight, watermark, cleared; ARGV prefix,
// token, lease ms, source ttl s, collected, fresh, mark, ids... It reads
// every id's earlier seq (MGET, in chunks), takes the seqs of the new ones
// with one INCRBY (consecutive, in id order) and registers the chunk in
// flight once, under its lowest seq, with the range of its new seqs (the
// range the watermark revokes should the lease lapse): the watermark only
// ever needs the lowest in-flight seq of a live lease. When a batch was
// cleared since mark (it forgot the seqs it handed out, so an id missing
// here may have been written meanwhile), it allocates nothing and marks
// the ids without a seq stale.
var allocate = redis.NewScript(`
local prefix, token = ARGV[1], ARGV[2]
local stale = (redis.call('GET', KEYS[4]) or '0') ~= ARGV[7]
local wm = tonumber(redis.call('GET', KEYS[3]) or '0')
local n = #ARGV - 7
local vals = {}
for c = 1, n, 500 do
  local keys = {}
  for i = c, math.min(c + 499, n) do keys[#keys + 1] = prefix .. 'src:' .. ARGV[7 + i] end
  local got = redis.call('MGET', unpack(keys))
  for j = 1, #got do vals[c + j - 1] = got[j] end
end
local seqs, cols, state = {}, {}, {}
local fresh = 0
for i = 1, n do
  local v = vals[i]
  state[i] = 0
  if v then
    local sep = string.find(v, '|', 1, true)
    seqs[i] = tonumber(string.sub(v, 1, sep - 1))
    cols[i] = string.sub(v, sep + 1)
    if seqs[i] <= wm then
      if ARGV[6] == '1' then v = nil else state[i] = 1 end
    end
  end
  if not v then
    seqs[i] = false
    if stale then state[i] = 2 else fresh = fresh + 1 end
  end
end
local nxt = 0
if fresh > 0 then nxt = redis.call('INCRBY', KEYS[1], fresh) - fresh end
local from, to = nxt + 1, nxt + fresh
local low = false
local out = {}
for i = 1, n do
  if not seqs[i] and state[i] == 0 then
    nxt = nxt + 1
    seqs[i], cols[i] = nxt, ARGV[5]
    redis.call('SET', prefix .. 'src:' .. ARGV[7 + i], nxt .. '|' .. ARGV[5], 'EX', ARGV[4])
  end
  if state[i] == 0 and (not low or seqs[i] < low) then low = seqs[i] end
  out[#out + 1] = seqs[i] or 0
  out[#out + 1] = cols[i] or ''
  out[#out + 1] = state[i]
end
local member = ''
if low then
  if fresh == 0 then from, to = 0, -1 end
  member = low .. '|' .. token .. '|' .. from .. '|' .. to
  redis.call('SET', prefix .. 'lease:' .. token, '1', 'PX', ARGV[3])
  redis.call('ZADD', KEYS[2], low, member)
end
out[#out + 1] = member
out[#out + 1] = from
out[#out + 1] = to
return out`)

// allocateChunk is the most ids one allocate script takes. Redis runs a
// script alone, so a whole scale-mode batch (20,000 ids) in one call would
// hold every other client, the API's key checks among them, for its whole
// run; Allocate sends a batch in chunks under one lease token, each chunk
// registered in flight under its own lowest seq.
const allocateChunk = 1000

// Mark returns the number of batches cleared so far: read it before
// looking a batch's notices up in the store, and pass it to Allocate.
func (a *Arrivals) Mark(ctx context.Context) (int64, error) { return a.getInt(ctx, a.clearedKey()) }

// Allocate hands out notice_seqs for notices not yet stored (ids are notice
// ids, each once), stamping new ones collected_at = collected, and
// registers them in flight. A notice another ingester is still writing
// gets the same seq and collected_at it got. A notice whose seq the
// watermark has passed comes back Settled (not in flight): the caller
// looks in the store again, and allocates the ones still missing (their
// writer crashed) with fresh set, which gives them new seqs above the
// watermark so they are still announced. mark is what Mark returned
// before the caller looked the ids up: when a batch was cleared since, the
// ids without a seq come back Stale (see Batch).
func (a *Arrivals) Allocate(ctx context.Context, ids []string, collected string, fresh bool, mark int64) (Batch, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	batch := Batch{Token: hex.EncodeToString(b[:]), IDs: ids}
	if len(ids) == 0 {
		return batch, nil
	}
	f := "0"
	if fresh {
		f = "1"
	}
	batch.Seqs = make([]int64, len(ids))
	batch.Collected = make([]string, len(ids))
	batch.Settled = make([]bool, len(ids))
	batch.Stale = make([]bool, len(ids))
	for lo := 0; lo < len(ids); lo += allocateChunk {
		chunk := ids[lo:min(lo+allocateChunk, len(ids))]
		args := make([]any, 0, len(chunk)+7)
		args = append(args, a.prefix, batch.Token, a.lease.Milliseconds(), int64(sourceTTL/time.Second), collected, f, mark)
		for _, id := range chunk {
			args = append(args, id)
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := allocate.Run(cctx, a.rdb, []string{a.counterKey(), a.inflightKey(), a.watermarkKey(), a.clearedKey()}, args...).Slice()
		cancel()
		if err != nil {
			a.release(batch.Token)
			return Batch{}, Unavailable(err)
		}
		if len(res) != 3*len(chunk)+3 {
			return Batch{}, fmt.Errorf("arrival: allocate returned %d values for %d ids", len(res), len(chunk))
		}
		for i := range chunk {
			seq, ok := res[3*i].(int64)
			col, ok2 := res[3*i+1].(string)
			state, ok3 := res[3*i+2].(int64)
			if !ok || !ok2 || !ok3 {
				return Batch{}, fmt.Errorf("arrival: allocate returned %T, %T, %T", res[3*i], res[3*i+1], res[3*i+2])
			}
			batch.Seqs[lo+i], batch.Collected[lo+i] = seq, col
			batch.Settled[lo+i], batch.Stale[lo+i] = state == 1, state == 2
		}
		member, _ := res[3*len(chunk)].(string)
		from, _ := res[3*len(chunk)+1].(int64)
		to, _ := res[3*len(chunk)+2].(int64)
		if member != "" {
			batch.chunks = append(batch.chunks, part{member: member, lo: lo, hi: lo + len(chunk), from: from, to: to})
		}
	}
	return batch, nil
}

// release ends the lease of a batch whose allocation failed after some
// chunks were taken (perhaps the failing one too: a reply lost to a
// timeout does not say whether the script ran), so their seqs stop holding
// the watermark back at once instead of one lease later: the watermark
// passes (and revokes) an in-flight entry whose lease key is gone
// (watermarkScript), and those notices get new seqs when they are written
// again. Best effort: when Redis cannot be reached, the lease still ends
// by itself.
func (a *Arrivals) release(token string) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if a.rdb.Del(ctx, a.prefix+"lease:"+token).Err() == nil {
		_, _ = a.Watermark(ctx)
	}
}

// Abandon ends a batch whose write failed in a way that may still land
// later (a request that timed out on a hung node): its seqs are revoked
// as they are passed, so whatever lands under them stays hidden from the
// readers (Revoked), and the notices get new seqs when written again.
func (a *Arrivals) Abandon(b Batch) {
	if b.Token != "" {
		a.release(b.Token)
	}
}

// Hold keeps b's lease alive while its writer works: every third of the
// lease it is extended by a whole lease, until stop is called (before
// Clear). A batch written more slowly than one lease (a slow node, bulk
// retries, long timeouts) therefore keeps holding the watermark back, so
// its notices are not passed over before they are searchable; a writer
// that dies stops renewing, and its seqs stop holding the watermark one
// lease later, as before. A renewal that fails (Redis unreachable) is
// tried again at the next tick.
func (a *Arrivals) Hold(b Batch) (stop func()) {
	if b.Token == "" {
		return func() {}
	}
	return lease.Keep(a.lease/3, func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		// XX: a lease already gone stays gone (Clear ran, or it lapsed).
		_ = a.rdb.SetArgs(ctx, a.prefix+"lease:"+b.Token, "1", redis.SetArgs{Mode: "XX", TTL: a.lease}).Err()
	})
}

// clearScript is the fence of one chunk. KEYS inflight, revoked, cleared,
// then the src keys of the chunk's notices written; ARGV the chunk's
// member in flight, then the seqs it reused from other batches. If the
// member is still in flight the watermark has not passed the chunk's seqs
// (it removes a member before passing it), so they are committed: the
// member leaves in flight and the src keys go (the notices are in the
// store, where writers look first). Otherwise the chunk lapsed: the
// watermark passed and revoked its seqs. It returns 1 (committed) or 0
// (lapsed), then the reused seqs that are revoked.
var clearScript = redis.NewScript(`
local ok = 0
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  ok = 1
  if #KEYS > 3 then
    for c = 4, #KEYS, 500 do redis.call('DEL', unpack(KEYS, c, math.min(c + 499, #KEYS))) end
    redis.call('INCR', KEYS[3])
  end
end
local out = {ok}
for i = 2, #ARGV do
  local s = tonumber(ARGV[i])
  local r = redis.call('ZRANGEBYSCORE', KEYS[2], s, '+inf', 'LIMIT', 0, 1)
  if #r == 1 and tonumber(string.sub(r[1], 1, string.find(r[1], '|', 1, true) - 1)) <= s then
    out[#out + 1] = s
  end
end
return out`)

// Clear ends a batch once its notices are written and searchable: in the
// same step, for each chunk, it proves the chunk's seqs are still in
// flight (the watermark has not passed them) and commits them, so they no
// longer hold the watermark back. It returns the positions (in b.IDs) of
// the notices whose seqs the watermark passed before: the chunk lapsed
// (its lease expired while it was written) and its seqs are revoked, or a
// seq it reused from another batch was revoked. Readers never see a
// notice under a revoked seq; the writer gives those notices new seqs
// (Allocate with fresh set) and writes them again. unwritten names the
// notices the store refused: their seqs stay remembered.
func (a *Arrivals) Clear(ctx context.Context, b Batch, unwritten map[string]bool) ([]int, error) {
	defer a.release(b.Token)
	var lapsed []int
	for _, c := range b.chunks {
		keys := []string{a.inflightKey(), a.revokedKey(), a.clearedKey()}
		args := []any{c.member}
		for i := c.lo; i < c.hi; i++ {
			if b.Settled[i] || b.Stale[i] {
				continue
			}
			if !unwritten[b.IDs[i]] {
				keys = append(keys, a.prefix+"src:"+b.IDs[i])
			}
			if b.Seqs[i] < c.from || b.Seqs[i] > c.to {
				args = append(args, b.Seqs[i])
			}
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := clearScript.Run(cctx, a.rdb, keys, args...).Int64Slice()
		cancel()
		if err != nil {
			return nil, Unavailable(err)
		}
		revoked := map[int64]bool{}
		for _, s := range res[1:] {
			revoked[s] = true
		}
		for i := c.lo; i < c.hi; i++ {
			if b.Settled[i] || b.Stale[i] {
				continue
			}
			own := b.Seqs[i] >= c.from && b.Seqs[i] <= c.to
			if own && res[0] == 0 || revoked[b.Seqs[i]] {
				lapsed = append(lapsed, i)
			}
		}
	}
	return lapsed, nil
}

// Range is a closed range of seqs.
type Range struct{ From, To int64 }

// Revoked returns the revoked ranges of seqs that meet (after, through]:
// seqs handed out to a batch whose lease lapsed, or that failed, before
// it was cleared. A notice stored under such a seq is not announced there
// (its writer, a later write of it, or Resequence gives it a new one), so
// every reader of seqs leaves them out.
func (a *Arrivals) Revoked(ctx context.Context, after, through int64) ([]Range, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	ms, err := a.rdb.ZRangeByScore(ctx, a.revokedKey(), &redis.ZRangeBy{Min: strconv.FormatInt(after+1, 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, Unavailable(err)
	}
	var out []Range
	for _, m := range ms {
		f, t, ok := strings.Cut(m, "|")
		from, err1 := strconv.ParseInt(f, 10, 64)
		to, err2 := strconv.ParseInt(t, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("arrival: revoked range %q", m)
		}
		if from <= through {
			out = append(out, Range{From: from, To: to})
		}
	}
	return out, nil
}

// MaxRevoked is how many revoked ranges are kept (the newest; adjacent
// ones are merged, so a lapsed batch is one range). A lease lapses rarely;
// a range dropped matters only for notices still stored under it, which
// Resequence moves long before.
const MaxRevoked = 1000

// watermark: KEYS counter, inflight, watermark, revoked; ARGV prefix,
// MaxRevoked. An entry at the bottom whose lease is gone is passed, and the
// seqs it took new are revoked in the same step (merged with a revoked
// range just below them; the oldest ranges beyond MaxRevoked dropped).
// Entries written before entries carried their range (low|token) revoke
// nothing.
var watermarkScript = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local wm = tonumber(redis.call('GET', KEYS[3]) or '0')
while true do
  local m = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if #m == 0 then break end
  local member, seq = m[1], tonumber(m[2])
  local parts = {}
  for p in string.gmatch(member, '[^|]+') do parts[#parts + 1] = p end
  if redis.call('EXISTS', ARGV[1] .. 'lease:' .. parts[2]) == 1 then
    cur = seq - 1
    break
  end
  redis.call('ZREM', KEYS[2], member)
  local from, to = tonumber(parts[3] or '0'), tonumber(parts[4] or '-1')
  if from > 0 and to >= from then
    local below = redis.call('ZRANGEBYSCORE', KEYS[4], from - 1, from - 1)
    if #below == 1 then
      redis.call('ZREM', KEYS[4], below[1])
      from = tonumber(string.sub(below[1], 1, string.find(below[1], '|', 1, true) - 1))
    end
    redis.call('ZADD', KEYS[4], to, from .. '|' .. to)
    redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -tonumber(ARGV[2]) - 1)
  end
end
if cur > wm then
  redis.call('SET', KEYS[3], cur)
  wm = cur
end
return wm`)

// Watermark returns the highest notice_seq such that every notice with a
// seq at most it is searchable (0 when none is).
func (a *Arrivals) Watermark(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	wm, err := watermarkScript.Run(ctx, a.rdb, []string{a.counterKey(), a.inflightKey(), a.watermarkKey(), a.revokedKey()}, a.prefix, MaxRevoked).Int64()
	if err != nil {
		return 0, Unavailable(err)
	}
	return wm, nil
}

// Latest returns the last notice_seq handed out (0 when none).
func (a *Arrivals) Latest(ctx context.Context) (int64, error) { return a.getInt(ctx, a.counterKey()) }

// getInt reads an integer key (0 when it is missing).
func (a *Arrivals) getInt(ctx context.Context, key string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	n, err := a.rdb.Get(ctx, key).Int64()
	if err == redis.Nil {
		return 0, nil
	}
	if err != nil {
		return 0, Unavailable(err)
	}
	return n, nil
}

// Unavailable wraps a Redis failure as errs.BackendUnavailable.
func Unavailable(err error) error {
	if _, ok := errs.As(err); ok {
		return err
	}
	return fmt.Errorf("%w (%v)", errs.New(errs.BackendUnavailable,
		"the Redis server cannot be reached or did not answer in time; retry shortly"), err)
}

// versionKey holds the notices' data version (see DataVersion).
func (a *Arrivals) versionKey() string { return a.prefix + "dv" }

// DataVersion returns the version of the notices' searchable data: every
// writer calls Changed once its writes are searchable, so an answer read
// while the version was v is still the answer for as long as DataVersion
// returns v (0 before any change).
func (a *Arrivals) DataVersion(ctx context.Context) (int64, error) {
	return a.getInt(ctx, a.versionKey())
}

// Changed moves the data version on: call it after writes to the notices
// (or to what their reads depend on) have become searchable.
func (a *Arrivals) Changed(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := a.rdb.Incr(ctx, a.versionKey()).Err(); err != nil {
		return Unavailable(err)
	}
	return nil
}
