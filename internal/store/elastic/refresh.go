package elastic

import (
	"context"
	"sync"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
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
	alloc     *allocation     // its seqs (nil: it took none)
	unwritten map[string]bool // notices Elasticsearch refused
	failed    bool            // its write failed: abandon its seqs
	next      bool            // it also wrote to the index a reindex is filling
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

// makeSearchable is a batch's store.StepSearchable: own (a nil alloc when
// the batch got no seqs) joins the batches waiting for a refresh; then,
// unless mayLeave and the refresh can be left to the batch after (see
// above), one refresh makes all of them searchable and each is cleared:
// its seqs committed, or given new ones where they lapsed (fence.go); it
// returns the notices given new seqs. A batch that failed, and every
// batch when the refresh fails, is abandoned instead: its seqs are
// revoked, so a notice of it that lands or becomes searchable later is
// not read under them (the next write of it, or Resequence, gives it a new
// seq). It runs on every path of a batch that got this far, failures
// included (mayLeave false), so a batch that left its refresh is never
// forgotten.
func (s *Store) makeSearchable(ctx context.Context, turn *store.Turn, own searchable, mayLeave bool) (map[string]notice.Notice, error) {
	ctx = context.WithoutCancel(ctx) // batches before may have left theirs
	_ = turn.Wait(ctx, store.StepSearchable)
	r := s.refreshes
	r.mu.Lock()
	if own.alloc != nil {
		r.pending = append(r.pending, own)
	}
	if mayLeave && turn.Followed() && s.now().Sub(r.last) < s.refreshEvery() {
		r.mu.Unlock()
		turn.Done(store.StepSearchable)
		return nil, nil
	}
	todo := r.pending
	r.pending = nil
	if len(todo) > 0 {
		r.last = s.now()
	}
	r.mu.Unlock()
	turn.Done(store.StepSearchable)
	if len(todo) == 0 {
		return nil, nil
	}
	next := false
	for _, p := range todo {
		next = next || p.next
	}
	err := s.refresh(ctx, s.Alias("notices"))
	if err == nil && next {
		if err = s.refresh(ctx, s.nextAlias()); isNotFound(err) {
			err = nil
		}
	}
	if err != nil {
		for _, p := range todo {
			p.alloc.abandon()
		}
		return nil, err
	}
	var lapsed []string
	var cerr error
	for _, p := range todo {
		if p.failed {
			p.alloc.abandon()
			continue
		}
		l, err := p.alloc.commit(ctx, p.unwritten)
		if err != nil && cerr == nil {
			cerr = err
		}
		lapsed = append(lapsed, l...)
	}
	// The batches are searchable: answers kept from before them go (aggCache).
	s.dataChanged(ctx)
	if cerr != nil {
		return nil, cerr
	}
	if len(lapsed) == 0 {
		return nil, nil
	}
	return s.resequence(ctx, lapsed)
}
