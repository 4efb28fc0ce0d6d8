package elastic

import (
	"context"
	"sync"
	"time"

	"github.com/noticesd/noticesd/internal/store"
)

// A load's refreshes.
//
// A batch's new notices are announced (their seqs stop holding the arrival
// watermark back) only once a refresh has made them searchable. One refresh
// per batch of a large load wrote one small segment per batch, and merging
// those took a quarter of Elasticsearch's CPU during a 1,000,000-notice load
// (docs/benchmarks.md, 2026-11-24). So a batch of a load (it has a
// store.Turn) whose bulk write is over leaves its refresh to the batch after
// it, when that batch is already under way (Turn.Followed) and the last
// refresh started less than RefreshEvery ago; the batch after takes it over
// at its own store.StepSearchable, which it reaches only after this one's.
// A batch with no batch after it, or written alone, refreshes at once, for
// itself and every batch that left it theirs. So during a load the
// watermark trails the written notices by at most about RefreshEvery plus a
// batch's write, and the load's last batch returns only once every notice
// of the load is searchable and announced.

// DefaultRefreshEvery is Config.RefreshEvery's default.
const DefaultRefreshEvery = 5 * time.Second

// searchable is what a batch leaves to do once a refresh has made its
// notices searchable.
type searchable struct {
	clear func() // ends its seqs' hold on the watermark
	next  bool   // it also wrote to the index a reindex is filling
}

// refreshes is the store's state of left refreshes.
type refreshes struct {
	mu      sync.Mutex
	pending []searchable // batches whose refresh was left to a batch after
	last    time.Time    // when the last refresh started
}

func (s *Store) refreshEvery() time.Duration {
	if s.cfg.RefreshEvery > 0 {
		return s.cfg.RefreshEvery
	}
	return DefaultRefreshEvery
}

// makeSearchable is a batch's store.StepSearchable: own (a nil clear when
// the batch got no seqs) joins the batches waiting for a refresh; then,
// unless mayLeave and the refresh can be left to the batch after (see
// above), one refresh makes all of them searchable and ends their holds on
// the watermark. The holds end whatever the refresh answers, as a failed
// batch's always have: a notice written is searchable by the index's own
// periodic refresh at the latest, and a retry gets new seqs. It runs on
// every path of a batch that got this far, failures included (mayLeave
// false), so a batch that left its refresh is never forgotten.
func (s *Store) makeSearchable(ctx context.Context, turn *store.Turn, own searchable, mayLeave bool) error {
	ctx = context.WithoutCancel(ctx) // batches before may have left theirs
	_ = turn.Wait(ctx, store.StepSearchable)
	r := s.refreshes
	r.mu.Lock()
	if own.clear != nil {
		r.pending = append(r.pending, own)
	}
	if mayLeave && turn.Followed() && s.now().Sub(r.last) < s.refreshEvery() {
		r.mu.Unlock()
		turn.Done(store.StepSearchable)
		return nil
	}
	todo := r.pending
	r.pending = nil
	if len(todo) > 0 {
		r.last = s.now()
	}
	r.mu.Unlock()
	turn.Done(store.StepSearchable)
	if len(todo) == 0 {
		return nil
	}
	defer func() {
		for _, p := range todo {
			p.clear()
		}
	}()
	next := false
	for _, p := range todo {
		next = next || p.next
	}
	if err := s.refresh(ctx, s.Alias("notices")); err != nil {
		return err
	}
	if next {
		if err := s.refresh(ctx, s.nextAlias()); err != nil && !isNotFound(err) {
			return err
		}
	}
	// The batches are searchable: answers kept from before them go (aggCache).
	s.dataChanged(ctx)
	return nil
}
