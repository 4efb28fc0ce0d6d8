package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/keyspace"
)

// The upgrade of a namespace written before its keys were tagged: older
// versions kept the Redis store's keys under "<ns>:" (the publish log's
// were already under "{<ns>}:"). UpgradeKeys renames each to the same name
// under "{<ns>}:", once, before the store is used:
//
//	{ns}:layout        "tagged" once every key of the namespace is under {ns}:
//	{ns}:layout:lock   the process upgrading, while it does (expires)
//
// RENAME keeps a key's value and time to live and costs O(1), so a
// namespace of millions of keys is upgraded in a few seconds. Every step
// is a RENAMENX of a key still under the old prefix, so an upgrade
// interrupted anywhere is finished by the next start.

const (
	layoutTagged  = "tagged"
	upgradeLockMs = 30_000
)

// upgradeLockScript takes the upgrade lock, or renews it while this
// process holds it. KEYS: layout:lock. ARGV: token, ttl ms.
var upgradeLockScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// UpgradeKeys moves the keys an older version wrote under "<namespace>:"
// to "{<namespace>}:" (package keyspace), so that none is orphaned, and
// returns how many it moved. Once done it marks the namespace
// ({ns}:layout), and later calls cost one GET. One process upgrades at a
// time (a lock with a time to live); the others wait for it. A key
// present under both names (a process of the older version still writing
// after the upgrade began) stops the upgrade with an error naming it:
// nothing is overwritten.
func UpgradeKeys(ctx context.Context, rdb redis.UniversalClient, namespace string) (int, error) {
	p := keyspace.Prefix(namespace)
	mark, lock := p+"layout", p+"layout:lock"
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	for {
		v, err := rdb.Get(ctx, mark).Result()
		if err != nil && err != redis.Nil {
			return 0, fmt.Errorf("redisstore: read the key layout of namespace %s: %w", namespace, err)
		}
		if v == layoutTagged {
			return 0, nil
		}
		took, err := upgradeLockScript.Run(ctx, rdb, []string{lock}, token, upgradeLockMs).Int()
		if err != nil {
			return 0, fmt.Errorf("redisstore: lock the key upgrade of namespace %s: %w", namespace, err)
		}
		if took == 1 {
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

// moveOldKeys renames every key under the old prefix until a full SCAN
// finds none, renewing the lock between batches.
func moveOldKeys(ctx context.Context, rdb redis.UniversalClient, namespace, lock, token string) (int, error) {
	old, p := keyspace.OldPrefix(namespace), keyspace.Prefix(namespace)
	pattern := globEscape(old) + "*"
	moved := 0
	for {
		found := 0
		var batch []string
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			if n, err := upgradeLockScript.Run(ctx, rdb, []string{lock}, token, upgradeLockMs).Int(); err != nil || n != 1 {
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
			batch = batch[:0]
			return nil
		}
		var flushErr error
		err := scanKeys(ctx, rdb, pattern, 1000, func(keys []string) error {
			for _, k := range keys {
				found++
				if batch = append(batch, k); len(batch) == 1000 {
					if flushErr = flush(); flushErr != nil {
						return flushErr
					}
				}
			}
			return nil
		})
		if flushErr != nil {
			return moved, flushErr
		}
		if err != nil {
			return moved, fmt.Errorf("redisstore: scan the keys of namespace %s: %w", namespace, err)
		}
		if err := flush(); err != nil {
			return moved, err
		}
		if found == 0 {
			return moved, nil
		}
	}
}

// globEscape escapes the characters SCAN's MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
