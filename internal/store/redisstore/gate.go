package redisstore

import (
	"context"
	"crypto/subtle"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/limit"
)

// gateScript checks an API key in the account the caller expects and,
// when it is that account's key of the expected kind, the account is on
// the expected plan and active, takes a token of its rate bucket and, when
// asked and the token is allowed, the account's part of a heavy slot: an
// authenticated request's key check, rate and slot in one round trip, in
// the account's Redis Cluster slot (every key is the account's,
// keyspace.Account). Otherwise it takes nothing: the caller knows what to
// do (ask the directory, take the right principal's token, or refuse).
// KEYS: the account's apikey:<sha256> and acct, its rate bucket
// (limit.RateKey)[, for a slot its heavy set, limit.SlotClaim.Keys].
// ARGV: expected id, kind, plan, limit.Rate.GCRAArgs (rate 0: no
// limit)[, for a slot limit.SlotClaim.Args]. Returns false when the
// account has no such key record; else {account, kind, hash, name, plan,
// active, created_at, taken (1: token taken), allowed, retry after, slot
// (take_slot's 0 taken, 1 the account full; -1 not tried)}.
var gateScript = redis.NewScript(limit.GCRALua + limit.SlotLua + `
local k = redis.call('HMGET', KEYS[1], 'account', 'kind', 'hash')
if k[1] ~= ARGV[1] then return false end
local a = redis.call('HMGET', KEYS[2], 'name', 'plan', 'active', 'created_at')
if not a[1] then return false end
local out = {k[1], k[2], k[3], a[1], a[2], a[3], a[4], 0, 0, '-1', -1}
if k[2] ~= ARGV[2] or a[2] ~= ARGV[3] or a[3] ~= '1' then return out end
out[8] = 1
if tonumber(ARGV[5]) <= 0 then
  out[9] = 1
else
  local g = gcra(KEYS[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]))
  out[9], out[10] = g[1], g[2]
end
if out[9] == 1 and KEYS[4] then
  out[11] = take_slot(KEYS[4], ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]))
end
return out
`)

// AuthenticateAndAllow is Authenticate and, when the key belongs to the
// expected principal (account, key kind and plan) and the account is
// active, limit.Redis's Allow of a token at rate r from the expected
// account's bucket (the key kind), in one round trip (gateScript). taken
// says whether the token was taken; d is then the rate's answer. When the
// key is not the expected account's (a wrong guess, a key rotated away)
// it is Authenticate's answer: the directory, then the key's account, and
// nothing taken. Unknown keys are errs.Unauthorised.
func (s *Store) AuthenticateAndAllow(ctx context.Context, key string, expect account.Principal, bucket string, r limit.Rate) (p account.Principal, taken bool, d limit.Decision, err error) {
	p, taken, d, _, err = s.gate(ctx, key, expect, bucket, r, nil)
	return p, taken, d, err
}

// SlotGate is AuthenticateAndAllow that, when the token is taken and
// allowed, also takes the expected account's part of a heavy slot from l
// (at most perKey at once for the account, 0 for no cap) in the same
// script call, then the service's in a second call (limit.Redis.Finish,
// which gives the account's part back when the service is full). l must
// be on this store's Redis and namespace. slot.Asked says whether the
// slot was tried; an allowed slot is l's (renewed and released as
// Acquire's).
func (s *Store) SlotGate(l *limit.Redis) func(ctx context.Context, key string, expect account.Principal, bucket string, r limit.Rate, perKey int) (account.Principal, bool, limit.Decision, limit.Slot, error) {
	return func(ctx context.Context, key string, expect account.Principal, bucket string, r limit.Rate, perKey int) (account.Principal, bool, limit.Decision, limit.Slot, error) {
		c, err := l.Claim(ctx, expect.Account.ID, perKey)
		if err != nil {
			return account.Principal{}, false, limit.Decision{}, limit.Slot{}, err
		}
		p, taken, d, n, err := s.gate(ctx, key, expect, bucket, r, &c)
		if n < 0 {
			return p, taken, d, limit.Slot{}, err
		}
		release, sd, serr := l.Finish(ctx, c, n)
		if err == nil && serr != nil {
			err = s.fail("take a heavy slot", serr)
		}
		if err != nil { // taken, but the rest of the answer is unreadable
			if release != nil {
				release()
			}
			return p, taken, d, limit.Slot{}, err
		}
		return p, taken, d, limit.Slot{Asked: true, Decision: sd, Release: release}, nil
	}
}

// gate runs gateScript in the expected account: the key check, the rate
// token of bucket at rate r and, when claim is not nil, the account's part
// of its heavy slot. n is take_slot's answer, -1 when the slot was not
// tried. A key the expected account has no record of is Authenticate's
// answer, nothing taken.
func (s *Store) gate(ctx context.Context, key string, expect account.Principal, bucket string, r limit.Rate, claim *limit.SlotClaim) (p account.Principal, taken bool, d limit.Decision, n int64, err error) {
	h := account.HashKey(key)
	v, err := s.gateRun(ctx, h, expect, bucket, r, claim)
	if err != nil {
		return p, false, d, -1, err
	}
	if v == nil { // a wrong guess, a key rotated away, or none
		p, err = s.Authenticate(ctx, key)
		return p, false, d, -1, err
	}
	return gateAnswer(v, h)
}

// gateRun runs gateScript for the key of hash h in the expected account;
// v is nil when that account has no record of the key.
func (s *Store) gateRun(ctx context.Context, h string, expect account.Principal, bucket string, r limit.Rate, claim *limit.SlotClaim) ([]any, error) {
	id := expect.Account.ID
	keys := []string{s.akey(id, apikeyKey, h), s.akey(id, acctKey), limit.RateKey(s.name, id, bucket)}
	args := append([]any{id, expect.Kind.String(), expect.Account.Plan}, r.GCRAArgs()...)
	if claim != nil {
		keys, args = append(keys, claim.Keys...), append(args, claim.Args...)
	}
	v, err := gateScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err == redis.Nil {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail("authenticate", err)
	}
	return v, nil
}

// gateAnswer reads what gateScript answered for the key of hash h.
func gateAnswer(v []any, h string) (p account.Principal, taken bool, d limit.Decision, n int64, err error) {
	f := make([]string, 7)
	for i := range min(len(f), len(v)) {
		f[i], _ = v[i].(string)
	}
	n = -1
	if len(v) == 11 {
		n, _ = v[10].(int64)
	}
	if len(v) != 11 || subtle.ConstantTimeCompare([]byte(f[2]), []byte(h)) != 1 {
		return p, false, d, n, account.ErrUnknownKey() // a slot taken is given back (SlotGate)
	}
	p = account.Principal{
		Account: account.Account{ID: f[0], Name: f[3], Plan: f[4], Active: f[5] == "1", CreatedAt: f[6]},
		Kind:    account.ParseKind(f[1]),
	}
	if t, _ := v[7].(int64); t != 1 {
		return p, false, d, n, nil
	}
	if d, err = limit.ParseGCRA(v[8:10]); err != nil {
		return account.Principal{}, false, d, n, fmt.Errorf("redisstore: authenticate: %w", err)
	}
	return p, true, d, n, nil
}
