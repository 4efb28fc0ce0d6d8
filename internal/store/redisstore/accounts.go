package redisstore

import (
	"cmp"
	"context"
	"crypto/subtle"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

var _ store.Accounts = (*Store)(nil)

// Authenticate returns the principal owning key, or errs.Unauthorised. API
// keys are stored only as hex SHA-256 (account.HashKey), compared in
// constant time; a lapsed subscription shows as Principal.Account.Active
// false. The key's record and its account are two reads (the record names
// the account): a rotation between them answers as if the request came
// first.
func (s *Store) Authenticate(ctx context.Context, key string) (account.Principal, error) {
	var p account.Principal
	h := account.HashKey(key)
	k, err := s.rdb.HMGet(ctx, s.key(apikeyKey, h), "account", "kind", "hash").Result()
	if err == nil && (k[0] == nil || subtle.ConstantTimeCompare([]byte(str(k[2])), []byte(h)) != 1) {
		return p, account.ErrUnknownKey()
	}
	if err != nil {
		return p, s.fail("authenticate", err)
	}
	a, err := s.rdb.HMGet(ctx, s.key(acctKey, str(k[0])), "name", "plan", "active", "created_at").Result()
	if err == nil && a[0] == nil {
		return p, account.ErrUnknownKey()
	}
	if err != nil {
		return p, s.fail("authenticate", err)
	}
	p.Account = account.Account{ID: str(k[0]), Name: str(a[0]), Plan: str(a[1]), Active: str(a[2]) == "1", CreatedAt: str(a[3])}
	p.Kind = account.ParseKind(str(k[1]))
	return p, nil
}

// CreateAccount creates an active account on a plan and returns its keys,
// which are stored only as hashes.
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
	ah, rh := account.HashKey(c.AccountKey), account.HashKey(c.ReadKey)
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.key(acctKey, c.AccountID), "name", name, "plan", plan, "active", "1", "created_at", notice.Timestamp(s.clock()),
			"keys", ah+","+rh)
		p.ZAdd(ctx, s.key(acctsKey), redis.Z{Score: float64(seq), Member: c.AccountID})
		p.HSet(ctx, s.key(apikeyKey, ah), "account", c.AccountID, "kind", account.AccountKey.String(), "hash", ah)
		p.HSet(ctx, s.key(apikeyKey, rh), "account", c.AccountID, "kind", account.ReadKey.String(), "hash", rh)
		return nil
	})
	if err != nil {
		return account.Created{}, s.fail("create account", err)
	}
	return c, s.replicated(ctx, "account create")
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
			cmds[i] = p.HMGet(ctx, s.key(acctKey, id), "name", "plan", "active", "created_at")
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

// setSubscriptionScript sets an account's active flag and keeps the set
// of lapsed accounts (a gauge) in step. KEYS: acct:<id>, lapsed. ARGV:
// 1 or 0, account id.
var setSubscriptionScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'active', ARGV[1])
if ARGV[1] == '1' then redis.call('SREM', KEYS[2], ARGV[2]) else redis.call('SADD', KEYS[2], ARGV[2]) end
return 1
`)

// SetSubscription activates or lapses an account's subscription.
func (s *Store) SetSubscription(ctx context.Context, accountID string, active bool) error {
	n, err := setSubscriptionScript.Run(ctx, s.rdb, []string{s.key(acctKey, accountID), s.key(lapsedKey)}, boolArg(active), accountID).Int()
	if err != nil || n == 0 {
		return cmp.Or(s.fail("set subscription", err), account.ErrNoAccount(accountID))
	}
	return s.replicated(ctx, "subscription change")
}

// rotateScript swaps an account's key records in one step, if its keys
// are still those read before (else -1: read again). KEYS: acct:<id>,
// apikey:<new account key>, apikey:<new read key>, then apikey:<h> of
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
// soon as this returns.
func (s *Store) RotateKeys(ctx context.Context, accountID string) (account.Created, error) {
	c := newKeys(accountID)
	acct, what := s.key(acctKey, accountID), "rotate keys of "+accountID
	ah, rh := account.HashKey(c.AccountKey), account.HashKey(c.ReadKey)
	n, err := s.casRun(ctx, what, rotateScript, func() ([]string, []any, error) {
		old, err := s.rdb.HGet(ctx, acct, "keys").Result()
		if err != nil && err != redis.Nil {
			return nil, nil, s.fail(what, err)
		}
		keys := []string{acct, s.key(apikeyKey, ah), s.key(apikeyKey, rh)}
		for _, h := range splitList(old) {
			keys = append(keys, s.key(apikeyKey, h))
		}
		return keys, []any{accountID, ah, rh, old}, nil
	})
	if err != nil || n == 0 {
		return account.Created{}, cmp.Or(err, account.ErrNoAccount(accountID))
	}
	return c, s.replicated(ctx, "key rotation")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
