package redisstore

import (
	"cmp"
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

var _ store.Accounts = (*Store)(nil)

// An account's record ({ns:a:<id>}:acct) and its key records
// ({ns:a:<id>}:apikey:<sha256>: account, kind, hash) are under the
// account's hash tag, in its Redis Cluster slot: they are the truth a
// request is admitted by, in one script call there (gate.go). A key
// names its account only through the directory {ns}:apikey:<sha256>
// (account, kind, hash as older versions wrote the key record), in the
// namespace's slot with the account list {ns}:accts, the counter
// {ns}:acct:seq and the lapsed gauge {ns}:acct:lapsed. A change of both
// slots cannot be one script, so each is ordered so that a crash between
// its steps admits no revoked key and loses no account; nothing repairs
// what it leaves:
//
//   - CreateAccount writes the account side (record and both key
//     records, one MULTI), then the directory entries and the list entry
//     (one MULTI). A crash between leaves an account no key reaches and
//     no list shows, three small hashes nothing reads; the create was not
//     acknowledged (its keys never shown), and the caller creates it again.
//   - RotateKeys writes the new keys' directory entries, then swaps the
//     key records in the account's slot (one script, the commit: the old
//     keys stop working, the new ones start), then deletes the old keys'
//     directory entries. A crash after the first step leaves directory
//     entries of keys nobody was given; after the second, the old keys'
//     entries: each leads to an account with no such key record, so
//     Authenticate answers 401 as for any unknown key. They are inert
//     (about 100 bytes each, only after a crash) and stay. A rotation whose
//     caller saw no answer has rotated or not; rotating again gives keys.
//   - SetSubscription sets the account's active flag and raises its
//     subscription version (sub_v) in the account's slot, the truth, then
//     applies (account, version, state) to the lapsed gauge
//     (applyLapsedScript), which keeps the version it shows per account
//     ({ns}:acct:lapsed:v) and takes only a version at least as new: changes
//     applied in any order, and RebuildGauges's reading, end at the flag's
//     last state. A crash between the two steps leaves the gauge one account
//     behind the flag (the caller got an error, and repeating the change,
//     harmless, applies it) until the account's next change or rebuild.

// Authenticate returns the principal owning key, or errs.Unauthorised. API
// keys are stored only as hex SHA-256 (account.HashKey), compared in
// constant time; a lapsed subscription shows as Principal.Account.Active
// false. The directory names the key's account, then the key record and
// the account's record are read in one script call in the account's slot
// (gateScript, taking nothing): a directory entry without the account's
// key record (a key rotated away) is an unknown key.
func (s *Store) Authenticate(ctx context.Context, key string) (account.Principal, error) {
	h := account.HashKey(key)
	id, err := s.rdb.HGet(ctx, s.key(apikeyKey, h), "account").Result()
	if err == redis.Nil {
		return account.Principal{}, account.ErrUnknownKey()
	}
	if err != nil {
		return account.Principal{}, s.fail("authenticate", err)
	}
	v, err := s.gateRun(ctx, h, account.Principal{Account: account.Account{ID: id}}, "read", limit.Rate{}, nil)
	if err == nil && v == nil {
		err = account.ErrUnknownKey()
	}
	if err != nil {
		return account.Principal{}, err
	}
	p, _, _, _, err := gateAnswer(v, h)
	return p, err
}

// CreateAccount creates an active account on a plan and returns its keys,
// which are stored only as hashes: the account's side, then the
// directory and the list (see above).
func (s *Store) CreateAccount(ctx context.Context, name, plan string) (account.Created, error) {
	name, err := account.CheckNew(name, plan, s.plans)
	if err != nil {
		return account.Created{}, err
	}
	seq, err := s.rdb.Incr(ctx, s.key(acctKey, "seq")).Result()
	if err != nil {
		return account.Created{}, s.fail("create account", err)
	}
	c := newKeys(account.NewID("acc_"))
	id, ah, rh := c.AccountID, account.HashKey(c.AccountKey), account.HashKey(c.ReadKey)
	kinds := map[string]string{ah: account.AccountKey.String(), rh: account.ReadKey.String()}
	if _, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.akey(id, acctKey), "name", name, "plan", plan, "active", "1", "created_at", notice.Timestamp(s.clock()),
			"keys", ah+","+rh)
		for h, kind := range kinds {
			p.HSet(ctx, s.akey(id, apikeyKey, h), "account", id, "kind", kind, "hash", h)
		}
		return nil
	}); err == nil {
		_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for h, kind := range kinds {
				p.HSet(ctx, s.key(apikeyKey, h), "account", id, "kind", kind, "hash", h)
			}
			p.ZAdd(ctx, s.key(acctsKey), redis.Z{Score: float64(seq), Member: id})
			return nil
		})
	}
	if err != nil {
		return account.Created{}, s.fail("create account", err)
	}
	return c, s.replicated(ctx, "account create", s.tags(id)...)
}

func newKeys(accountID string) account.Created {
	return account.Created{AccountID: accountID,
		AccountKey: account.NewKey(account.AccountKeyPrefix), ReadKey: account.NewKey(account.ReadKeyPrefix)}
}

// ListAccounts returns every account, oldest first.
func (s *Store) ListAccounts(ctx context.Context) ([]account.Account, error) {
	ids, err := s.rdb.ZRange(ctx, s.key(acctsKey), 0, -1).Result()
	if err != nil {
		return nil, s.fail("list accounts", err)
	}
	cmds := make([]*redis.SliceCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HMGet(ctx, s.akey(id, acctKey), "name", "plan", "active", "created_at")
		}
		return nil
	}); err != nil {
		return nil, s.fail("list accounts", err)
	}
	out := []account.Account{}
	for i, c := range cmds {
		if v := c.Val(); v[0] != nil {
			out = append(out, account.Account{ID: ids[i], Name: str(v[0]), Plan: str(v[1]), Active: str(v[2]) == "1", CreatedAt: str(v[3])})
		}
	}
	return out, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// setSubscriptionScript sets an account's active flag and raises its
// subscription version. KEYS: the account's record. ARGV: 1 or 0. Returns
// the new version, 0 when there is no such account.
var setSubscriptionScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'active', ARGV[1])
return redis.call('HINCRBY', KEYS[1], 'sub_v', 1)
`)

// applyLapsedScript shows accounts' subscription states in the lapsed
// gauge, each only when its version is at least the one the gauge shows
// (so states applied out of order end at the newest). KEYS: acct:lapsed,
// acct:lapsed:v. ARGV: account id, version, active (1 or 0), repeated.
var applyLapsedScript = redis.NewScript(`
for i = 1, #ARGV, 3 do
  local id, v = ARGV[i], tonumber(ARGV[i + 1])
  if v >= tonumber(redis.call('HGET', KEYS[2], id) or '-1') then
    redis.call('HSET', KEYS[2], id, v)
    if ARGV[i + 2] == '0' then redis.call('SADD', KEYS[1], id) else redis.call('SREM', KEYS[1], id) end
  end
end
return 0
`)

// applyLapsed runs applyLapsedScript with args.
func (s *Store) applyLapsed(ctx context.Context, args []any) error {
	return applyLapsedScript.Run(ctx, s.rdb, []string{s.key(lapsedKey), s.key(lapsedVerKey)}, args...).Err()
}

// SetSubscription activates or lapses an account's subscription: the flag
// in the account's slot, then the lapsed gauge (see above).
func (s *Store) SetSubscription(ctx context.Context, accountID string, active bool) error {
	v, err := setSubscriptionScript.Run(ctx, s.rdb, []string{s.akey(accountID, acctKey)}, boolArg(active)).Int64()
	if err == nil && v > 0 {
		err = s.applyLapsed(ctx, []any{accountID, v, boolArg(active)})
	}
	if err != nil || v == 0 {
		return cmp.Or(s.fail("set subscription", err), account.ErrNoAccount(accountID))
	}
	return s.replicated(ctx, "subscription change", s.tags(accountID)...)
}

// rotateScript swaps an account's key records in one step, if its keys
// are still those read before (else -1: read again). KEYS: the account's
// record, its key records of the new account key and read key, then of
// each old key. ARGV: account id, the two new hashes, the keys field read.
var rotateScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if (redis.call('HGET', KEYS[1], 'keys') or '') ~= ARGV[4] then return -1 end
for i = 4, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('HSET', KEYS[1], 'keys', ARGV[2] .. ',' .. ARGV[3])
redis.call('HSET', KEYS[2], 'account', ARGV[1], 'kind', 'account', 'hash', ARGV[2])
redis.call('HSET', KEYS[3], 'account', ARGV[1], 'kind', 'read', 'hash', ARGV[3])
return 1
`)

// RotateKeys replaces both keys of an account; the old ones stop working as
// soon as this returns. The new keys' directory entries, the swap in the
// account's slot, then the old keys' entries removed (see above).
func (s *Store) RotateKeys(ctx context.Context, accountID string) (account.Created, error) {
	c := newKeys(accountID)
	acct, what := s.akey(accountID, acctKey), "rotate keys of "+accountID
	ah, rh := account.HashKey(c.AccountKey), account.HashKey(c.ReadKey)
	dir := []string{s.key(apikeyKey, ah), s.key(apikeyKey, rh)}
	if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, dir[0], "account", accountID, "kind", account.AccountKey.String(), "hash", ah)
		p.HSet(ctx, dir[1], "account", accountID, "kind", account.ReadKey.String(), "hash", rh)
		return nil
	}); err != nil {
		return account.Created{}, s.fail(what, err)
	}
	var old []string
	n, err := s.casRun(ctx, what, rotateScript, func() ([]string, []any, error) {
		keys, err := s.rdb.HGet(ctx, acct, "keys").Result()
		if err != nil && err != redis.Nil {
			return nil, nil, s.fail(what, err)
		}
		old = splitList(keys)
		args := []string{acct, s.akey(accountID, apikeyKey, ah), s.akey(accountID, apikeyKey, rh)}
		for _, h := range old {
			args = append(args, s.akey(accountID, apikeyKey, h))
		}
		return args, []any{accountID, ah, rh, keys}, nil
	})
	if err == nil && n == 0 { // no such account: its new entries lead nowhere
		old, err = nil, account.ErrNoAccount(accountID)
		_ = s.rdb.Del(ctx, dir...).Err() // else inert, as after a crash
	}
	if err != nil {
		return account.Created{}, err
	}
	if len(old) > 0 {
		dir = dir[:0]
		for _, h := range old {
			dir = append(dir, s.key(apikeyKey, h))
		}
		if err := s.rdb.Del(ctx, dir...).Err(); err != nil {
			return account.Created{}, s.fail(what, err)
		}
	}
	return c, s.replicated(ctx, "key rotation", s.tags(accountID)...)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
