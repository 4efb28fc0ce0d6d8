package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The queues workers and sweepers read often are per account, written in
// the account's scripts: the delivery outbox dq, the attempt leases
// dlease, the mail queue mq, the create leases wpend and the delete leases
// trash. The shared zset wake:<queue> names the accounts that may have
// work in one, by when to look: only a hint, written beside the account's
// script (a future-dated one before it, a due one after it), and re-read
// against the account's queue, which is the truth (docs/redis.md, "Work
// queues").
const (
	wakeOutbox = "dq"
	wakeLeases = "dlease"
	wakeMail   = "mq"
	wakeCreate = "wpend"
	wakeTrash  = "trash"
)

// wakeQueues are the queues with a wake set, each its account key family.
var wakeQueues = []string{wakeOutbox, wakeLeases, wakeMail, wakeCreate, wakeTrash}

// wakeClaim hides an account a reader took from a wake set: a reader
// that died leaves it due again this much later.
const wakeClaim = 10 * time.Second

// wakeScript notes account ARGV[2] at ARGV[1] (ms). A note as early or
// earlier stays, moved 1 ms earlier still: it may be a reader's claim (a
// lease's note is due no sooner than a claim ends), and rewakeScript
// drops only a note still at its claim's score, so the writer's note must
// change it. KEYS: wake:<queue>.
var wakeScript = redis.NewScript(`
local at, cur = tonumber(ARGV[1]), tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]))
if cur and cur <= at then at = cur - 1 end
redis.call('ZADD', KEYS[1], at, ARGV[2])
return 1
`)

// wake notes that account acct may have work in queue q from at on; an
// earlier note stays (wakeScript).
func (s *Store) wake(ctx context.Context, q, acct string, at time.Time) error {
	return s.fail("note an account's queued work", wakeScript.Run(ctx, s.rdb, []string{s.key(wakeKey, q)}, at.UnixMilli(), acct).Err())
}

// rewakeScript notes account ARGV[1] again after a reader went through
// its queue: at ARGV[3] (the queue's earliest entry), or, when the queue
// was empty (ARGV[3] ""), not at all. A note a writer changed since the
// reader's claim (its score is no longer ARGV[2]: wakeScript always
// changes it) is only lowered, never dropped. KEYS: wake:<queue>.
var rewakeScript = redis.NewScript(`
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
local claimed = cur and tonumber(cur) == tonumber(ARGV[2])
if ARGV[3] == '' then
  if claimed then redis.call('ZREM', KEYS[1], ARGV[1]) end
elseif claimed then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
else
  redis.call('ZADD', KEYS[1], 'LT', ARGV[3], ARGV[1])
end
return 1
`)

// eachWoken claims the accounts noted in wake:<q> due by now (up to
// limit), runs fn on each, then notes each again at its queue's earliest
// entry or drops its note (rewakeScript). An error stops the round: the
// account it came from stays claimed until wakeClaim, then is due again,
// and the accounts not reached are given back at once (unclaim), so one
// account whose master does not answer does not hide the others' work.
func (s *Store) eachWoken(ctx context.Context, q string, now time.Time, limit int, fn func(acct string) error) error {
	v, err := claimScript.Run(ctx, s.rdb, []string{s.key(wakeKey, q)}, now.UnixMilli(), now.Add(wakeClaim).UnixMilli(), limit).StringSlice()
	if err != nil {
		return s.fail("read the accounts with queued work", err)
	}
	claimed := strconv.FormatInt(now.Add(wakeClaim).UnixMilli(), 10)
	for i := 0; i+1 < len(v); i += 2 {
		err := fn(v[i])
		if err == nil {
			err = s.rewake(ctx, q, v[i], claimed)
		}
		if err != nil {
			s.unclaim(context.WithoutCancel(ctx), q, v[i+2:])
			return err
		}
	}
	return nil
}

// unclaim gives claimed accounts (claimScript's account, score pairs) back
// to wake:<q> at the scores they had (ZADD LT: a note written since, which
// is earlier, stays). On an error they stay claimed until wakeClaim, as a
// reader that died leaves them.
func (s *Store) unclaim(ctx context.Context, q string, pairs []string) {
	var zs []redis.Z
	for i := 0; i+1 < len(pairs); i += 2 {
		if score, err := strconv.ParseFloat(pairs[i+1], 64); err == nil {
			zs = append(zs, redis.Z{Score: score, Member: pairs[i]})
		}
	}
	if len(zs) > 0 {
		_ = s.rdb.ZAddLT(ctx, s.key(wakeKey, q), zs...).Err() // best effort: see above
	}
}

// rewake notes acct in wake:<q> at its queue's earliest entry, or drops
// the note claimed (rewakeScript).
func (s *Store) rewake(ctx context.Context, q, acct, claimed string) error {
	first, err := s.rdb.ZRangeWithScores(ctx, s.akey(acct, q), 0, 0).Result()
	if err != nil {
		return s.fail("read an account's queued work", err)
	}
	next := ""
	if len(first) > 0 {
		next = strconv.FormatInt(int64(first[0].Score), 10)
	}
	return s.fail("note an account's queued work", rewakeScript.Run(ctx, s.rdb, []string{s.key(wakeKey, q)}, acct, claimed, next).Err())
}

// accounts returns every account id (accts).
func (s *Store) accounts(ctx context.Context) ([]string, error) {
	ids, err := s.rdb.ZRange(ctx, s.key(acctsKey), 0, -1).Result()
	return ids, s.fail("list accounts", err)
}

// rewakeAll notes every account at the earliest entry of each of its
// queues: the repair of a writer that stopped between its account script
// and its note (Reconcile, every 30 s; docs/redis.md "Work queues").
// O(accounts), in pipelines of 1,000 accounts.
func (s *Store) rewakeAll(ctx context.Context) error {
	accts, err := s.accounts(ctx)
	if err != nil {
		return err
	}
	for lo := 0; lo < len(accts); lo += 1000 {
		part := accts[lo:min(lo+1000, len(accts))]
		firsts := make([]*redis.ZSliceCmd, 0, len(part)*len(wakeQueues))
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, a := range part {
				for _, q := range wakeQueues {
					firsts = append(firsts, p.ZRangeWithScores(ctx, s.akey(a, q), 0, 0))
				}
			}
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return s.fail("read the accounts' queued work", err)
		}
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, f := range firsts {
				if z := f.Val(); len(z) > 0 {
					p.ZAddLT(ctx, s.key(wakeKey, wakeQueues[i%len(wakeQueues)]), redis.Z{Score: z[0].Score, Member: part[i/len(wakeQueues)]})
				}
			}
			return nil
		})
		if err != nil {
			return s.fail("note the accounts' queued work", err)
		}
	}
	return nil
}

// accountOf returns the account of a watch from the directory wacct
// (written before the watch, never changed): "" when it has none (the
// watch never existed, or its delete finished).
func (s *Store) accountOf(ctx context.Context, watchID string) (string, error) {
	m, err := s.accountsOf(ctx, []string{watchID})
	return m[watchID], err
}

// accountsOf is accountOf of several watches, in one round trip for those
// not cached (a watch's account never changes).
func (s *Store) accountsOf(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	var need []string
	for _, id := range ids {
		if a, ok := s.owners.Load(id); ok {
			out[id] = a.(string)
		} else {
			need = append(need, id)
		}
	}
	if len(need) == 0 {
		return out, nil
	}
	v, err := s.rdb.HMGet(ctx, s.key(wacctKey), need...).Result()
	if err != nil {
		return out, s.fail("read the watches' accounts", err)
	}
	for i, id := range need {
		if a := str(v[i]); a != "" {
			out[id] = a
			s.owners.Store(id, a)
		}
	}
	return out, nil
}

// ownedWatch is a watch id with its account.
type ownedWatch struct{ acct, id string }

// allWatches lists every watch with its account from the directory wacct
// (HSCAN): the few full scans (SealSecrets, RefreshWatchKeys,
// DigestTargets) read it rather than keep a set of every watch. It may
// name a watch being created or whose delete has not finished: callers
// read the watch and skip one that is gone.
func (s *Store) allWatches(ctx context.Context) ([]ownedWatch, error) {
	var out []ownedWatch
	err := scanPages(func(c uint64) ([]string, uint64, error) {
		return s.rdb.HScan(ctx, s.key(wacctKey), c, "*", 1000).Result()
	}, func(kv []string) error {
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, ownedWatch{acct: kv[i+1], id: kv[i]})
		}
		return nil
	})
	return out, s.fail("list watches", err)
}
