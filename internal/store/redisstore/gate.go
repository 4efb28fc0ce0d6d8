package redisstore

import (
	"context"
	"crypto/subtle"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/limit"
)

// gateScript checks an API key and, when it still belongs to the principal
// the caller expects (account, key kind and plan) and that account is
// active, takes a token of its rate bucket and, when asked and the token is
// allowed, a heavy slot: an authenticated request's key check, rate and
// heavy slot in one round trip. Otherwise it takes nothing: the caller
// knows what to do (take the right principal's token and slot, or refuse).
// KEYS: apikey:<sha256>, acct:<expected id>, the expected principal's rate
// bucket (limit.RateKey)[, for a slot its limit.HeavyKeys]. ARGV: expected
// id, kind, plan, limit.Rate.GCRAArgs (rate 0: no limit)[, for a slot
// limit.SlotClaim.Args]. Returns false for an unknown key; else {account,
// kind, hash, name, plan, active, created_at, taken (1: token taken),
// allowed, retry after, other, slot (take_slot's 0 taken, 1 key full, 2 all
// full; -1 not tried)}.
var gateScript = redis.NewScript(limit.GCRALua + limit.SlotLua + `
local k = redis.call('HMGET', KEYS[1], 'account', 'kind', 'hash')
if not k[1] then return false end
if k[1] ~= ARGV[1] then return {k[1], k[2], k[3], '', '', '', '', 0, 0, '-1', 'other', -1} end
local a = redis.call('HMGET', KEYS[2], 'name', 'plan', 'active', 'created_at')
if not a[1] then return false end
local out = {k[1], k[2], k[3], a[1], a[2], a[3], a[4], 0, 0, '-1', '', -1}
if k[2] ~= ARGV[2] or a[2] ~= ARGV[3] or a[3] ~= '1' then return out end
out[8] = 1
if tonumber(ARGV[5]) <= 0 then
  out[9] = 1
else
  local g = gcra(KEYS[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]))
  out[9], out[10] = g[1], g[2]
end
if out[9] == 1 and KEYS[4] then
  out[12] = take_slot(KEYS[4], KEYS[5], ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]))
end
return out
`)

// AuthenticateAndAllow is Authenticate and, when the key belongs to the
// expected principal (account, key kind and plan) and the account is
// active, limit.Redis's Allow of a token at rate r from the bucket of
// bucket, in one round trip (gateScript). taken says whether the token was
// taken; d is then the rate's answer. When the key is another principal's,
// p is the right one and nothing is taken. Unknown keys are
// errs.Unauthorised.
func (s *Store) AuthenticateAndAllow(ctx context.Context, key string, expect account.Principal, bucket string, r limit.Rate) (p account.Principal, taken bool, d limit.Decision, err error) {
	p, taken, d, _, err = s.gate(ctx, key, expect, bucket, r, nil)
	return p, taken, d, err
}

// SlotGate is AuthenticateAndAllow that, when the token is taken and
// allowed, also takes a heavy slot of holder from l (at most perKey at once
// for holder, 0 for no cap, and one of the service's) in the same script
// call. l must be on this store's Redis. slot.Asked says whether the slot
// was tried; an allowed slot is l's (renewed and released as Acquire's).
func (s *Store) SlotGate(l *limit.Redis) func(ctx context.Context, key string, expect account.Principal, bucket string, r limit.Rate, holder string, perKey int) (account.Principal, bool, limit.Decision, limit.Slot, error) {
	return func(ctx context.Context, key string, expect account.Principal, bucket string, r limit.Rate, holder string, perKey int) (account.Principal, bool, limit.Decision, limit.Slot, error) {
		c, err := l.Claim(ctx, holder, perKey)
		if err != nil {
			return account.Principal{}, false, limit.Decision{}, limit.Slot{}, err
		}
		p, taken, d, n, err := s.gate(ctx, key, expect, bucket, r, &c)
		if n < 0 {
			return p, taken, d, limit.Slot{}, err
		}
		slot := limit.Slot{Asked: true, Decision: limit.SlotDecision(n)}
		if slot.Decision.Allowed {
			slot.Release = l.Adopt(c)
		}
		if err != nil && slot.Release != nil { // taken, but the rest of the answer is unreadable
			slot.Release()
			return p, taken, d, limit.Slot{}, err
		}
		return p, taken, d, slot, err
	}
}

// gate runs gateScript: the key check, the rate token of bucket at rate r
// and, when claim is not nil, its heavy slot. n is take_slot's answer, -1
// when the slot was not tried.
func (s *Store) gate(ctx context.Context, key string, expect account.Principal, bucket string, r limit.Rate, claim *limit.SlotClaim) (p account.Principal, taken bool, d limit.Decision, n int64, err error) {
	h := account.HashKey(key)
	keys := []string{s.key(apikeyKey, h), s.key(acctKey, expect.Account.ID), limit.RateKey(s.name, bucket)}
	args := append([]any{expect.Account.ID, expect.Kind.String(), expect.Account.Plan}, r.GCRAArgs()...)
	if claim != nil {
		keys, args = append(keys, claim.Keys...), append(args, claim.Args...)
	}
	v, err := gateScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err == redis.Nil {
		return p, false, d, -1, account.ErrUnknownKey()
	}
	if err != nil {
		return p, false, d, -1, s.fail("authenticate", err)
	}
	f := make([]string, 7)
	for i := range f {
		f[i], _ = v[i].(string)
	}
	n = -1
	if len(v) == 12 {
		n, _ = v[11].(int64)
	}
	if len(v) != 12 || subtle.ConstantTimeCompare([]byte(f[2]), []byte(h)) != 1 {
		return p, false, d, n, account.ErrUnknownKey() // a slot taken is given back (SlotGate)
	}
	if other, _ := v[10].(string); other != "" { // the key is another account's
		p, err = s.Authenticate(ctx, key)
		return p, false, d, -1, err
	}
	p = account.Principal{
		Account: account.Account{ID: f[0], Name: f[3], Plan: f[4], Active: f[5] == "1", CreatedAt: f[6]},
		Kind:    account.ParseKind(f[1]),
	}
	if t, _ := v[7].(int64); t != 1 {
		return p, false, d, n, nil
	}
	if d, err = limit.ParseGCRA(v[8:10]); err != nil {
		return account.Principal{}, false, d, n, s.fail("authenticate", err)
	}
	return p, true, d, n, nil
}
