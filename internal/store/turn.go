package store

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/noticesd/noticesd/internal/notice"
)

// Step names a step of a batch write that batches in flight together take
// in their input order.
type Step int

const (
	// StepAllocate hands out the batch's notice_seqs (so seqs follow the
	// input order, as a serial load gives them).
	StepAllocate Step = iota
	// StepRecord records the stored batch beside the notice store (scale
	// mode's Redis lists and change log).
	StepRecord
	// StepSearchable is where a batch whose bulk write is over asks for
	// its notices to be made searchable: it either refreshes or leaves
	// that to a batch after it (see Followed), which must then come to
	// this step after it.
	StepSearchable
	numSteps
)

// Turn keeps the order of the batches one ingest has in flight together:
// a batch takes each Step only once the batch before it has ended the
// same step, while the rest of their work (reading what is stored, bulk
// writes, refreshes) overlaps. Turns are made in input order with
// NextTurn. A nil *Turn waits for nothing (a batch written alone).
type Turn struct {
	prev     [numSteps]<-chan struct{} // the batch before's steps; nil for the first
	mine     [numSteps]chan struct{}
	once     [numSteps]sync.Once
	followed atomic.Bool
}

// NextTurn returns the turn of the batch after prev (nil: the first batch).
func NextTurn(prev *Turn) *Turn {
	t := &Turn{}
	for s := range t.mine {
		t.mine[s] = make(chan struct{})
		if prev != nil {
			t.prev[s] = prev.mine[s]
		}
	}
	if prev != nil {
		prev.followed.Store(true)
	}
	return t
}

// Followed reports whether the turn of a batch after this one has been
// made: that batch is under way and will take every step after this one.
func (t *Turn) Followed() bool {
	return t != nil && t.followed.Load()
}

// Wait blocks until the batch before has ended step s, or ctx ends.
func (t *Turn) Wait(ctx context.Context, s Step) error {
	if t == nil || t.prev[s] == nil {
		return nil
	}
	select {
	case <-t.prev[s]:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done ends step s of this batch, letting the batch after take it. A step
// ends only after the batch before has ended it (Done waits for that), so
// the order holds even for a batch that fails before its turn. It may be
// called more than once; a writer calls it on every path, failures
// included, or the batches after it wait for ever.
func (t *Turn) Done(s Step) {
	if t == nil {
		return
	}
	t.once[s].Do(func() {
		if p := t.prev[s]; p != nil {
			<-p
		}
		close(t.mine[s])
	})
}

// Finish ends every step of this batch not ended yet (once the batch's
// write is over, whatever happened).
func (t *Turn) Finish() {
	for s := range numSteps {
		t.Done(s)
	}
}

// TurnWriter is a NoticeWriter that can have several batches of one
// ingest in flight at once: UpsertNoticesTurn is UpsertNotices taking its
// ordered steps in turn (the ingester makes the turns in input order and
// never has two batches holding the same notice in flight together).
type TurnWriter interface {
	NoticeWriter
	UpsertNoticesTurn(ctx context.Context, batch []notice.Notice, turn *Turn) (UpsertResult, error)
}
