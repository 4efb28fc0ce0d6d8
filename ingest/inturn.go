package ingest

import (
	"context"

	"github.com/noticesd/noticesd/internal/store"
)

// DefaultInFlight is how many notice batches a load has in flight at once
// when its writer can take several (store.TurnWriter): while one batch is
// bulk-written, the next reads what is stored and gets its seqs, so the
// search backend is not idle between batches.
const DefaultInFlight = 2

// DefaultTurnBatch is the number of notices per write call when the writer
// takes several batches at once (store.TurnWriter with more than one in
// flight: scale mode). Each such batch is made searchable with one
// Elasticsearch refresh before its notices are announced, and every refresh
// writes a segment that merges must later fold in, so larger batches cost
// the node less. 1,000,000 notices through `noticesd ingest`, alternated:
// 10,000 a batch 17,018 and 16,718 notices/s (peak RSS 0.5 GB), 20,000 a
// batch 18,854 and 17,807 (0.8 GB), 40,000 a batch 18,909 and 18,631
// (1.4 GB); 5,000 loaded 14,799 in the benchmark (docs/benchmarks.md,
// 2026-11-24).
const DefaultTurnBatch = 20000

// noticeBatch is the number of notices per write call of a load into w:
// opt.BatchSize when set, else DefaultTurnBatch for a writer taking several
// batches at once, else DefaultNoticeBatch.
func noticeBatch(w store.NoticeWriter, opt Options) int {
	if _, ok := w.(store.TurnWriter); ok && opt.inFlight() > 1 {
		return opt.batch(DefaultTurnBatch)
	}
	return opt.batch(DefaultNoticeBatch)
}

// inTurn is the writing side of a notice pipe whose writer takes several
// batches at once: each batch is written on its own goroutine with the
// store.Turn after the previous batch's, at most n at once, and their
// answers are recorded in input order. A batch holding a notice that a
// batch in flight holds waits until every batch in flight is done, so a
// notice's second version is written as an update of its first, as in a
// serial load.
type inTurn struct {
	ctx    context.Context // the load's: batches in flight finish even after another failed
	w      store.TurnWriter
	n      int
	record func([]linedNotice, store.UpsertResult, error) error
	last   *store.Turn
	flight []*flying // in input order
}

// flying is one batch in flight.
type flying struct {
	batch []linedNotice
	ids   map[string]struct{} // its source_ids
	done  chan struct{}
	res   store.UpsertResult
	err   error
}

// consume starts writing batch once there is room for it.
func (t *inTurn) consume(batch []linedNotice) error {
	for len(t.flight) >= t.n {
		if err := t.retire(); err != nil {
			return err
		}
	}
	if t.overlaps(batch) {
		if err := t.drain(); err != nil {
			return err
		}
	}
	f := &flying{batch: batch, ids: make(map[string]struct{}, len(batch)), done: make(chan struct{})}
	for i := range batch {
		f.ids[batch[i].SourceID] = struct{}{}
	}
	turn := store.NextTurn(t.last)
	t.last = turn
	t.flight = append(t.flight, f)
	go func() {
		defer close(f.done)
		f.res, f.err = t.w.UpsertNoticesTurn(t.ctx, notices(batch), turn)
	}()
	return nil
}

// overlaps reports whether a batch in flight holds a notice of batch.
func (t *inTurn) overlaps(batch []linedNotice) bool {
	for _, f := range t.flight {
		for i := range batch {
			if _, ok := f.ids[batch[i].SourceID]; ok {
				return true
			}
		}
	}
	return false
}

// retire waits for the oldest batch in flight and records its answer.
func (t *inTurn) retire() error {
	f := t.flight[0]
	<-f.done
	t.flight = t.flight[1:]
	return t.record(f.batch, f.res, f.err)
}

// drain retires every batch in flight, returning the first error.
func (t *inTurn) drain() error {
	var first error
	for len(t.flight) > 0 {
		if err := t.retire(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
