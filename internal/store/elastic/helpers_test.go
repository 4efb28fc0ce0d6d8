package elastic

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/testservers"
)

// openTest opens a store on the live Elasticsearch and Redis in a namespace
// of its own, deleted when the test ends.
func openTest(t testing.TB, now func() time.Time) *Store {
	t.Helper()
	esURL := testservers.Elasticsearch(t)
	rdb := testRedis(t)
	ns := testservers.Namespace(t)
	return openIn(t, esURL, rdb, ns, now)
}

func testRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	opt, err := redis.ParseURL(testservers.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func openIn(t testing.TB, esURL string, rdb redis.UniversalClient, ns string, now func() time.Time) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, Config{URL: esURL, Namespace: ns, Log: publog.New(rdb, ns, publog.Options{}), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Drop(context.Background()); err != nil {
			t.Errorf("drop indices of %s: %v", ns, err)
		}
		dropRedis(t, rdb, ns)
	})
	return s
}

func dropRedis(t testing.TB, rdb redis.UniversalClient, ns string) {
	if ns[0] != '{' {
		dropRedis(t, rdb, "{"+ns+"}") // the publish log's keys
	}
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, ns+":*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Errorf("scan redis keys of %s: %v", ns, err)
	}
	for start := 0; start < len(keys); start += 500 {
		if err := rdb.Del(ctx, keys[start:min(start+500, len(keys))]...).Err(); err != nil {
			t.Errorf("delete redis keys of %s: %v", ns, err)
		}
	}
}
