package publog

import (
	"context"
	"errors"
	"sync"

	"github.com/noticesd/noticesd/internal/notice"
)

// ErrEarlier refuses the publish of a batch that shares its lease with an
// earlier batch that failed: publishing it would raise Published over that
// batch's notices. Write it again under a new lease, whose takeover
// publishes what the failed batch left.
var ErrEarlier = errors.New("publog: an earlier batch under this lease failed unpublished; write the batch again under a new lease")

// Turn is one batch's place in its process's order of writes (Log.Turn):
// its write step (Lease to Written) follows the batch before's, its publish
// that batch's end, under that batch's lease while it holds it.
type Turn struct {
	log           *Log
	prev          *Turn
	le            *Lease
	wrote         sync.Once // closes written
	written, done chan struct{}
}

// Turn takes the next place in this process's order of batches. End it.
func (l *Log) Turn() *Turn {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = &Turn{log: l, prev: l.last, written: make(chan struct{}), done: make(chan struct{})}
	return l.last
}

// wait waits for the batch before to have written (done: ended).
func (t *Turn) wait(ctx context.Context, done bool) error {
	if t.prev == nil {
		return nil
	}
	ch := t.prev.written
	if done {
		ch = t.prev.done
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Lease gives up the turn's lease (a try refused as stale), waits for the
// batch before to have written, then joins the lease it writes under, or
// takes one (Acquire) once that batch has ended. The first turn under a
// lease takes over what Dirty says, then clears Dirty.
func (t *Turn) Lease(ctx context.Context) (*Lease, error) {
	t.leave(ctx, false)
	if err := t.wait(ctx, false); err != nil {
		return nil, err
	}
	l := t.log
	l.mu.Lock()
	if le := l.open; le != nil && !le.closing {
		le.users++
		t.le = le
		l.mu.Unlock()
		return le, nil
	}
	l.mu.Unlock()
	if err := t.wait(ctx, true); err != nil {
		return nil, err
	}
	le, err := l.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	le.users, l.open, t.le = 1, le, le
	l.mu.Unlock()
	return le, nil
}

// Written ends the write step: the next batch may write.
func (t *Turn) Written() { t.wrote.Do(func() { close(t.written) }) }

// Publish waits for the batch before to have ended, then publishes as
// Lease.Publish does, but leaves Dirty set while a later batch shares the
// lease (that batch's publish clears it). ErrEarlier: an earlier batch
// under the lease failed.
func (t *Turn) Publish(ctx context.Context, ns []notice.Notice, kinds []Kind, through int64) error {
	if err := t.wait(ctx, true); err != nil {
		return err
	}
	t.log.mu.Lock()
	last, left := t.le.users == 1, t.le.left
	t.le.closing = t.le.closing || last
	t.log.mu.Unlock()
	if left {
		return ErrEarlier
	}
	return t.le.publish(ctx, ns, kinds, through, last)
}

// End ends the turn and gives up its share of the lease (the last share
// releases it: clean when every batch under it was published).
func (t *Turn) End(ctx context.Context, published bool) {
	t.leave(ctx, published)
	t.Written()
	close(t.done)
	t.prev = nil
}

func (t *Turn) leave(ctx context.Context, published bool) {
	le, l := t.le, t.log
	if le == nil {
		return
	}
	t.le = nil
	l.mu.Lock()
	le.users--
	le.left = le.left || !published
	le.closing = le.closing || !published
	last, clean := le.users == 0, !le.left
	if last && l.open == le {
		l.open = nil
	}
	l.mu.Unlock()
	if last {
		le.Release(ctx, clean)
	}
}
