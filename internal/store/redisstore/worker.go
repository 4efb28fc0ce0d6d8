package redisstore

import (
	"cmp"
	"context"
	"sync"
	"time"
)

// ArrivalMatcher follows the publish log in a loop (MatchArrivals): what
// `noticesd worker` runs in scale mode. Any number of them may run against
// one Redis; each notice is still matched exactly once.
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

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs the loop in a goroutine until Shutdown or ctx ends.
func (m *ArrivalMatcher) Start(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done != nil {
		return
	}
	idle, n := cmp.Or(max(m.Idle, 0), 200*time.Millisecond), cmp.Or(max(m.Batch, 0), arrivalBatch)
	ctx, m.cancel = context.WithCancel(ctx)
	m.done = make(chan struct{})
	go func() {
		defer close(m.done)
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
	}()
}

// Shutdown stops the loop and waits for the round in progress (a round
// commits whole or not at all, so stopping loses nothing).
func (m *ArrivalMatcher) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	cancel, done := m.cancel, m.done
	m.mu.Unlock()
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
