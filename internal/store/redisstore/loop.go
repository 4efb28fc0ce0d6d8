package redisstore

import (
	"context"
	"sync"
)

// loop is a background part's goroutine, started once and stopped by
// Shutdown: the Sweeper's and the ScreenCopy's.
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
