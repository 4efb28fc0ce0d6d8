package elastic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/elastic/esdoc"
)

// stored is what a writer needs of a notice already indexed.
type stored struct {
	Seq         int64
	CollectedAt string
	Version     int64
}

// UpsertNotices stores a batch. Document id = notice id, so a known
// source_id is updated in place keeping its notice_seq and collected_at
// (read from Elasticsearch in real time); new notices get theirs from
// Redis (arrival.Allocate, in batch order) and are registered in flight
// until the batch is written and refreshed, so the arrival watermark
// announces them only once they are searchable (a batch of a load may
// leave its refresh to the batch after it: refresh.go). Every write carries an
// external_gte version (milliseconds, above the stored one), so a copy made
// by `noticesd reindex` never overwrites a newer write. While a reindex
// runs, documents are also written to the index it is filling.
func (s *Store) UpsertNotices(ctx context.Context, batch []notice.Notice) (store.UpsertResult, error) {
	_, res, err := s.UpsertStoredTurn(ctx, batch, nil)
	return res, err
}

// UpsertNoticesTurn is UpsertNotices with the batch's seqs allocated in
// turn (store.TurnWriter): an ingester may have several batches in flight.
func (s *Store) UpsertNoticesTurn(ctx context.Context, batch []notice.Notice, turn *store.Turn) (store.UpsertResult, error) {
	defer turn.Finish()
	_, res, err := s.UpsertStoredTurn(ctx, batch, turn)
	return res, err
}

var _ store.TurnWriter = (*Store)(nil)

// UpsertStoredTurn is UpsertNotices that also returns the notices as
// stored (id, notice_seq and collected_at set; a notice Elasticsearch
// refused is left out), so the scale write path records them in Redis
// without reading each back. With a *store.BatchError the notices
// returned are those written. It takes turn's store.StepAllocate (a nil
// turn: a batch written alone) to stamp collected_at and allocate seqs,
// so batches in flight together get them in their input order; it ends
// that step on every path and leaves the others to the caller.
func (s *Store) UpsertStoredTurn(ctx context.Context, batch []notice.Notice, turn *store.Turn) ([]notice.Notice, store.UpsertResult, error) {
	defer turn.Done(store.StepAllocate)
	// The batch's StepSearchable, on every path (makeSearchable): own
	// holds its seqs once allocated.
	var own searchable
	searched := false
	defer func() {
		if !searched {
			own.failed = true
			_, _ = s.makeSearchable(ctx, turn, own, false)
		}
	}()
	var res store.UpsertResult
	if len(batch) == 0 {
		return nil, res, nil
	}
	ns := make([]notice.Notice, len(batch))
	copy(ns, batch)
	for i := range ns {
		n := &ns[i]
		if n.SourceID == "" {
			return nil, res, errs.New(errs.InvalidParameter, "notice %d of the batch has no source_id; every notice needs the regulator's identifier", i)
		}
		if n.ID == "" {
			n.ID = notice.IDFor(n.SourceID)
		}
		if n.PublishedDate == "" {
			t, err := time.Parse(time.RFC3339Nano, n.PublishedAt)
			if err != nil {
				return nil, res, errs.New(errs.InvalidParameter, "notice %s has no published_date and its published_at %q is not an RFC 3339 timestamp", n.SourceID, n.PublishedAt)
			}
			n.PublishedDate = notice.PublishedDate(t)
		}
	}
	ids := make([]string, 0, len(ns))
	seen := make(map[string]bool, len(ns))
	for _, n := range ns {
		if !seen[n.ID] {
			seen[n.ID] = true
			ids = append(ids, n.ID)
		}
	}
	// See whether a reindex is filling its index while the stored notices
	// are read and seqs allocated.
	type nextAnswer struct {
		ok  bool
		err error
	}
	nextCh := make(chan nextAnswer, 1)
	go func() {
		ok, err := s.aliasExists(ctx, s.nextAlias())
		nextCh <- nextAnswer{ok, err}
	}()
	// The mark first: a batch cleared after it forgets its seqs, so an id
	// not found below may have been written meanwhile (Allocate says so).
	mark, err := s.arrive.Mark(ctx)
	if err != nil {
		return nil, res, err
	}
	known, moved, err := s.lookup(ctx, ids)
	if err != nil {
		return nil, res, err
	}
	var fresh []string
	for _, id := range ids {
		if _, ok := known[id]; !ok {
			fresh = append(fresh, id)
		}
	}
	if err := turn.Wait(ctx, store.StepAllocate); err != nil {
		return nil, res, err
	}
	collected := notice.Timestamp(s.now())
	assigned, alloc, err := s.allocate(ctx, fresh, collected, known, moved, false, mark)
	turn.Done(store.StepAllocate)
	if err != nil {
		return nil, res, err
	}
	// The seqs stop holding the watermark back whatever happens: on
	// success they are committed once the notices are searchable (or
	// given new ones, should they have lapsed: fence.go); on failure they
	// are revoked, and a retry gets new ones.
	own.alloc = alloc

	na := <-nextCh
	if na.err != nil {
		return nil, res, na.err
	}
	next := na.ok
	own.next = next
	version := time.Now().UnixMilli()
	ops := make([]bulkOp, 0, len(ns))
	inserted := map[string]bool{}
	for i := range ns {
		n := &ns[i]
		if k, ok := known[n.ID]; ok {
			n.Seq, n.CollectedAt = k.Seq, k.CollectedAt
			version = max(version, k.Version+1)
			res.Updated++
		} else {
			a := assigned[n.ID]
			n.Seq, n.CollectedAt = a.Seq, a.CollectedAt
			if m, ok := moved[n.ID]; ok {
				version = max(version, m.Version+1)
			}
			known[n.ID] = a // a second copy in the batch is an update
			delete(assigned, n.ID)
			inserted[n.ID] = true
			res.Inserted++
		}
	}
	// The documents are written one after another into one buffer, taken
	// from and given back to a pool: one allocation a batch at most, not
	// one a notice (docs/benchmarks.md, 2026-11-24).
	size := 0
	for i := range ns {
		size += 2*(len(ns[i].Text)+len(ns[i].CompanyName)+len(ns[i].NoticeType)) + 1280
	}
	arena := takeArena(size)
	// Given back only when every bulk request of the batch has been
	// answered: an indexer closed on a timeout returns while its workers
	// may still be copying documents out of it.
	answered := false
	defer func() {
		if answered {
			giveArena(arena)
		}
	}()
	for i := range ns {
		start := len(arena)
		arena = esdoc.AppendNotice(arena, &ns[i], version, nil)
		body := arena[start:len(arena):len(arena)]
		op := bulkOp{Index: s.Alias("notices"), Action: "index", ID: ns[i].ID, Version: version, Body: body, What: "notice " + ns[i].SourceID, Pos: i}
		ops = append(ops, op)
		if next {
			op.Index = s.nextAlias()
			ops = append(ops, op)
		}
	}
	var batchErr *store.BatchError
	failed := map[int]bool{}
	err = s.bulk(ctx, ops)
	if next {
		// The reindex may have swapped and dropped its alias meanwhile:
		// then send the batch again through the live alias, which now
		// names the new index (same versions, so this is idempotent).
		var gone bool
		if gone, err = withoutNext(err, s.nextAlias()); gone {
			next = false
			main := ops[:0:0]
			for _, op := range ops {
				if op.Index == s.Alias("notices") {
					main = append(main, op)
				}
			}
			if err == nil {
				err = s.bulk(ctx, main)
			}
		}
	}
	var r *refused
	answered = err == nil || errors.As(err, &r)
	if err != nil {
		if !errors.As(err, &r) {
			return nil, store.UpsertResult{}, err
		}
		// Some notices were refused, the rest written: name them.
		batchErr = &store.BatchError{}
		for _, f := range r.items {
			if !failed[f.op.Pos] {
				failed[f.op.Pos] = true
				batchErr.Items = append(batchErr.Items, store.ItemError{Index: f.op.Pos,
					Reason: fmt.Sprintf("Elasticsearch refused notice %s: %d %s", ns[f.op.Pos].SourceID, f.status, f.reason)})
			}
		}
		sort.Slice(batchErr.Items, func(i, j int) bool { return batchErr.Items[i].Index < batchErr.Items[j].Index })
		own.unwritten = map[string]bool{}
		for i := range failed {
			own.unwritten[ns[i].ID] = true
		}
		res = store.UpsertResult{}
		seen := map[string]bool{}
		for i := range ns {
			if failed[i] {
				continue
			}
			if inserted[ns[i].ID] && !seen[ns[i].ID] {
				res.Inserted++
			} else {
				res.Updated++
			}
			seen[ns[i].ID] = true
		}
	}
	// Searchable now, or by a refresh a batch after it makes (refresh.go).
	searched = true
	resequenced, err := s.makeSearchable(ctx, turn, own, true)
	if err != nil {
		return nil, store.UpsertResult{}, err
	}
	written := make([]notice.Notice, 0, len(ns))
	for i := range ns {
		if failed[i] {
			continue
		}
		if m, ok := resequenced[ns[i].ID]; ok {
			// Its seq lapsed: it was written again as stored, under a
			// new seq (fence.go).
			ns[i] = m
		}
		written = append(written, ns[i])
	}
	if batchErr != nil {
		return written, res, batchErr
	}
	return written, res, nil
}

// arenas holds the buffers a batch's documents are written into
// (takeArena, giveArena).
var arenas sync.Pool

// takeArena returns an empty buffer of at least size bytes' capacity.
func takeArena(size int) []byte {
	if p, ok := arenas.Get().(*[]byte); ok && cap(*p) >= size {
		return (*p)[:0]
	}
	return make([]byte, 0, size)
}

// giveArena returns a buffer for reuse once nothing refers to its bytes:
// the batch's bulk requests have all been answered.
func giveArena(b []byte) {
	arenas.Put(&b)
}

// allocate gets seqs for the ids not found stored (looked up after mark
// was read). Ids whose earlier seq the watermark has passed, and ids
// Allocate found stale, are looked up again (another ingester wrote them
// meanwhile: they join known; one stored under a revoked seq joins moved)
// and those still missing get seqs again, fresh. The allocation commits
// or abandons every batch it took.
func (s *Store) allocate(ctx context.Context, ids []string, collected string, known, moved map[string]stored, fresh bool, mark int64) (map[string]stored, *allocation, error) {
	assigned := make(map[string]stored, len(ids))
	alloc := &allocation{arrive: s.arrive}
	for len(ids) > 0 {
		b, err := s.arrive.Allocate(ctx, ids, collected, fresh, mark)
		if err != nil {
			alloc.abandon()
			return nil, nil, err
		}
		alloc.batches = append(alloc.batches, b)
		alloc.holds = append(alloc.holds, s.arrive.Hold(b))
		var again []string
		for i, id := range ids {
			if b.Settled[i] || b.Stale[i] {
				again = append(again, id)
			} else {
				assigned[id] = stored{Seq: b.Seqs[i], CollectedAt: b.Collected[i]}
			}
		}
		if len(again) == 0 {
			break
		}
		if mark, err = s.arrive.Mark(ctx); err != nil {
			alloc.abandon()
			return nil, nil, err
		}
		found, mv, err := s.lookup(ctx, again)
		if err != nil {
			alloc.abandon()
			return nil, nil, err
		}
		for id, m := range mv {
			moved[id] = m
		}
		ids = ids[:0:0]
		for _, id := range again {
			if k, ok := found[id]; ok {
				known[id] = k
			} else {
				ids = append(ids, id)
			}
		}
		fresh = true
	}
	return assigned, alloc, nil
}

// storedNotices reads, in real time, the seq, collected_at and version of
// the notices with the given ids that are stored.
func (s *Store) storedNotices(ctx context.Context, ids []string) (map[string]stored, error) {
	out := make(map[string]stored, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var ans struct {
		Docs []struct {
			ID      string `json:"_id"`
			Found   bool   `json:"found"`
			Version int64  `json:"_version"`
			Source  struct {
				Seq         int64  `json:"notice_seq"`
				CollectedAt string `json:"collected_at"`
			} `json:"_source"`
		} `json:"docs"`
	}
	err := s.do(ctx, s.cfg.Timeout, http.MethodPost, "/"+s.Alias("notices")+"/_mget?_source=notice_seq,collected_at&realtime=true",
		map[string]any{"ids": ids}, &ans)
	if err != nil {
		return nil, err
	}
	for _, d := range ans.Docs {
		if d.Found {
			out[d.ID] = stored{Seq: d.Source.Seq, CollectedAt: d.Source.CollectedAt, Version: d.Version}
		}
	}
	return out, nil
}

// Watermark returns the arrival watermark: every notice with notice_seq at
// most it is searchable (see package arrival).
func (s *Store) Watermark(ctx context.Context) (int64, error) { return s.arrive.Watermark(ctx) }

// withoutNext drops from a bulk error the writes refused because the
// reindex alias next no longer exists, reporting whether there were any.
func withoutNext(err error, next string) (bool, error) {
	var r *refused
	if !errors.As(err, &r) {
		return false, err
	}
	var rest []bulkFailure
	gone := false
	for _, f := range r.items {
		if f.op.Index == next && f.status == http.StatusNotFound {
			gone = true
		} else {
			rest = append(rest, f)
		}
	}
	if len(rest) == 0 {
		return gone, nil
	}
	return gone, &refused{items: rest, msg: r.msg}
}
