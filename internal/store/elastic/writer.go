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
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/mappings"
)

// stored is what a writer needs of a notice already indexed.
type stored struct {
	Seq         int64
	CollectedAt string
	Version     int64
}

// UpsertNotices stores a batch and publishes it (StartNotices).
func (s *Store) UpsertNotices(ctx context.Context, batch []notice.Notice) (store.UpsertResult, error) {
	return s.StartNotices(ctx, batch)()
}

// StartNotices stores a batch and publishes it (package publog); wait
// answers. Its turn (publog.Turn) is taken before it returns, so a load can
// start its next batch while this one is refreshed and published
// (docs/elasticsearch.md, "Writing notices: one writer, one publish log").
func (s *Store) StartNotices(ctx context.Context, batch []notice.Notice) (wait func() (store.UpsertResult, error)) {
	ns, ids, err := normalise(batch)
	var res store.UpsertResult
	done := make(chan struct{})
	if len(batch) == 0 || err != nil {
		close(done)
	} else {
		t := s.cfg.Log.Turn()
		go func() { defer close(done); res, err = s.upsert(ctx, t, ns, ids) }()
	}
	return func() (store.UpsertResult, error) { <-done; return res, err }
}

// staleTries is how many times a batch is written again after its lease
// passed to another writer before the write fails.
const staleTries = 5

// upsert writes and publishes a normalised batch in its turn t, the steps
// of docs/elasticsearch.md "Writing notices"; a lease that passed to another
// writer meanwhile refuses the publish, and the batch is written again
// under a new lease ("Takeover": which notices keep their seqs).
func (s *Store) upsert(ctx context.Context, t *publog.Turn, ns []notice.Notice, ids []string) (res store.UpsertResult, err error) {
	published := false
	defer func() { t.End(ctx, published) }()
	// The wall clock: compared with the publish log's ids (Redis's).
	before := &attempt{began: time.Now(), mine: map[string]int64{}}
	for try := 1; ; try++ {
		le, err := t.Lease(ctx)
		if err != nil {
			return store.UpsertResult{}, err
		}
		res, err = s.writeUnder(ctx, t, le, ns, ids, before)
		// ErrEarlier, like a stale lease: the next lease's takeover
		// publishes what the earlier batch left.
		again := errors.Is(err, publog.ErrStale) || errors.Is(err, publog.ErrEarlier)
		if again && try < staleTries {
			continue
		}
		if again {
			err = unavailable(fmt.Errorf("elastic: the writer lease passed to another writer %d times in a row while this batch was written (each write outlasted the lease): %w", try, err))
		}
		var be *store.BatchError
		published = err == nil || errors.As(err, &be)
		return res, err
	}
}

// normalise copies the batch with ids and published dates set, and returns
// the distinct ids in batch order.
func normalise(batch []notice.Notice) ([]notice.Notice, []string, error) {
	ns := make([]notice.Notice, len(batch))
	copy(ns, batch)
	for i := range ns {
		n := &ns[i]
		if n.SourceID == "" {
			return nil, nil, errs.New(errs.InvalidParameter, "notice %d of the batch has no source_id; every notice needs the regulator's identifier", i)
		}
		if n.ID == "" {
			n.ID = notice.IDFor(n.SourceID)
		}
		if n.PublishedDate == "" {
			t, err := time.Parse(time.RFC3339Nano, n.PublishedAt)
			if err != nil {
				return nil, nil, errs.New(errs.InvalidParameter, "notice %s has no published_date and its published_at %q is not an RFC 3339 timestamp", n.SourceID, n.PublishedAt)
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
	return ns, ids, nil
}

// attempt is what a batch's earlier tries under leases that passed on
// wrote: the seqs they gave the notices they inserted (why the unpublished
// ones get new seqs: docs/elasticsearch.md, "Takeover").
type attempt struct {
	began time.Time
	mine  map[string]int64
}

// unpublished returns the ids of known that an earlier try of the batch
// wrote under the seq it gave them and that were not published since.
func (s *Store) unpublished(ctx context.Context, known map[string]stored, before *attempt) (map[string]bool, error) {
	var ours []string
	for id, seq := range before.mine {
		if k, ok := known[id]; ok && k.Seq == seq {
			ours = append(ours, id)
		}
	}
	if len(ours) == 0 {
		return nil, nil
	}
	pub, err := s.cfg.Log.PublishedSince(ctx, before.began.Add(-time.Minute))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, id := range ours {
		if !pub[id] {
			out[id] = true
		}
	}
	return out, nil
}

// writeUnder writes the batch under le in its turn t, then publishes it
// once the batch before it is published (t.Publish). The turn gives le up.
func (s *Store) writeUnder(ctx context.Context, t *publog.Turn, le *publog.Lease, ns []notice.Notice, ids []string, before *attempt) (res store.UpsertResult, err error) {
	if le.Dirty != nil {
		if err := s.takeOver(ctx, le); err != nil {
			return res, err
		}
		le.Dirty = nil
	}
	// Is a reindex filling its index? Asked while the stored notices are
	// read. (Each try sets every notice's seq and collected_at again.)
	var nextIndices []string
	var nextErr error
	nextDone := make(chan struct{})
	go func() { defer close(nextDone); nextIndices, nextErr = s.aliasIndices(ctx, s.nextAlias()) }()
	defer func() { <-nextDone }()
	known, err := s.storedNotices(ctx, ids)
	if err != nil {
		return res, err
	}
	again, err := s.unpublished(ctx, known, before)
	if err != nil {
		return res, err
	}
	var fresh []string
	for _, id := range ids {
		k, ok := known[id]
		if again[id] {
			// Written by an earlier try whose publish was refused, after
			// the takeover looked: new, under a new seq.
			delete(known, id)
			ok = false
		}
		if !ok {
			fresh = append(fresh, id)
		} else if k.Version > le.Epoch {
			// Written under a later lease: this one has passed on.
			return res, publog.ErrStale
		}
	}
	if <-nextDone; nextErr != nil {
		return res, nextErr
	}
	next := len(nextIndices) > 0
	first, err := le.Allocate(ctx, len(fresh))
	if err != nil {
		return res, err
	}
	through := first + int64(len(fresh)) - 1
	collected := notice.Timestamp(s.cfg.Now())
	inserted := make(map[string]bool, len(fresh))
	for i := range ns {
		n := &ns[i]
		if k, ok := known[n.ID]; ok {
			n.Seq, n.CollectedAt = k.Seq, k.CollectedAt
		} else {
			n.Seq, n.CollectedAt = first, collected
			first++
			before.mine[n.ID] = n.Seq
			known[n.ID] = stored{Seq: n.Seq, CollectedAt: collected} // a second copy in the batch is an update
			inserted[n.ID] = true
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
			arenas.Put(&arena)
		}
	}()
	// indexed_at is the wall clock (not the store's clock): a reindex's
	// catch-up and a takeover compare it with real time.
	indexedAt := time.Now().UnixMilli()
	ops := make([]bulkOp, 0, len(ns))
	for i := range ns {
		start := len(arena)
		arena = esdoc.AppendNotice(arena, &ns[i], indexedAt)
		body := arena[start:len(arena):len(arena)]
		op := bulkOp{Index: s.Alias("notices"), Action: "index", ID: ns[i].ID, Version: le.Epoch, Fenced: true, Body: body, What: "notice " + ns[i].SourceID, Pos: i}
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
			return store.UpsertResult{}, err
		}
		for _, f := range r.items {
			if f.status == http.StatusConflict {
				// A later lease wrote this notice: this one has passed on.
				return store.UpsertResult{}, publog.ErrStale
			}
		}
		batchErr = &store.BatchError{}
		for _, f := range r.items {
			if !failed[f.op.Pos] {
				failed[f.op.Pos] = true
				batchErr.Items = append(batchErr.Items, store.ItemError{Index: f.op.Pos,
					Reason: fmt.Sprintf("Elasticsearch refused notice %s: %d %s", ns[f.op.Pos].SourceID, f.status, f.reason)})
			}
		}
		sort.Slice(batchErr.Items, func(i, j int) bool { return batchErr.Items[i].Index < batchErr.Items[j].Index })
	}
	t.Written()
	// Searchable before published.
	if err := s.refresh(ctx, s.Alias(mappings.Notices)); err != nil {
		return store.UpsertResult{}, err
	}
	if next {
		if err := s.refresh(ctx, s.nextAlias()); err != nil && !isNotFound(err) {
			return store.UpsertResult{}, err
		}
	}
	if writeHook != nil {
		if err := writeHook(s, ns); err != nil {
			return store.UpsertResult{}, err
		}
	}
	written := make([]notice.Notice, 0, len(ns))
	last := make(map[string]int, len(ns))
	for i := range ns {
		if !failed[i] {
			last[ns[i].ID] = len(written)
			written = append(written, ns[i])
		}
	}
	// Each notice is published once, its last copy (as stored), in batch
	// order: new if this batch inserted it, else amended (an update).
	pub, kinds := make([]notice.Notice, 0, len(last)), make([]publog.Kind, 0, len(last))
	for i := range written {
		if id := written[i].ID; last[id] == i {
			kind := publog.KindAmended
			if inserted[id] {
				kind = publog.KindNew
				res.Inserted++
			}
			pub, kinds = append(pub, written[i]), append(kinds, kind)
		}
	}
	res.Updated = len(written) - res.Inserted
	if err := t.Publish(ctx, pub, kinds, through); err != nil {
		return store.UpsertResult{}, err
	}
	if batchErr != nil {
		return res, batchErr
	}
	return res, nil
}

// writeHook, when set by a test, runs between a batch's refresh and its
// publish (a writer killed there leaves its notices to the takeover); an
// error it returns fails the batch there.
var writeHook func(*Store, []notice.Notice) error

// arenas holds the buffers a batch's documents are written into, given
// back once nothing refers to their bytes.
var arenas sync.Pool

// takeArena returns an empty buffer of at least size bytes' capacity.
func takeArena(size int) []byte {
	if p, ok := arenas.Get().(*[]byte); ok && cap(*p) >= size {
		return (*p)[:0]
	}
	return make([]byte, 0, size)
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
	err := s.do(ctx, s.timeout, http.MethodPost, "/"+s.Alias("notices")+"/_mget?_source=notice_seq,collected_at&realtime=true",
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
