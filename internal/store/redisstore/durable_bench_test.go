//go:build unix

package redisstore

import (
	"context"
	"testing"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/testservers"
)

// BenchmarkReplicatedWrite measures what the replica wait adds to a write
// (docs/redis.md, "Durability"): a write alone, and the same write
// followed by replicated (INCR of the wait mark and WAIT 1, one round
// trip), against a primary with one replica on loopback.
//
//	go test -tags sqlite_fts5 -run '^$' -bench BenchmarkReplicatedWrite -benchtime 3000x ./internal/store/redisstore
func BenchmarkReplicatedWrite(b *testing.B) {
	r := testservers.StartReplicated(b)
	rdb, err := Dial(config.Config{RedisURL: r.PrimaryURL})
	if err != nil {
		b.Fatal(err)
	}
	defer rdb.Close()
	s := &Store{rdb: rdb, ns: "bench:"}
	ctx := context.Background()
	write := func(b *testing.B) {
		if err := rdb.HSet(ctx, "bench:w", "doc", "a watch document of some length").Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("write", func(b *testing.B) {
		for range b.N {
			write(b)
		}
	})
	b.Run("write+replicated", func(b *testing.B) {
		for range b.N {
			write(b)
			if err := s.replicated(ctx, "bench write"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
