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
// The watermark is the highest seq below which every notice is
// searchable: the lowest in-flight seq minus one, or the counter when
// nothing is in flight. It never decreases and never passes an in-flight
// seq whose lease is alive; a crashed ingester's seqs stop holding it back
// when their lease expires. A watch poller reading notices with
// notice_seq <= Watermark therefore never misses one that commits late.
package arrival

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
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

// sourceTTL is how long the seq handed out for a notice id is remembered,
// so that concurrent ingesters of the same notice agree on it; by then the
// notice is in Elasticsearch, where writers look first.
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

// Batch is the seqs of one write batch, in flight until Clear.
type Batch struct {
	// Token names the batch's lease.
	Token string
	// Seqs and Collected are parallel to the ids given to Allocate: the
	// notice_seq and collected_at of each.
	Seqs      []int64
	Collected []string
	// Settled marks ids whose seq was handed out earlier and has since
	// been passed by the watermark: the notice was written by another
	// ingester (look again, it is in the store) or its writer crashed
	// (call Allocate again with fresh set). A settled seq is not in flight.
	Settled []bool
}

// allocate: KEYS counter, inflight, watermark; ARGV prefix, token, lease
// ms, source ttl s, collected, fresh, ids... It reads every id's earlier
// seq (MGET, in chunks), takes the seqs of the new ones with one INCRBY
// (consecutive, in id order) and registers the chunk in flight once, under
// its lowest seq: the watermark only ever needs the lowest in-flight seq of
// a live lease.
var allocate = redis.NewScript(`
local prefix, token = ARGV[1], ARGV[2]
redis.call('SET', prefix .. 'lease:' .. token, '1', 'PX', ARGV[3])
local wm = tonumber(redis.call('GET', KEYS[3]) or '0')
local n = #ARGV - 6
local vals = {}
for c = 1, n, 500 do
  local keys = {}
  for i = c, math.min(c + 499, n) do keys[#keys + 1] = prefix .. 'src:' .. ARGV[6 + i] end
  local got = redis.call('MGET', unpack(keys))
  for j = 1, #got do vals[c + j - 1] = got[j] end
end
local seqs, cols, settled = {}, {}, {}
local fresh = 0
for i = 1, n do
  local v = vals[i]
  settled[i] = 0
  if v then
    local sep = string.find(v, '|', 1, true)
    seqs[i] = tonumber(string.sub(v, 1, sep - 1))
    cols[i] = string.sub(v, sep + 1)
    if seqs[i] <= wm then
      if ARGV[6] == '1' then v = nil else settled[i] = 1 end
    end
  end
  if not v then
    seqs[i] = false
    fresh = fresh + 1
  end
end
local nxt = 0
if fresh > 0 then nxt = redis.call('INCRBY', KEYS[1], fresh) - fresh end
local low = false
local out = {}
for i = 1, n do
  if not seqs[i] then
    nxt = nxt + 1
    seqs[i], cols[i] = nxt, ARGV[5]
    redis.call('SET', prefix .. 'src:' .. ARGV[6 + i], nxt .. '|' .. ARGV[5], 'EX', ARGV[4])
  end
  if settled[i] == 0 and (not low or seqs[i] < low) then low = seqs[i] end
  out[#out + 1] = seqs[i]
  out[#out + 1] = cols[i]
  out[#out + 1] = settled[i]
end
if low then redis.call('ZADD', KEYS[2], low, low .. '|' .. token) end
return out`)

// allocateChunk is the most ids one allocate script takes. Redis runs a
// script alone, so a whole scale-mode batch (20,000 ids) in one call would
// hold every other client, the API's key checks among them, for its whole
// run; Allocate sends a batch in chunks under one lease token, each chunk
// registered in flight under its own lowest seq.
const allocateChunk = 1000

// Allocate hands out notice_seqs for notices not yet stored (ids are notice
// ids, each once), stamping new ones collected_at = collected, and
// registers them in flight. A notice another ingester is still writing
// gets the same seq and collected_at it got. A notice whose seq the
// watermark has passed comes back Settled (not in flight): the caller
// looks in the store again, and allocates the ones still missing (their
// writer crashed) with fresh set, which gives them new seqs above the
// watermark so they are still announced.
func (a *Arrivals) Allocate(ctx context.Context, ids []string, collected string, fresh bool) (Batch, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	batch := Batch{Token: hex.EncodeToString(b[:])}
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
	for lo := 0; lo < len(ids); lo += allocateChunk {
		chunk := ids[lo:min(lo+allocateChunk, len(ids))]
		args := make([]any, 0, len(chunk)+6)
		args = append(args, a.prefix, batch.Token, a.lease.Milliseconds(), int64(sourceTTL/time.Second), collected, f)
		for _, id := range chunk {
			args = append(args, id)
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := allocate.Run(cctx, a.rdb, []string{a.counterKey(), a.inflightKey(), a.watermarkKey()}, args...).Slice()
		cancel()
		if err != nil {
			a.release(batch.Token)
			return Batch{}, Unavailable(err)
		}
		if len(res) != 3*len(chunk) {
			return Batch{}, fmt.Errorf("arrival: allocate returned %d values for %d ids", len(res), len(chunk))
		}
		for i := range chunk {
			seq, ok := res[3*i].(int64)
			col, ok2 := res[3*i+1].(string)
			settled, ok3 := res[3*i+2].(int64)
			if !ok || !ok2 || !ok3 {
				return Batch{}, fmt.Errorf("arrival: allocate returned %T, %T, %T", res[3*i], res[3*i+1], res[3*i+2])
			}
			batch.Seqs[lo+i], batch.Collected[lo+i], batch.Settled[lo+i] = seq, col, settled == 1
		}
	}
	return batch, nil
}

// release ends the lease of a batch whose allocation failed after some
// chunks were taken (perhaps the failing one too: a reply lost to a
// timeout does not say whether the script ran), so their seqs stop holding
// the watermark back at once instead of one lease later: the watermark
// passes an in-flight entry whose lease key is gone (watermarkScript), and
// those notices get new seqs when they are written again. Best effort:
// when Redis cannot be reached, the lease still ends by itself.
func (a *Arrivals) release(token string) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if a.rdb.Del(ctx, a.prefix+"lease:"+token).Err() == nil {
		_, _ = a.Watermark(ctx)
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

// clear: KEYS inflight; ARGV lease key, then the batch's members in
// flight (each chunk's lowest seq in flight).
var clearScript = redis.NewScript(`
for i = 2, #ARGV do redis.call('ZREM', KEYS[1], ARGV[i]) end
redis.call('DEL', ARGV[1])
return 1`)

// Clear ends a batch: its notices are searchable, so its seqs no longer
// hold the watermark back. It also advances the stored watermark.
func (a *Arrivals) Clear(ctx context.Context, b Batch) error {
	if b.Token == "" {
		return nil
	}
	args := []any{a.prefix + "lease:" + b.Token}
	for lo := 0; lo < len(b.Seqs); lo += allocateChunk {
		low := int64(-1)
		for i := lo; i < min(lo+allocateChunk, len(b.Seqs)); i++ {
			if (i >= len(b.Settled) || !b.Settled[i]) && (low < 0 || b.Seqs[i] < low) {
				low = b.Seqs[i]
			}
		}
		if low >= 0 {
			args = append(args, strconv.FormatInt(low, 10)+"|"+b.Token)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := clearScript.Run(cctx, a.rdb, []string{a.inflightKey()}, args...).Err(); err != nil {
		return Unavailable(err)
	}
	_, err := a.Watermark(ctx)
	return err
}

// watermark: KEYS counter, inflight, watermark; ARGV prefix.
var watermarkScript = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local wm = tonumber(redis.call('GET', KEYS[3]) or '0')
while true do
  local m = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if #m == 0 then break end
  local member, seq = m[1], tonumber(m[2])
  local token = string.sub(member, string.find(member, '|', 1, true) + 1)
  if redis.call('EXISTS', ARGV[1] .. 'lease:' .. token) == 1 then
    cur = seq - 1
    break
  end
  redis.call('ZREM', KEYS[2], member)
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
	wm, err := watermarkScript.Run(ctx, a.rdb, []string{a.counterKey(), a.inflightKey(), a.watermarkKey()}, a.prefix).Int64()
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
