//go:build unix

package redisstore

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestReplicatedCoversOtherConnections: replicated waits for everything
// written before it, also what was written on another connection (the
// steps of a change use several pooled connections, other processes
// write too): with the replica stalled, a write made by another client
// makes replicated fail with backend_unavailable, although the
// connection replicated uses has nothing unreplicated of its own.
// Without a replica it writes nothing (no wait mark) and returns at once.
func TestReplicatedCoversOtherConnections(t *testing.T) {
	ctx := context.Background()
	dial := func(url string) redis.UniversalClient {
		rdb, err := Dial(config.Config{RedisURL: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Close() })
		return rdb
	}
	t.Run("no replica: no WAIT, no write", func(t *testing.T) {
		rdb := dial(testservers.Redis(t))
		ns := testservers.Namespace(t)
		s := &Store{rdb: rdb, ns: keyspace.Prefix(ns)}
		if err := s.replicated(ctx, "test write"); err != nil {
			t.Fatal(err)
		}
		if n, err := rdb.Exists(ctx, s.key(waitMarkKey)).Result(); err != nil || n != 0 {
			t.Fatalf("the wait mark exists (%d, %v): replicated wrote without a replica", n, err)
		}
	})
	t.Run("a write of another connection", func(t *testing.T) {
		r := testservers.StartReplicated(t)
		s := &Store{rdb: dial(r.PrimaryURL), ns: "durable:"}
		other := dial(r.PrimaryURL)
		if err := s.replicated(ctx, "first write"); err != nil {
			t.Fatalf("with the replica up: %v", err)
		}
		r.Replica.Pause(t)
		if err := other.Set(ctx, "durable:other", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		err := s.replicated(ctx, "other write")
		r.Replica.Resume(t)
		if !errs.Is(err, errs.BackendUnavailable) {
			t.Fatalf("replicated = %v with the replica stalled after another connection's write; want backend_unavailable", err)
		}
		if err := s.replicated(ctx, "after resume"); err != nil {
			t.Fatalf("with the replica back: %v", err)
		}
	})
}
