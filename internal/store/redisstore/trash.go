package redisstore

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// trashWork bounds one uncountScript call's membership checks, and
// trashRecords (the HSCAN count) about how many records one
// dropRecordsScript call takes out: a few milliseconds each
// (TestMillionCompanyWatch checks the slow log for 50 ms).
const (
	trashWork    = 5_000
	trashRecords = 1000
)

// uncountScript takes companies ARGV[2..] out of a deleted watch's trash
// set and out of the account's union unless a remaining watch holds them
// (a create writes its set and the union in one script, so this is exact
// beside concurrent creates). The account's watches were read before (-1:
// changed). KEYS (the account's): trash:<id>:co, watches, companies, then
// w:<w>:co of each watch. ARGV: the watch ids comma-joined, companies.
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
// of its trash hash and the gauges. KEYS (the account's): trash:<id>:dr,
// dstat, ddue.
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

// finishDelete removes a deleted watch's remains (trash:<id>:*) in bounded
// chunks, renewing its trash lease meanwhile: its reverse-index entries
// and fo, its companies from the account's count, its records from the
// gauges, its directory entry, then the trash keys and entry. Every step
// is idempotent: the sweep finishes a delete stopped anywhere.
func (s *Store) finishDelete(ctx context.Context, acct, id string) error {
	defer s.renewLease(s.akey(acct, trashKey), id)()
	t := func(part string) string { return s.akey(acct, trashKey, id, part) }
	v, err := s.rdb.MGet(ctx, t("keys"), t("ixabn")).Result()
	if err != nil {
		return s.fail("delete watch", err)
	}
	if err := s.unindex(ctx, id, storedIndexKeys(str(v[0]), v[1])); err != nil {
		return err
	}
	if err := s.uncount(ctx, t("co"), acct); err != nil {
		return err
	}
	err = scanPages(func(c uint64) ([]string, uint64, error) {
		return s.rdb.HScan(ctx, t("dr"), c, "*", trashRecords).Result()
	}, func(kv []string) error {
		if len(kv) == 0 {
			return nil
		}
		args := []any{id}
		for i := 0; i < len(kv); i += 2 {
			args = append(args, kv[i])
		}
		return dropRecordsScript.Run(ctx, s.rdb, []string{t("dr"), s.akey(acct, dstatKey), s.akey(acct, ddueKey)}, args...).Err()
	})
	if err == nil {
		// The directory entry before the trash entry: a crash between
		// leaves the entry, and the sweep finds the account from its note.
		err = s.rdb.HDel(ctx, s.key(wacctKey), id).Err()
	}
	if err == nil {
		p := s.rdb.TxPipeline()
		p.Unlink(ctx, t("keys"), t("ixabn"), t("co"), t("dr"))
		p.ZRem(ctx, s.akey(acct, trashKey), id)
		_, err = p.Exec(ctx)
	}
	return s.fail("delete watch", err)
}

// uncount takes the companies of a deleted watch (trash set co) out of
// account acc's union, at most 2,000 a script and fewer when the account
// has many watches, read with SSCAN (SPOP would probe an ever sparser
// table as the set drains).
func (s *Store) uncount(ctx context.Context, co, acc string) error {
	keys := []string{co, s.akey(acc, watchesKey), s.akey(acc, companiesKey)}
	for {
		err := scanPages(func(c uint64) ([]string, uint64, error) {
			m, next, err := s.rdb.SScan(ctx, co, c, "*", 2000).Result()
			return m, next, s.fail("delete watch", err)
		}, func(members []string) error {
			for len(members) > 0 {
				n := 0
				_, err := s.casRun(ctx, "delete watch", uncountScript, func() ([]string, []any, error) {
					ws, err := s.rdb.ZRange(ctx, keys[1], 0, -1).Result()
					if err != nil {
						return nil, nil, s.fail("delete watch", err)
					}
					n = min(len(members), 2000, max(50, trashWork/(len(ws)+1)))
					wkeys := keys
					for _, w := range ws {
						wkeys = append(wkeys, s.akey(acc, watchKey, w, "co"))
					}
					return wkeys, append([]any{joinList(ws)}, anys(members[:n])...), nil
				})
				if err != nil {
					return err
				}
				members = members[n:]
			}
			return nil
		})
		if err != nil {
			return err
		}
		left, err := s.rdb.SCard(ctx, co).Result()
		if err != nil || left == 0 {
			return s.fail("delete watch", err)
		}
	}
}

// scanTrash puts in the account's trash zset (due at once, and noted in
// wake:trash) the remains an older version left without an entry
// (trash:<id>:keys alone), found by one SCAN over every account's keys the
// first time a process calls it: Reconcile, before its SweepStalled
// finishes them (serve's Sweeper does not scan).
func (s *Store) scanTrash(ctx context.Context) error {
	if s.trashScanned.Load() {
		return nil
	}
	prefix := s.akey("*", trashKey) + ":"
	err := scanKeys(ctx, s.rdb, prefix+"*:keys", 1000, func(keys []string) error {
		for _, k := range keys {
			acct, rest, ok := strings.Cut(strings.TrimPrefix(k, "{"+s.name+":a:"), "}:"+trashKey+":")
			if !ok {
				continue
			}
			id := strings.TrimSuffix(rest, ":keys")
			if err := s.rdb.ZAddNX(ctx, s.akey(acct, trashKey), redis.Z{Score: 0, Member: id}).Err(); err != nil {
				return err
			}
			if err := s.wake(ctx, wakeTrash, acct, time.UnixMilli(0)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.trashScanned.Store(true)
	}
	return s.fail("look for unfinished watch deletes", err)
}
