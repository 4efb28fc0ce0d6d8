package limit

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// idleAfter is how long a key's bucket is kept without requests; an idle
// bucket is full again by then, so forgetting it changes nothing.
const idleAfter = time.Minute

// Local is the in-process limiter of the embedded backend. It is safe for
// concurrent use.
type Local struct {
	global int
	now    func() time.Time

	mu        sync.Mutex
	buckets   map[string]*bucket
	heavy     map[string]int
	heavyAll  int
	lastSweep time.Time
}

type bucket struct {
	lim  *rate.Limiter
	rate Rate
	seen time.Time
}

// NewLocal returns an in-process limiter allowing at most global heavy
// requests at once across all keys (at least 1). now is the clock; nil
// means time.Now.
func NewLocal(global int, now func() time.Time) *Local {
	if now == nil {
		now = time.Now
	}
	return &Local{global: max(1, global), now: now, buckets: map[string]*bucket{}, heavy: map[string]int{}}
}

// Allow takes one request token of account's bucket name at rate r.
func (l *Local) Allow(_ context.Context, account, name string, r Rate) (Decision, error) {
	key := account + ":" + name
	if r.PerSecond <= 0 {
		return Decision{Allowed: true}, nil
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b := l.buckets[key]
	if b == nil || b.rate != r {
		b = &bucket{lim: rate.NewLimiter(rate.Limit(r.PerSecond), r.burst()), rate: r}
		l.buckets[key] = b
	}
	b.seen = now
	res := b.lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return Decision{RetryAfter: d}, nil
	}
	return Decision{Allowed: true}, nil
}

// Acquire takes a heavy slot of key, an account (at most perKey at once;
// 0 means no per-key cap), and one of the service's global slots.
func (l *Local) Acquire(_ context.Context, key string, perKey int) (Release, Decision, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if perKey > 0 && l.heavy[key] >= perKey {
		return nil, Decision{RetryAfter: slotRetry}, nil
	}
	if l.heavyAll >= l.global {
		return nil, Decision{RetryAfter: slotRetry, Global: true}, nil
	}
	l.heavy[key]++
	l.heavyAll++
	var once sync.Once
	release := func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.heavyAll--
			if l.heavy[key]--; l.heavy[key] <= 0 {
				delete(l.heavy, key)
			}
		})
	}
	return release, Decision{Allowed: true}, nil
}

// sweep forgets buckets idle for idleAfter, at most once per idleAfter, so
// the map does not grow with every key ever seen.
func (l *Local) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < idleAfter {
		return
	}
	l.lastSweep = now
	for k, b := range l.buckets {
		if now.Sub(b.seen) >= idleAfter {
			delete(l.buckets, k)
		}
	}
}
