package limit

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/lease"
)

// HeavyKeys are the Redis keys of account's heavy slots in namespace ns:
// the account's own set "{<ns>:a:<account>}:limit:heavy", in the
// account's slot with its other keys (keyspace.Account), so the key check
// of a request takes it in one script call, and the service's
// "{<ns>}:limit:heavy", in the namespace's slot.
func HeavyKeys(ns, account string) []string {
	return []string{keyspace.Account(ns, account) + "limit:heavy", keyspace.Prefix(ns) + "limit:heavy"}
}

// SlotLua defines the Lua function take_slot(set, token, lease, cap,
// full), which takes a heavy slot named token in set (a KEYS entry of the
// calling script, one of HeavyKeys) when it holds fewer than cap live
// leases (cap 0: no cap), after dropping expired ones, and returns 0; else
// it returns full. Redis's own clock decides expiry, so replicas with
// skewed clocks agree. A slot is taken in two calls, as the two sets are
// in two Redis Cluster slots: the account's set first (full 1: the
// account is at its cap; the Redis store's key check takes it in its own
// script call), then, only when that was taken, the service's (full 2)
// by Finish, which gives the account's back when the service is full.
// SlotDecision reads the answers.
const SlotLua = `
local function take_slot(set, token, lease, cap, full)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', set, '-inf', now)
  if cap > 0 and redis.call('ZCARD', set) >= cap then return full end
  redis.call('ZADD', set, now + lease, token)
  redis.call('PEXPIRE', set, lease)
  return 0
end
`

// SlotClaim is what a script needs to take the account's part of one heavy
// slot with take_slot (SlotLua): its KEYS (the account's set of
// HeavyKeys) and ARGV (token, lease in milliseconds, the account's cap, 1),
// in that order. The script's answer goes to Finish, which takes the
// service's part.
type SlotClaim struct {
	// Keys are the KEYS of take_slot: the account's set.
	Keys []string
	// Args are the ARGV of take_slot after the set: token, lease, the
	// account's cap, the answer when the account is full (1).
	Args []any
	// token names the lease in both sets (HeavyKeys).
	token string
	sets  []string
}

// Claim prepares the taking of a heavy slot of account (at most perKey at
// once, 0 for no per-account cap) by a script, in this limiter's
// namespace, with its lease. It first waits for the releases under way on
// this limiter (as Acquire does), so the script never finds a slot this
// replica has released still taken.
func (l *Redis) Claim(ctx context.Context, account string, perKey int) (SlotClaim, error) {
	if err := l.releasing.begun().wait(ctx); err != nil {
		return SlotClaim{}, fmt.Errorf("limit: heavy slot of %s: %w", account, err)
	}
	token, sets := newToken(), HeavyKeys(l.ns, account)
	return SlotClaim{
		Keys:  sets[:1],
		Args:  []any{token, l.lease.Milliseconds(), perKey, 1},
		token: token,
		sets:  sets,
	}, nil
}

// globalScript takes the service's part of a slot (take_slot). KEYS: the
// service's set. ARGV: token, lease, the service's cap.
var globalScript = redis.NewScript(SlotLua + `
return take_slot(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), 2)
`)

// Finish takes the service's part of the slot of claim c, once a script
// answered n for the account's part: nothing when n is not 0 (the account
// is at its cap: that refusal), else one of the service's slots in a
// second call. When the service is full, or the call fails, the
// account's part is given back (in the background, as a Release) and the
// refusal or error returned. An allowed slot's Release frees both parts,
// renewed until then as Acquire's.
func (l *Redis) Finish(ctx context.Context, c SlotClaim, n int64) (Release, Decision, error) {
	if n != 0 {
		return nil, SlotDecision(n), nil
	}
	n, err := globalScript.Run(ctx, l.rdb, c.sets[1:], c.token, l.lease.Milliseconds(), l.global).Int64()
	if err != nil || n != 0 {
		l.release(c.token, c.sets[:1], func() {})
		if err != nil {
			return nil, Decision{}, fmt.Errorf("limit: the service's heavy slots: %w", err)
		}
		return nil, SlotDecision(n), nil
	}
	stopRenewing := lease.Keep(l.lease/3, func(ctx context.Context) {
		for _, set := range c.sets { // a missed renewal only shortens the lease
			_ = renewScript.Run(ctx, l.rdb, []string{set}, c.token, l.lease.Milliseconds()).Err()
		}
	})
	var once sync.Once
	return func() { once.Do(func() { l.release(c.token, c.sets, stopRenewing) }) }, Decision{Allowed: true}, nil
}

// release frees token's leases in sets in the background, after
// stopRenewing: the request that held it need not wait a round trip to
// answer. Flush and the next Claim or Acquire wait for it.
func (l *Redis) release(token string, sets []string, stopRenewing func()) {
	released := l.releasing.add()
	go func() {
		defer released()
		stopRenewing()
		rctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		pipe := l.rdb.Pipeline() // the sets are in two slots: no MULTI
		for _, set := range sets {
			pipe.ZRem(rctx, set, token)
		}
		_, _ = pipe.Exec(rctx) // if Redis is away the lease expires by itself
	}()
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

// Slot is the answer to a heavy slot asked for along with other work (a
// scale request's key check and rate token). Asked says whether the slot
// was tried (it is not when the other work refused the request first);
// then Decision is its answer and, when allowed, Release gives it back.
type Slot struct {
	Asked    bool
	Decision Decision
	Release  Release
}
