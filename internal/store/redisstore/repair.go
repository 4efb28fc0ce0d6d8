package redisstore

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Repair of the notice records (the bulk screen's nidx and nsum, and the
// change log nlog the replicas' copies follow). An ingest writes a batch to
// the notice store first and records it here second (Ingest), so a process
// that dies between the two steps leaves notices the company view shows and
// the bulk screen does not. RepairRecords closes that gap:
//
//	rec:through  string: every seq at or below it is recorded here, or
//	             has no notice in the notice store (a seq handed out and
//	             never written)
//
// It looks at the seqs above rec:through up to the arrival watermark (all
// written and searchable by then), asks nsum which of them it lacks (one
// HMGET per repairChunk seqs), reads only those from the notice store and
// records the ones found, then moves rec:through to the watermark (never
// back). The worker's sweep runs it (Reconcile, every 30 s) and so does
// every `noticesd ingest notices` before it loads.

// repairChunk is how many seqs one HMGET of nsum asks about.
const repairChunk = 5000

// raiseScript sets KEYS[1] to ARGV[1] if that is higher than its value.
var raiseScript = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > cur then redis.call('SET', KEYS[1], ARGV[1]) end
return 1`)

// RepairRecords records every notice the notice store holds at or below
// the arrival watermark that a crashed ingest wrote there but never
// recorded here, and returns how many it recorded. Recording a notice
// again is harmless, so it may run beside live ingests.
func (s *Store) RepairRecords(ctx context.Context) (int, error) {
	from, err := s.rdb.Get(ctx, s.key("rec", "through")).Int64()
	if err != nil && err != redis.Nil {
		return 0, s.fail("read the record repair cursor", err)
	}
	through, err := s.source.LatestSeq(ctx)
	if err != nil {
		return 0, err
	}
	repaired := 0
	for lo := from + 1; lo <= through; lo += repairChunk {
		hi := min(lo+repairChunk-1, through)
		fields := make([]string, 0, hi-lo+1)
		for q := lo; q <= hi; q++ {
			fields = append(fields, strconv.FormatInt(q, 10))
		}
		have, err := s.rdb.HMGet(ctx, s.key("nsum"), fields...).Result()
		if err != nil {
			return repaired, s.fail("read the notice records", err)
		}
		var missing []int64
		for i, v := range have {
			if v == nil {
				missing = append(missing, lo+int64(i))
			}
		}
		if len(missing) > 0 {
			found, err := s.source.NoticesBySeq(ctx, missing)
			if err != nil {
				return repaired, err
			}
			if err := s.RecordNotices(ctx, found); err != nil {
				return repaired, err
			}
			repaired += len(found)
		}
		if err := raiseScript.Run(ctx, s.rdb, []string{s.key("rec", "through")}, hi).Err(); err != nil {
			return repaired, s.fail("move the record repair cursor", err)
		}
	}
	return repaired, nil
}
