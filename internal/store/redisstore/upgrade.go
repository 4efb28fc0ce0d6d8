package redisstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/lease"
)

const layoutTagged, upgradeLock = "tagged", 30 * time.Second

// UpgradeKeys moves the keys an older version wrote under "<namespace>:"
// to "{<namespace>}:" (docs/redis.md, "Upgrading from the untagged
// layout") and returns how many it moved; once the mark {ns}:layout says
// so, a call costs one GET. One process upgrades at a time, under a lock;
// the others wait. Each step is a RENAMENX (O(1), value and time to live
// kept) of a key still under the old name, so the next start finishes an
// interrupted upgrade; a key under both names (an older version still
// writing) stops it with an error naming both: nothing is overwritten.
func UpgradeKeys(ctx context.Context, rdb redis.UniversalClient, namespace string) (int, error) {
	p := keyspace.Prefix(namespace)
	mark, lock := p+"layout", p+"layout:lock"
	token := rand.Text()
	for {
		v, err := rdb.Get(ctx, mark).Result()
		if err != nil && err != redis.Nil {
			return 0, fmt.Errorf("redisstore: read the key layout of namespace %s: %w", namespace, err)
		}
		if v == layoutTagged {
			return 0, nil
		}
		took, err := lease.TakeOrRenew(ctx, rdb, lock, token, upgradeLock)
		if err != nil {
			return 0, fmt.Errorf("redisstore: lock the key upgrade of namespace %s: %w", namespace, err)
		}
		if took {
			n, err := moveOldKeys(ctx, rdb, namespace, lock, token)
			if err == nil {
				err = rdb.Set(ctx, mark, layoutTagged, 0).Err()
			}
			rdb.Del(context.WithoutCancel(ctx), lock)
			return n, err
		}
		select { // another process upgrades: wait for its mark
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// moveOldKeys renames every key under the old prefix, a SCAN page at a
// time with the lock renewed before each, until a full SCAN finds none.
func moveOldKeys(ctx context.Context, rdb redis.UniversalClient, namespace, lock, token string) (int, error) {
	old, p := keyspace.OldPrefix(namespace), keyspace.Prefix(namespace)
	moved := 0
	for {
		found := 0
		err := scanKeys(ctx, rdb, globEscape(old)+"*", 1000, func(batch []string) error {
			found += len(batch)
			if len(batch) == 0 {
				return nil
			}
			if held, err := lease.TakeOrRenew(ctx, rdb, lock, token, upgradeLock); err != nil || !held {
				return fmt.Errorf("redisstore: the key upgrade of namespace %s lost its lock (%v): start again", namespace, err)
			}
			cmds := make([]*redis.BoolCmd, len(batch))
			_, _ = rdb.Pipelined(ctx, func(pl redis.Pipeliner) error { // each answer read below
				for i, k := range batch {
					cmds[i] = pl.RenameNX(ctx, k, p+strings.TrimPrefix(k, old))
				}
				return nil
			})
			for i, c := range cmds {
				switch {
				case c.Err() != nil && strings.Contains(c.Err().Error(), "no such key"):
					// gone meanwhile (it expired)
				case c.Err() != nil:
					return fmt.Errorf("redisstore: upgrade key %s: %w", batch[i], c.Err())
				case !c.Val():
					return fmt.Errorf("redisstore: upgrading namespace %s: both %s and %s exist; stop every process of the older version, "+
						"keep the one that holds the data (usually the first) and remove the other, then start again", namespace, batch[i], p+strings.TrimPrefix(batch[i], old))
				default:
					moved++
				}
			}
			return nil
		})
		if err != nil || found == 0 {
			return moved, err
		}
	}
}

// globEscape escapes the characters SCAN's MATCH treats as a pattern.
var globEscape = strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`, `\`, `\\`).Replace
