package limit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultLease is how long a heavy slot held in Redis lives without being
// renewed. A replica renews the slots of its running requests every third
// of it, so a replica that dies frees its slots within one lease.
const DefaultLease = 30 * time.Second

// Redis is the limiter of a scale deployment: the request rate is a GCRA
// bucket in Redis (gcra.go) and heavy slots are leases in sorted sets, so
// every replica shares the same limits. It is safe for concurrent use.
//
// Keys: an account's rate buckets (RateKey's
// "{<namespace>:a:<account>}:limit:rate:<bucket>") and heavy set
// (HeavyKeys's "{<namespace>:a:<account>}:limit:heavy") are in the
// account's Redis Cluster slot, with its other keys; the service's heavy
// set "{<namespace>}:limit:heavy" in the namespace's. All expire.
type Redis struct {
	rdb    redis.UniversalClient
	ns     string
	global int
	lease  time.Duration

	// releasing holds the releases still being written to Redis (a
	// Release returns before its round trip, so that a request's answer
	// does not wait for it); Acquire waits for those begun before it, so
	// that a slot released on this replica is free to its next Acquire.
	releasing inflight
}

// inflight keeps the work under way and lets a caller wait for the work
// begun before it (not for work begun later: under steady load some is
// always under way).
type inflight struct {
	mu      sync.Mutex
	pending map[chan struct{}]struct{}
}

// add records one more piece of work under way; the caller calls the
// returned func when it ends.
func (f *inflight) add() (done func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending == nil {
		f.pending = map[chan struct{}]struct{}{}
	}
	f.pending[ch] = struct{}{}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.pending, ch)
		close(ch)
	}
}

// begun returns the work under way now, for the caller to wait for.
func (f *inflight) begun() underway {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := make(underway, 0, len(f.pending))
	for ch := range f.pending {
		u = append(u, ch)
	}
	return u
}

// underway is work that was under way at one moment.
type underway []chan struct{}

// wait returns once all of u has ended, or when ctx ends.
func (u underway) wait(ctx context.Context) error {
	for _, ch := range u {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// NewRedis returns a Redis limiter on rdb under namespace ns, allowing at
// most global heavy requests at once across all keys and replicas. lease
// <= 0 means DefaultLease.
func NewRedis(rdb redis.UniversalClient, ns string, global int, lease time.Duration) *Redis {
	if lease <= 0 {
		lease = DefaultLease
	}
	return &Redis{rdb: rdb, ns: ns, global: max(1, global), lease: lease}
}

// Allow takes one request token of account's bucket (the key kind:
// "read" or "acct") at rate r.
func (l *Redis) Allow(ctx context.Context, account, bucket string, r Rate) (Decision, error) {
	if r.PerSecond <= 0 {
		return Decision{Allowed: true}, nil
	}
	v, err := allowScript.Run(ctx, l.rdb, []string{RateKey(l.ns, account, bucket)}, r.GCRAArgs()...).Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("limit: redis rate of %s:%s: %w", account, bucket, err)
	}
	d, err := ParseGCRA(v)
	if err != nil {
		return Decision{}, fmt.Errorf("limit: redis rate of %s:%s: %w", account, bucket, err)
	}
	return d, nil
}

// acquireScript takes the account's part of a slot (take_slot). KEYS:
// SlotClaim.Keys. ARGV: SlotClaim.Args.
var acquireScript = redis.NewScript(SlotLua + `
return take_slot(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
`)

// renewScript extends a held lease in one set (only if it is still held).
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
end
return 0
`)

// Acquire takes a heavy slot of account (at most perKey at once across all
// replicas; 0 means no per-account cap) and one of the global slots: the
// account's part, then the service's (Finish), two calls. The slot is a
// lease renewed in the background until Release.
//
// Release returns at once and frees the slot in Redis in the background
// (the request that held it need not wait a round trip to answer); an
// Acquire on the same limiter first waits for the releases under way, so
// it never finds a slot this replica has released still taken. Another
// replica may, for that round trip, and queues for it as for any slot.
func (l *Redis) Acquire(ctx context.Context, account string, perKey int) (Release, Decision, error) {
	c, err := l.Claim(ctx, account, perKey)
	if err != nil {
		return nil, Decision{}, err
	}
	n, err := acquireScript.Run(ctx, l.rdb, c.Keys, c.Args...).Int64()
	if err != nil {
		return nil, Decision{}, fmt.Errorf("limit: redis heavy slot of %s: %w", account, err)
	}
	return l.Finish(ctx, c, n)
}

// Flush returns once every slot released so far is freed in Redis (or its
// round trip has failed), or when ctx ends. A server calls it after its
// last request, before it closes the Redis client.
func (l *Redis) Flush(ctx context.Context) error { return l.releasing.begun().wait(ctx) }

// releaseTimeout bounds the round trip that frees a released slot (and so
// how long an Acquire can wait for it); a slot whose release fails frees
// itself when its lease ends.
const releaseTimeout = 2 * time.Second

// newToken names one lease.
func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
