package elastic

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Config.AggCache's default; the age past which a kept answer is read again.
const (
	DefaultAggCache = 1000
	aggCacheMaxAge  = 30 * time.Second
)

// aggCache keeps the answers of /v1/filters and /v1/stats, keyed by the
// exact request, while the notices' data version (publog.Log.DataVersion)
// is the one they were read at. Writers move it on once their writes are
// searchable; a write its writer never saw land (a timed-out bulk request)
// is bounded by aggCacheMaxAge, the index's refresh interval.
type aggCache struct {
	max          int
	mu           sync.Mutex
	version      int64
	m            map[string]aggAnswer
	hits, misses atomic.Int64
}

// aggAnswer is one kept answer, shared by every reader, never changed.
type aggAnswer struct {
	total int64
	aggs  map[string]termsAgg
	at    time.Time
}

// newAggCache returns a cache of up to max answers (nil when negative).
func newAggCache(max int) *aggCache {
	if max < 0 {
		return nil
	}
	if max == 0 {
		max = DefaultAggCache
	}
	return &aggCache{max: max, m: map[string]aggAnswer{}}
}

// get returns the answer kept for key at data version v, if still young.
func (c *aggCache) get(v int64, key string, now time.Time) (aggAnswer, bool) {
	c.mu.Lock()
	a, ok := c.m[key]
	ok = ok && c.version == v && now.Sub(a.at) < aggCacheMaxAge
	c.mu.Unlock()
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return a, ok
}

// put keeps an answer read at data version v (a newer v drops the others).
func (c *aggCache) put(v int64, key string, a aggAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case v < c.version:
		return
	case v > c.version:
		c.version = v
		clear(c.m)
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		for k := range c.m { // one at random: Go's map order
			delete(c.m, k)
			break
		}
	}
	c.m[key] = a
}

// AggCacheReads returns the filters and stats reads answered from the cache.
func (s *Store) AggCacheReads() (hits, misses int64) {
	if s.aggs == nil {
		return 0, 0
	}
	return s.aggs.hits.Load(), s.aggs.misses.Load()
}

// dataChanged moves the data version on after a write became searchable
// (a failure is ignored: kept answers live out their aggCacheMaxAge).
func (s *Store) dataChanged(ctx context.Context) {
	_ = s.cfg.Log.Changed(context.WithoutCancel(ctx))
}
