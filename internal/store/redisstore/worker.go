package redisstore

import (
	"cmp"
	"context"
	"sync"
	"time"
)

// ArrivalMatcher follows the publish log in a loop (MatchArrivals): what
// `noticesd worker` runs in scale mode. Any number of them may run against
// one Redis; each notice is still matched exactly once. Shutdown loses
// nothing: a round commits whole or not at all.
type ArrivalMatcher struct {
	// Store is the store to match for.
	Store *Store
	// Idle is how long to wait when nothing is left to match; default 200ms.
	Idle time.Duration
	// Batch is the most notices matched per commit; default 500.
	Batch int
	// Matched, when set, is called after a round that matched entries
	// (the delivery pump is woken to make the new deliveries' tasks).
	Matched func()
	// OnError is told of each failed round (the loop goes on after Idle);
	// default: ignored.
	OnError func(error)

	loop
}

// Start runs the loop in a goroutine until Shutdown or ctx ends.
func (m *ArrivalMatcher) Start(ctx context.Context) {
	idle, n := cmp.Or(max(m.Idle, 0), 200*time.Millisecond), cmp.Or(max(m.Batch, 0), arrivalBatch)
	m.start(ctx, func(ctx context.Context) {
		for wait := time.Duration(0); ; {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			moved, err := m.Store.MatchArrivals(ctx, n)
			if err != nil && ctx.Err() == nil && m.OnError != nil {
				m.OnError(err)
			}
			wait = idle
			if moved > 0 && err == nil {
				wait = 0 // more may be waiting
				if m.Matched != nil {
					m.Matched()
				}
			}
		}
	})
}

// loop is a background part's goroutine, started once and stopped by
// Shutdown: the ArrivalMatcher's, the Sweeper's and the ScreenCopy's.
type loop struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs run in a goroutine until Shutdown or ctx ends, unless it was
// started already.
func (l *loop) start(ctx context.Context, run func(ctx context.Context)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return
	}
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		run(ctx)
	}()
}

// Shutdown stops the loop and waits for its round in progress to end, or
// for ctx.
func (l *loop) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
