package redisstore

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/lease"
)

// A deleted watch's remains, until finishDelete has removed them in
// bounded chunks (deleteScript writes them in the delete's first step):
//
//	trash                zset: deleted watch ids whose remains are not yet
//	                     removed, score the deleter's lease (ms); the
//	                     sweep (Reconcile) finishes one whose lease ran out
//	trash:<id>:acct      string: the account it belonged to
//	trash:<id>:keys      string: its match keys (w:<id>:keys), for the
//	trash:<id>:ixabn     reverse index, with its ixabn field
//	trash:<id>:co        set: its companies not yet uncounted from the
//	                     account's union (acct:<a>:companies)
//	trash:<id>:dr        hash: its delivery records not yet taken out of
//	                     the delivery gauges (dstat, ddue)
//
// Every step is idempotent, so a delete interrupted anywhere (its process
// killed, Redis lost) is finished by the sweep exactly as by the deleter.

// trashWork bounds the work of one chunk script: membership checks of
// companies against the account's other watches, or records uncounted.
// A chunk of this size runs for a few milliseconds; the slow-log test of
// TestMillionCompanyWatch checks none reaches 50 ms.
const trashWork = 5_000

// trashRecords is about how many delivery records of a deleted watch one
// dropRecordsScript call takes out of the gauges (the HSCAN count).
const trashRecords = 1000

// uncountScript takes companies ARGV[2..] out of a deleted watch's trash
// set and removes from the account's union those no remaining watch of the
// account holds. Concurrent creates are exact: a create adds its companies
// to the union and its set under the account's watches in one script, so
// a company it shares is seen held. The account's watches were read
// before, their w:<w>:co passed: the script returns -1 (read again) when
// the account's watches are no longer those. KEYS: trash:<id>:co,
// acct:<a>:watches, acct:<a>:companies, then w:<w>:co of each watch.
// ARGV: the watch ids comma-joined, companies.
var uncountScript = redis.NewScript(`
if table.concat(redis.call('ZRANGE', KEYS[2], 0, -1), ',') ~= ARGV[1] then return -1 end
local m = {unpack(ARGV, 2)}
local held = {}
for j = 4, #KEYS do
  local r = redis.call('SMISMEMBER', KEYS[j], unpack(m))
  for i = 1, #m do if r[i] == 1 then held[i] = true end end
end
local gone = {}
for i = 1, #m do if not held[i] then gone[#gone + 1] = m[i] end end
if #gone > 0 then redis.call('SREM', KEYS[3], unpack(gone)) end
redis.call('SREM', KEYS[1], unpack(m))
return #m
`)

// dropRecordsScript takes a deleted watch's delivery records ARGV[2..] out
// of its trash hash and out of the delivery gauges. KEYS: trash:<id>:dr,
// dstat, ddue. ARGV: watch id, delivery ids.
var dropRecordsScript = redis.NewScript(`
for i = 2, #ARGV do
  local raw = redis.call('HGET', KEYS[1], ARGV[i])
  if raw then
    local r = cjson.decode(raw)
    redis.call('HINCRBY', KEYS[2], r.status, -1)
    if r.status == 'pending' then
      if (r.attempts or 0) > 0 then redis.call('HINCRBY', KEYS[2], 'retry', -1) end
      redis.call('ZREM', KEYS[3], ARGV[1] .. '|' .. ARGV[i] .. '|' .. string.format('%d', r.notice_seq))
    end
    redis.call('HDEL', KEYS[1], ARGV[i])
  end
end
return 1
`)

// finishDelete removes what a deleted watch left in trash:<id>:* in
// bounded chunks: its reverse-index entries, its companies from the
// account's count, its delivery records from the gauges; then the trash
// keys and the trash entry. It may run again, or after a crash anywhere.
func (s *Store) finishDelete(ctx context.Context, id string) error {
	t := func(part string) string { return s.key(trashKey, id, part) }
	v, err := s.rdb.MGet(ctx, t("keys"), t("ixabn"), t("acct")).Result()
	if err != nil {
		return s.fail("delete watch", err)
	}
	if err := s.indexKeys(ctx, id, nil, storedIndexKeys(str(v[0]), v[1])); err != nil {
		return err
	}
	if acc := str(v[2]); acc != "" {
		if err := s.uncount(ctx, t("co"), acc); err != nil {
			return err
		}
	}
	for cursor := uint64(0); ; {
		kv, next, err := s.rdb.HScan(ctx, t("dr"), cursor, "*", trashRecords).Result()
		if err != nil {
			return s.fail("delete watch", err)
		}
		if len(kv) > 0 {
			args := make([]any, 0, len(kv)/2+1)
			args = append(args, id)
			for i := 0; i < len(kv); i += 2 {
				args = append(args, kv[i])
			}
			if err := dropRecordsScript.Run(ctx, s.rdb, []string{t("dr"), s.key(dstatKey), s.key(ddueKey)}, args...).Err(); err != nil {
				return s.fail("delete watch", err)
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	p := s.rdb.TxPipeline()
	p.Unlink(ctx, t("keys"), t("ixabn"), t("co"), t("dr"), t("acct"))
	p.ZRem(ctx, s.key(trashKey), id)
	_, err = p.Exec(ctx)
	return s.fail("delete watch", err)
}

// uncount takes the companies of a deleted watch (its trash set co) out
// of account acc's union in chunks read with SSCAN (SPOP would probe an
// ever sparser table as the set drains): at most 2,000 a script, fewer
// when the account has many watches, each checked against every one.
func (s *Store) uncount(ctx context.Context, co, acc string) error {
	keys := []string{co, s.key(acctKey, acc, "watches"), s.key(acctKey, acc, "companies")}
	for {
		for cursor := uint64(0); ; {
			members, next, err := s.rdb.SScan(ctx, co, cursor, "*", 2000).Result()
			if err != nil {
				return s.fail("delete watch", err)
			}
			for len(members) > 0 {
				ws, err := s.rdb.ZRange(ctx, keys[1], 0, -1).Result()
				if err != nil {
					return s.fail("delete watch", err)
				}
				n := min(len(members), 2000, max(50, trashWork/(len(ws)+1)))
				wkeys := keys
				for _, w := range ws {
					wkeys = append(wkeys, s.key(watchKey, w, "co"))
				}
				args := make([]any, 0, n+1)
				args = append(args, joinList(ws))
				for _, m := range members[:n] {
					args = append(args, m)
				}
				done, err := uncountScript.Run(ctx, s.rdb, wkeys, args...).Int()
				if err != nil {
					return s.fail("delete watch", err)
				}
				if done >= 0 { // else the account's watches changed: read them again
					members = members[n:]
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
		left, err := s.rdb.SCard(ctx, co).Result()
		if err != nil || left == 0 {
			return s.fail("delete watch", err)
		}
	}
}

// renewTrashLease keeps the delete's trash entry ahead of the clock while
// finishDelete runs, so the sweep leaves it to its deleter; it returns the
// function that stops renewing.
func (s *Store) renewTrashLease(id string) (stop func()) {
	return lease.Keep(s.leaseRenewal, func(ctx context.Context) {
		s.rdb.ZAddXX(ctx, s.key(trashKey), redis.Z{Score: float64(s.clock().Add(createLease).UnixMilli()), Member: id})
	})
}

// claimTrashScript takes the trash entry ARGV[3] for one sweep if its
// lease ran out by ARGV[1] (ms), renewing it to ARGV[2]. KEYS: trash.
var claimTrashScript = redis.NewScript(`
local sc = redis.call('ZSCORE', KEYS[1], ARGV[3])
if not sc or tonumber(sc) > tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
return 1
`)

// sweepTrash finishes the deletes whose deleter stopped before removing
// the watch's remains (its lease in the trash zset ran out by now). The
// first sweep of a process also adopts remains an older version left
// without a trash entry (trash:<id>:keys alone), found by one SCAN. It
// returns how many deletes it finished.
func (s *Store) sweepTrash(ctx context.Context, now time.Time) (int, error) {
	if !s.trashScanned.Load() {
		if err := s.adoptOldTrash(ctx); err != nil {
			return 0, err
		}
		s.trashScanned.Store(true)
	}
	return s.finishStalledDeletes(ctx, now)
}

// finishStalledDeletes finishes the deletes in the trash zset whose lease
// ran out by now (their deleter stopped), and returns how many.
func (s *Store) finishStalledDeletes(ctx context.Context, now time.Time) (int, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.key(trashKey), &redis.ZRangeBy{Min: "-inf", Max: itoa(now.UnixMilli()), Count: 100}).Result()
	if err != nil {
		return 0, s.fail("read the unfinished watch deletes", err)
	}
	done := 0
	for _, id := range ids {
		ok, err := claimTrashScript.Run(ctx, s.rdb, []string{s.key(trashKey)}, now.UnixMilli(), now.Add(createLease).UnixMilli(), id).Int()
		if err != nil {
			return done, s.fail("finish a watch delete", err)
		}
		if ok == 0 {
			continue // renewed or finished since the read
		}
		stop := s.renewTrashLease(id)
		err = s.finishDelete(ctx, id)
		stop()
		if err != nil {
			return done, err
		}
		done++
	}
	return done, nil
}

// adoptOldTrash puts in the trash zset (due at once) every deleted watch
// whose trash:<id>:keys a version before the zset left behind.
func (s *Store) adoptOldTrash(ctx context.Context) error {
	prefix, suffix := s.key(trashKey)+":", ":keys"
	err := scanKeys(ctx, s.rdb, prefix+"*"+suffix, 1000, func(keys []string) error {
		for _, k := range keys {
			id := strings.TrimSuffix(strings.TrimPrefix(k, prefix), suffix)
			if err := s.rdb.ZAddNX(ctx, s.key(trashKey), redis.Z{Score: 0, Member: id}).Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.fail("look for unfinished watch deletes", err)
	}
	return nil
}
