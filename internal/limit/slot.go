package limit

import (
	"context"
	"fmt"
	"sync"

	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/lease"
)

// HeavyKeys are the Redis keys of key's heavy slots in namespace ns: the
// key's own set "{<ns>}:limit:heavy:<key>" and the service's
// "{<ns>}:limit:heavy", in the order SlotLua's take_slot takes them.
func HeavyKeys(ns, key string) []string {
	p := keyspace.Prefix(ns)
	return []string{p + "limit:heavy:" + key, p + "limit:heavy"}
}

// SlotLua defines the Lua function take_slot(keyset, allset, token,
// lease, perkey, global), which takes a heavy slot named token in the
// key's set and the service's (KEYS entries of the calling script, see
// HeavyKeys) when both have room, after dropping expired leases. Redis's
// own clock decides expiry, so replicas with skewed clocks agree. perkey
// 0 means no per-key cap. It returns 0 (taken), 1 (the key is at its cap)
// or 2 (the service is at its cap); SlotDecision reads that. Scripts that
// take a slot among other work (the Redis store's key check) start with
// it, so every script that takes a slot runs the same code.
const SlotLua = `
local function take_slot(keyset, allset, token, lease, perkey, global)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', keyset, '-inf', now)
  redis.call('ZREMRANGEBYSCORE', allset, '-inf', now)
  if perkey > 0 and redis.call('ZCARD', keyset) >= perkey then return 1 end
  if redis.call('ZCARD', allset) >= global then return 2 end
  redis.call('ZADD', keyset, now + lease, token)
  redis.call('ZADD', allset, now + lease, token)
  redis.call('PEXPIRE', keyset, lease)
  redis.call('PEXPIRE', allset, lease)
  return 0
end
`

// SlotClaim is what a script needs to take one heavy slot of a key with
// take_slot (SlotLua): its KEYS (HeavyKeys) and ARGV (token, lease in
// milliseconds, per-key cap, global cap), in that order. A claim whose
// script answered 0 is Adopted by the limiter that made it.
type SlotClaim struct {
	// Keys are the KEYS of take_slot: the key's set, the service's.
	Keys []string
	// Args are the ARGV of take_slot after those: token, lease, perkey,
	// global.
	Args []any
	// token names the lease.
	token string
}

// Claim prepares the taking of a heavy slot of key (at most perKey at
// once, 0 for no per-key cap) by a script, in this limiter's namespace,
// with its lease and global cap. It first waits for the releases under way
// on this limiter (as Acquire does), so the script never finds a slot
// this replica has released still taken.
func (l *Redis) Claim(ctx context.Context, key string, perKey int) (SlotClaim, error) {
	if err := l.releasing.begun().wait(ctx); err != nil {
		return SlotClaim{}, fmt.Errorf("limit: heavy slot of %s: %w", key, err)
	}
	token := newToken()
	return SlotClaim{
		Keys:  HeavyKeys(l.ns, key),
		Args:  []any{token, l.lease.Milliseconds(), perKey, l.global},
		token: token,
	}, nil
}

// SlotDecision is the Decision of take_slot's answer n.
func SlotDecision(n int64) Decision {
	switch n {
	case 0:
		return Decision{Allowed: true}
	case 1:
		return Decision{RetryAfter: slotRetry}
	}
	return Decision{RetryAfter: slotRetry, Global: true}
}

// Adopt takes over the slot of claim c, taken by a script (take_slot
// answered 0): it renews the lease in the background until the returned
// Release, which frees the slot in Redis in the background, as Acquire's
// does (Flush and the next Claim or Acquire wait for it).
func (l *Redis) Adopt(c SlotClaim) Release {
	stopRenewing := lease.Keep(l.lease/3, func(ctx context.Context) {
		_ = renewScript.Run(ctx, l.rdb, c.Keys, c.token, l.lease.Milliseconds()).Err() // a missed renewal only shortens the lease
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			released := l.releasing.add()
			go func() {
				defer released()
				stopRenewing()
				rctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
				defer cancel()
				pipe := l.rdb.TxPipeline()
				pipe.ZRem(rctx, c.Keys[0], c.token)
				pipe.ZRem(rctx, c.Keys[1], c.token)
				_, _ = pipe.Exec(rctx) // if Redis is away the lease expires by itself
			}()
		})
	}
}

// Slot is the answer to a heavy slot asked for along with other work (a
// scale request's key check and rate token). Asked says whether the slot
// was tried (it is not when the other work refused the request first);
// then Decision is its answer and, when allowed, Release gives it back.
type Slot struct {
	Asked    bool
	Decision Decision
	Release  Release
}
