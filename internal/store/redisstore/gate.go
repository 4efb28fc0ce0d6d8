package redisstore

import (
	"context"
	"crypto/subtle"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/limit"
)

// gateScript checks an API key and, when it still belongs to the
// principal the caller expects (account, key kind, plan) and that account
// is active, takes one request token of its rate bucket: the key check and
// the rate of an authenticated request in one round trip.
//
// KEYS: apikey:<sha256>, acct:<expected id>, the expected principal's rate
// bucket (limit.RateKey). ARGV: expected id, expected kind, expected plan,
// then limit.Rate.GCRAArgs (burst, rate, period; rate 0: no limit).
// Returns false for an unknown key; else {account, kind, hash, name, plan,
// active, created_at, taken (1 when the token was taken), allowed, retry
// after}. No token is taken when the record is not the expected one (the
// account id, kind or plan differ) or the account is lapsed: the caller
// knows what to do then (take the right principal's token, or refuse).
var gateScript = redis.NewScript(limit.GCRALua + `
local k = redis.call('HMGET', KEYS[1], 'account', 'kind', 'hash')
if not k[1] then return false end
if k[1] ~= ARGV[1] then
  return {k[1], k[2], k[3], '', '', '', '', 0, 0, '-1', 'other'}
end
local a = redis.call('HMGET', KEYS[2], 'name', 'plan', 'active', 'created_at')
if not a[1] then return false end
local out = {k[1], k[2], k[3], a[1], a[2], a[3], a[4], 0, 0, '-1', ''}
if k[2] ~= ARGV[2] or a[2] ~= ARGV[3] or a[3] ~= '1' then return out end
out[8] = 1
if tonumber(ARGV[5]) <= 0 then
  out[9] = 1
  return out
end
local g = gcra(KEYS[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]))
out[9], out[10] = g[1], g[2]
return out
`)

// AuthenticateAndAllow is Authenticate and, when the key belongs to the
// expected principal (the same account, key kind and plan) and its
// account is active, also limit.Redis's Allow of one token at rate r from
// the rate bucket of bucket (the limiter's key of that principal), in one
// Redis round trip (gateScript). taken says whether the token was taken;
// d is then the rate's answer. When the key is another principal's, p is
// the right one and no token is taken (the caller takes the right
// principal's). Unknown keys are errs.Unauthorised, as Authenticate's.
func (s *Store) AuthenticateAndAllow(ctx context.Context, key string, expect account.Principal, bucket string, r limit.Rate) (p account.Principal, taken bool, d limit.Decision, err error) {
	h := account.HashKey(key)
	keys := []string{s.key("apikey", h), s.key("acct", expect.Account.ID), limit.RateKey(strings.TrimSuffix(s.ns, ":"), bucket)}
	args := append([]any{expect.Account.ID, expect.Kind.String(), expect.Account.Plan}, r.GCRAArgs()...)
	v, err := gateScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err == redis.Nil {
		return p, false, d, account.ErrUnknownKey()
	}
	if err != nil {
		return p, false, d, s.fail("authenticate", err)
	}
	f := make([]string, 7)
	for i := range f {
		f[i], _ = v[i].(string)
	}
	if len(v) != 11 || subtle.ConstantTimeCompare([]byte(f[2]), []byte(h)) != 1 {
		return p, false, d, account.ErrUnknownKey()
	}
	if other, _ := v[10].(string); other != "" { // the key is another account's
		p, err = s.Authenticate(ctx, key)
		return p, false, d, err
	}
	p = account.Principal{
		Account: account.Account{ID: f[0], Name: f[3], Plan: f[4], Active: f[5] == "1", CreatedAt: f[6]},
		Kind:    account.ParseKind(f[1]),
	}
	if n, _ := v[7].(int64); n != 1 {
		return p, false, d, nil
	}
	if d, err = limit.ParseGCRA(v[8:10]); err != nil {
		return account.Principal{}, false, d, s.fail("authenticate", err)
	}
	return p, true, d, nil
}
