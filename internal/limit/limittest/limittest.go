// Package limittest gives tests a limit.Redis on the test Redis server
// (internal/testservers) in a namespace of their own, removed afterwards.
package limittest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/testservers"
)

// Redis returns a Redis limiter with global heavy slots on the test Redis,
// in a fresh namespace whose keys are deleted when t ends, with its client
// and namespace (for tests that look at the keys).
func Redis(t *testing.T, global int) (*limit.Redis, *redis.Client, string) {
	t.Helper()
	opts, err := redis.ParseURL(testservers.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	ns := testservers.Namespace(t)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, pattern := range []string{keyspace.Prefix(ns) + "*", keyspace.Account(ns, "*") + "*"} {
			if keys, _ := rdb.Keys(ctx, pattern).Result(); len(keys) > 0 {
				rdb.Del(ctx, keys...)
			}
		}
		rdb.Close()
	})
	return limit.NewRedis(rdb, ns, global, 0), rdb, ns
}
