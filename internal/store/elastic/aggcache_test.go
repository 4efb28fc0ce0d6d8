package elastic

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestAggCacheFollowsWrites: filters and stats answers are kept by the
// process that read them, but never past a write that could change them,
// wherever that write was made: another process (another store on the same
// namespace, as an ingest beside serve) adding notices or amending one,
// and a register load. And never past aggCacheMaxAge.
func TestAggCacheFollowsWrites(t *testing.T) {
	ctx := context.Background()
	esURL, rdb, ns := testservers.Elasticsearch(t), testRedis(t), testservers.Namespace(t)
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	reader := openIn(t, esURL, rdb, ns, clock)
	writer := openIn(t, esURL, rdb, ns, nil)
	if _, err := writer.UpsertNotices(ctx, synthBatch("K", 0, 9)); err != nil {
		t.Fatal(err)
	}
	stateQ := notice.StatsQuery{GroupBy: "state"}
	read := func(t *testing.T, want int64) (notice.FilterCounts, notice.Stats) {
		t.Helper()
		fc, err := reader.Filters(ctx, notice.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := reader.Stats(ctx, stateQ)
		if err != nil {
			t.Fatal(err)
		}
		if fc.Total != want || st.Total != want {
			t.Fatalf("filters total %d, stats total %d; want %d (an answer kept past a write?)", fc.Total, st.Total, want)
		}
		return fc, st
	}
	hits := func() int64 { return reader.aggs.hits.Load() }

	fc1, st1 := read(t, 9)
	if hits() != 0 {
		t.Fatalf("%d hits on the first reads", hits())
	}
	fc2, st2 := read(t, 9)
	if hits() != 2 {
		t.Fatalf("%d hits on the same reads again with nothing written; want 2", hits())
	}
	if !reflect.DeepEqual(fc1, fc2) || !reflect.DeepEqual(st1, st2) {
		t.Fatalf("kept answers differ from the read ones:\n%+v\n%+v\n%+v\n%+v", fc1, fc2, st1, st2)
	}

	t.Run("notices added by another process", func(t *testing.T) {
		if _, err := writer.UpsertNotices(ctx, synthBatch("K", 9, 3)); err != nil {
			t.Fatal(err)
		}
		read(t, 12)
	})
	t.Run("a notice amended by another process", func(t *testing.T) {
		read(t, 12)
		n := synthNotice("K", 0)
		n.State = "TAS"
		if _, err := writer.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
			t.Fatal(err)
		}
		_, st := read(t, 12)
		found := false
		for _, b := range st.Data {
			found = found || (b.Key == "TAS" && b.Count == 1)
		}
		if !found {
			t.Fatalf("stats by state after the amendment: %+v; want TAS 1", st.Data)
		}
	})
	t.Run("a register load", func(t *testing.T) {
		read(t, 12)
		before := hits()
		l, err := writer.BeginRegister(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		read(t, 12)
		if hits() != before {
			t.Fatalf("%d hits after a register load; want none (company filters read the register)", hits()-before)
		}
	})
	t.Run("older than the maximum age", func(t *testing.T) {
		read(t, 12)
		before := hits()
		offset.Store(int64(aggCacheMaxAge + time.Second))
		read(t, 12)
		if hits() != before {
			t.Fatalf("%d hits on answers older than %s; want none", hits()-before, aggCacheMaxAge)
		}
	})
}

// TestAggCacheBounds: the cache keeps at most its size, drops everything
// kept when the data version moves on, and keeps nothing read at an older
// version than it has seen.
func TestAggCacheBounds(t *testing.T) {
	now := time.Now()
	c := newAggCache(2)
	for _, k := range []string{"a", "b", "c"} {
		c.put(1, k, aggAnswer{total: 1, at: now})
	}
	if len(c.m) != 2 {
		t.Fatalf("a cache of 2 holds %d answers", len(c.m))
	}
	if _, ok := c.get(1, "c", now); !ok {
		t.Fatal("the answer just kept is missing")
	}
	c.put(2, "d", aggAnswer{total: 2, at: now})
	if _, ok := c.get(2, "c", now); ok || len(c.m) != 1 {
		t.Fatalf("after version 2: %d answers, c found %v; want only d", len(c.m), ok)
	}
	c.put(1, "e", aggAnswer{total: 1, at: now})
	if _, ok := c.get(2, "e", now); ok {
		t.Fatal("an answer read at version 1 was kept after version 2 was seen")
	}
	if _, ok := c.get(3, "d", now); ok {
		t.Fatal("an answer of version 2 was given at version 3")
	}
	if newAggCache(-1) != nil {
		t.Fatal("a negative size should give no cache")
	}
}
