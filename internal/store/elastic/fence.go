package elastic

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/arrival"
	"github.com/noticesd/noticesd/internal/store/elastic/esdoc"
	"github.com/noticesd/noticesd/mappings"
)

// The fence of a batch's seqs.
//
// Readers of seqs (NoticesAfter, MatchingSeqs, NoticesBySeq, so arrival
// matching, the backfill, the late-notice check and the record repair)
// read notices at or below the arrival watermark, and the watermark passes
// a batch's seqs once its lease lapses, even if its writer is still
// writing (a process that stalled, or lost Redis while Elasticsearch
// answered). A bulk write cannot prove a Redis lease, so a notice's seq is
// made valid in Redis instead: the batch's Clear, after its write and
// refresh, commits each chunk of seqs only if the watermark has not passed
// it (arrival.Clear, one script per chunk); seqs the watermark passed
// without a commit are revoked in the same script that passes them, and
// every reader leaves revoked seqs out (revokedClauses, notRevoked). A
// writer whose seqs lapsed gives those notices new seqs above the
// watermark and writes them again (resequence), so each notice is read at
// exactly one seq; a writer that died leaves its notices under revoked
// seqs until their next write, or Resequence, moves them.

// allocation is the seqs a batch took (arrival batches and their holds).
type allocation struct {
	arrive  *arrival.Arrivals
	batches []arrival.Batch
	holds   []func()
}

// stop ends the holds on the batches' leases.
func (a *allocation) stop() {
	for _, stop := range a.holds {
		stop()
	}
	a.holds = nil
}

// commit clears the batches (their notices are written and searchable)
// and returns the ids whose seqs lapsed before. unwritten names notices
// Elasticsearch refused.
func (a *allocation) commit(ctx context.Context, unwritten map[string]bool) ([]string, error) {
	a.stop()
	var lapsed []string
	for _, b := range a.batches {
		pos, err := a.arrive.Clear(context.WithoutCancel(ctx), b, unwritten)
		if err != nil {
			return nil, err
		}
		for _, i := range pos {
			lapsed = append(lapsed, b.IDs[i])
		}
	}
	return lapsed, nil
}

// abandon ends the batches of a write that failed: their seqs are revoked
// as the watermark passes them, whatever of it lands later.
func (a *allocation) abandon() {
	a.stop()
	for _, b := range a.batches {
		a.arrive.Abandon(b)
	}
}

// lookup reads the stored notices with the given ids (storedNotices) and
// splits off those stored under a revoked seq: they are not known (a new
// seq is due), but their version is, so the write that moves them wins.
func (s *Store) lookup(ctx context.Context, ids []string) (known, moved map[string]stored, err error) {
	known, err = s.storedNotices(ctx, ids)
	if err != nil || len(known) == 0 {
		return known, map[string]stored{}, err
	}
	lo, hi := int64(-1), int64(0)
	for _, k := range known {
		if lo < 0 || k.Seq < lo {
			lo = k.Seq
		}
		hi = max(hi, k.Seq)
	}
	rs, err := s.arrive.Revoked(ctx, lo-1, hi)
	if err != nil {
		return nil, nil, err
	}
	moved = map[string]stored{}
	for id, k := range known {
		if inRanges(rs, k.Seq) {
			moved[id] = k
			delete(known, id)
		}
	}
	return known, moved, nil
}

func inRanges(rs []arrival.Range, seq int64) bool {
	for _, r := range rs {
		if seq >= r.From && seq <= r.To {
			return true
		}
	}
	return false
}

// revokedClauses returns the must_not clauses that leave out the revoked
// seqs in (after, through].
func (s *Store) revokedClauses(ctx context.Context, after, through int64) ([]obj, error) {
	rs, err := s.arrive.Revoked(ctx, after, through)
	if err != nil {
		return nil, err
	}
	out := make([]obj, 0, len(rs))
	for _, r := range rs {
		out = append(out, obj{"range": obj{"notice_seq": obj{"gte": r.From, "lte": r.To}}})
	}
	return out, nil
}

// notRevoked drops the notices stored under a revoked seq.
func (s *Store) notRevoked(ctx context.Context, ns []notice.Notice) ([]notice.Notice, error) {
	if len(ns) == 0 {
		return ns, nil
	}
	lo, hi := ns[0].Seq, ns[0].Seq
	for _, n := range ns {
		lo, hi = min(lo, n.Seq), max(hi, n.Seq)
	}
	rs, err := s.arrive.Revoked(ctx, lo-1, hi)
	if err != nil || len(rs) == 0 {
		return ns, err
	}
	out := ns[:0]
	for _, n := range ns {
		if !inRanges(rs, n.Seq) {
			out = append(out, n)
		}
	}
	return out, nil
}

// resequenceTries bounds how often a batch's notices get new seqs because
// the last ones lapsed too (each try is a whole lease of writing).
const resequenceTries = 5

// resequence gives the notices with the given ids that are stored under
// a revoked seq new seqs above the watermark (and a new collected_at,
// since they arrive now) and writes them again as stored, until their
// seqs are committed. It returns the notices it moved, as stored.
func (s *Store) resequence(ctx context.Context, ids []string) (map[string]notice.Notice, error) {
	out := map[string]notice.Notice{}
	for try := 0; len(ids) > 0; try++ {
		if try == resequenceTries {
			return out, unavailable(fmt.Errorf("elastic: %d notices lost their seqs %d times in a row (each write outlasted its arrival lease)", len(ids), try))
		}
		mark, err := s.arrive.Mark(ctx)
		if err != nil {
			return out, err
		}
		_, moved, err := s.lookup(ctx, ids)
		if err != nil {
			return out, err
		}
		docs, err := s.storedDocs(ctx, moved)
		if err != nil {
			return out, err
		}
		need := make([]string, 0, len(docs))
		for id := range docs {
			need = append(need, id)
		}
		sort.Strings(need)
		known := map[string]stored{}
		assigned, alloc, err := s.allocate(ctx, need, notice.Timestamp(s.now()), known, moved, true, mark)
		if err != nil {
			return out, err
		}
		next, err := s.aliasExists(ctx, s.nextAlias())
		if err != nil {
			alloc.abandon()
			return out, err
		}
		version := time.Now().UnixMilli()
		var ops []bulkOp
		var body []byte
		for id, a := range assigned {
			n, ok := docs[id]
			if !ok {
				continue // found moved only on a second look: Resequence's
			}
			n.Seq, n.CollectedAt = a.Seq, a.CollectedAt
			docs[id] = n
			v := max(version, moved[id].Version+1)
			start := len(body)
			body = esdoc.AppendNotice(body, &n, v, nil)
			op := bulkOp{Index: s.Alias(mappings.Notices), Action: "index", ID: id, Version: v, Body: body[start:len(body):len(body)], What: "notice " + n.SourceID}
			ops = append(ops, op)
			if next {
				op.Index = s.nextAlias()
				ops = append(ops, op)
			}
		}
		if err := s.bulk(ctx, ops); err != nil {
			if _, err = withoutNext(err, s.nextAlias()); err != nil {
				alloc.abandon()
				return out, err
			}
		}
		if err := s.refresh(ctx, s.Alias(mappings.Notices)); err != nil {
			alloc.abandon()
			return out, err
		}
		if next {
			if err := s.refresh(ctx, s.nextAlias()); err != nil && !isNotFound(err) {
				alloc.abandon()
				return out, err
			}
		}
		lapsed, err := alloc.commit(ctx, nil)
		if err != nil {
			return out, err
		}
		for id := range assigned {
			if n, ok := docs[id]; ok {
				out[id] = n
			}
		}
		ids = lapsed
	}
	s.dataChanged(ctx)
	return out, nil
}

// storedDocs reads the notices of moved as stored (the newest write wins
// whoever made it; only their seqs change).
func (s *Store) storedDocs(ctx context.Context, moved map[string]stored) (map[string]notice.Notice, error) {
	out := make(map[string]notice.Notice, len(moved))
	if len(moved) == 0 {
		return out, nil
	}
	ids := make([]string, 0, len(moved))
	for id := range moved {
		ids = append(ids, id)
	}
	var ans struct {
		Docs []struct {
			ID     string `json:"_id"`
			Found  bool   `json:"found"`
			Source struct {
				Notice notice.Notice `json:"notice"`
			} `json:"_source"`
		} `json:"docs"`
	}
	err := s.do(ctx, s.cfg.Timeout, http.MethodPost, "/"+s.Alias(mappings.Notices)+"/_mget?_source=notice&realtime=true",
		map[string]any{"ids": ids}, &ans)
	if err != nil {
		return nil, err
	}
	for _, d := range ans.Docs {
		if d.Found {
			out[d.ID] = d.Source.Notice
		}
	}
	return out, nil
}

// resequenceBatch is how many notices under revoked seqs Resequence moves
// a call.
const resequenceBatch = 1000

// Resequence moves notices left under revoked seqs (their writer died
// after Elasticsearch took them, or its write landed after it gave up)
// to new seqs, so they are announced; it returns how many it moved. The
// worker's sweep runs it.
func (s *Store) Resequence(ctx context.Context) (int, error) {
	wm, err := s.arrive.Watermark(ctx)
	if err != nil {
		return 0, err
	}
	rs, err := s.arrive.Revoked(ctx, 0, wm)
	if err != nil || len(rs) == 0 {
		return 0, err
	}
	should := make([]obj, 0, len(rs))
	for _, r := range rs {
		should = append(should, obj{"range": obj{"notice_seq": obj{"gte": r.From, "lte": r.To}}})
	}
	var ids []string
	body := obj{"query": obj{"bool": obj{"should": should, "minimum_should_match": 1}}, "sort": sortSeqAsc, "_source": false}
	err = s.pages(ctx, s.Alias(mappings.Notices), body, resequenceBatch, func(hs []hit) error {
		for _, h := range hs {
			ids = append(ids, h.ID)
		}
		return nil
	})
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	moved, err := s.resequence(ctx, ids)
	return len(moved), err
}
