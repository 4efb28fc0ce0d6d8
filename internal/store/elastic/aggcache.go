package elastic

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Config.AggCache and the age past which a kept answer is
// read again whatever the data version says.
const (
	DefaultAggCache = 1000
	aggCacheMaxAge  = 30 * time.Second
)

// aggCache keeps the answers of the aggregation reads (/v1/filters and
// /v1/stats) of one process, keyed by the exact request, while the
// notices' data version (publog.Log.DataVersion) stays what it was when
// the answer was read. Every writer moves the version on once its writes
// are searchable, so an answer is never kept past a write that could
// change it; a write its writer never saw land (a bulk request that timed
// out, then landed) is bounded by aggCacheMaxAge, the notices index's
// refresh interval.
type aggCache struct {
	max          int
	mu           sync.Mutex
	version      int64
	m            map[string]aggAnswer
	hits, misses atomic.Int64
}

// aggAnswer is one kept answer. Its buckets are shared by every reader and
// never changed.
type aggAnswer struct {
	total int64
	aggs  map[string]termsAgg
	at    time.Time
}

// newAggCache returns a cache of up to max answers, or nil (no cache) when
// max is negative.
func newAggCache(max int) *aggCache {
	if max < 0 {
		return nil
	}
	if max == 0 {
		max = DefaultAggCache
	}
	return &aggCache{max: max, m: map[string]aggAnswer{}}
}

// get returns the answer kept for key at data version v, if it is not
// older than aggCacheMaxAge at now.
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

// put keeps an answer read at data version v. A newer version drops every
// answer kept; an answer read at an older one is not kept.
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

// AggCacheReads returns how many filters and stats reads this store
// answered from its answer cache (hits) and from Elasticsearch (misses).
// Both are 0 without a cache.
func (s *Store) AggCacheReads() (hits, misses int64) {
	if s.aggs == nil {
		return 0, 0
	}
	return s.aggs.hits.Load(), s.aggs.misses.Load()
}

// dataChanged moves the notices' data version on after a write became
// searchable (aggCache). It follows a step that cannot be undone, so its
// failure is ignored: kept answers then live out their aggCacheMaxAge.
func (s *Store) dataChanged(ctx context.Context) {
	_ = s.log.Changed(context.WithoutCancel(ctx))
}
