// Package lease is a named lease in Redis that one process at a time
// holds: the scale backend's `serve` replicas use it so that only one of
// them runs the collector, and another takes over within the lease's time
// to live when the holder dies.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultTTL is how long a lease outlives its holder's last renewal: a
// dead holder's lease is taken over within this time.
const DefaultTTL = 30 * time.Second

// takeOrRenew takes the lease when it is free and extends it when it is
// already this owner's, whatever this process last believed: after a
// renewal that failed on the way (a timeout, a dropped connection) the
// key may still be ours, and a plain SET NX would keep us out of our own
// lease until it expired.
var takeOrRenew = redis.NewScript(`
local cur = redis.call("GET", KEYS[1])
if cur == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
if not cur then
  redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
  return 1
end
return 0`)

// setIfHeld sets KEYS[2] to ARGV[2] only while this owner holds the lease
// in KEYS[1]: the check and the write are one step, so a holder whose lease
// lapsed (a stalled process) cannot overwrite what its successor wrote.
var setIfHeld = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("SET", KEYS[2], ARGV[2])
  return 1
end
return 0`)

// release deletes the lease only while this owner holds it.
var release = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)

// Lease tries to take, and then keeps renewing, one key. Held reports
// whether this process holds it now.
type Lease struct {
	rdb   redis.UniversalClient
	key   string
	owner string
	ttl   time.Duration
	held  atomic.Bool
	// until is when the lease, as last taken or renewed by this process,
	// expires at the latest (UnixNano of the local clock, read before the
	// call that took or renewed it).
	until atomic.Int64
	now   func() time.Time

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a lease on key with the given time to live (DefaultTTL when
// 0). Start it to begin trying.
func New(rdb redis.UniversalClient, key string, ttl time.Duration) *Lease {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return &Lease{rdb: rdb, key: key, owner: hex.EncodeToString(b[:]), ttl: ttl, now: time.Now}
}

// Held reports whether this process holds the lease. It turns false as
// soon as a renewal fails, before the lease could pass to another holder,
// and also once the time to live has passed since the last renewal that
// succeeded (a process stalled past its renewals, or a renewal stuck in a
// Redis that does not answer, does not go on believing it holds it).
func (l *Lease) Held() bool {
	return l.held.Load() && l.now().UnixNano() < l.until.Load()
}

// ErrNotHeld is returned by SetIfHeld when this process does not hold the
// lease (any more): the write was not made.
var ErrNotHeld = errors.New("lease: not held by this process; the write was not made")

// SetIfHeld sets key to value in one step with a check that this process
// still holds the lease in Redis, so the holder's state (the collector's
// feed cursor) is written only by the holder: a process whose lease
// lapsed gets ErrNotHeld and changes nothing. The lease key and key are
// passed to the script as KEYS.
func (l *Lease) SetIfHeld(ctx context.Context, key string, value []byte) error {
	n, err := setIfHeld.Run(ctx, l.rdb, []string{l.key, key}, l.owner, value).Int()
	if err != nil {
		return fmt.Errorf("lease: write %s: %w", key, err)
	}
	if n != 1 {
		l.held.Store(false)
		return ErrNotHeld
	}
	return nil
}

// Start tries to take the lease now and then every third of its time to
// live, renewing it while held.
func (l *Lease) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return nil
	}
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	l.try(ctx)
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				l.try(ctx)
			}
		}
	}()
	return nil
}

// try takes the lease if it is free, or renews it if held.
func (l *Lease) try(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, l.ttl/3)
	defer cancel()
	// The lease runs from before the call: Redis's own expiry starts
	// later, so the local view never outlasts it.
	until := l.now().Add(l.ttl).UnixNano()
	held, err := TakeOrRenew(ctx, l.rdb, l.key, l.owner, l.ttl)
	l.until.Store(until)
	l.held.Store(err == nil && held)
}

// TakeOrRenew takes the lease at key for owner for ttl when it is free, or
// renews it when owner holds it, in one script, and reports whether owner
// holds it now.
func TakeOrRenew(ctx context.Context, rdb redis.UniversalClient, key, owner string, ttl time.Duration) (bool, error) {
	n, err := takeOrRenew.Run(ctx, rdb, []string{key}, owner, ttl.Milliseconds()).Int()
	return n == 1, err
}

// Shutdown stops trying and gives the lease up if held, so another process
// takes it at once rather than after the time to live.
func (l *Lease) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.held.Store(false)
	return release.Run(ctx, l.rdb, []string{l.key}, l.owner).Err()
}

// Keep calls renew every interval, each call with a context that ends
// after the interval, until the returned stop is called: the background
// half of a lease that its holder extends while it works. A failed renewal
// is renew's to ignore (the next tick tries again; a lease left alone
// expires by itself). stop waits for a renewal under way and may be called
// more than once.
func Keep(interval time.Duration, renew func(ctx context.Context)) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), interval)
				renew(ctx)
				cancel()
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-finished }) }
}

// Record is a value in Redis that only the holder of a lease writes: the
// collector's feed cursor, shared by the serve replicas, so that a new
// holder resumes where the last one stopped.
type Record struct {
	l   *Lease
	key string
}

// Record returns the record at key, written under this lease.
func (l *Lease) Record(key string) Record { return Record{l: l, key: key} }

// Load returns the record's value, or nil when it has none.
func (r Record) Load(ctx context.Context) ([]byte, error) {
	b, err := r.l.rdb.Get(ctx, r.key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lease: read %s: %w", r.key, err)
	}
	return b, nil
}

// Save writes the record if this process holds the lease (SetIfHeld):
// ErrNotHeld otherwise.
func (r Record) Save(ctx context.Context, value []byte) error {
	return r.l.SetIfHeld(ctx, r.key, value)
}
