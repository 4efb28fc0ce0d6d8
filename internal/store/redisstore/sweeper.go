package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// sweepEvery is how often a Sweeper looks for stalled creates and deletes.
// With createLease it bounds how long a create whose process died counts
// against its account's plan: createLease + sweepEvery (7 s).
const sweepEvery = time.Second

// Sweeper is a part of `serve` in scale mode: every sweepEvery it undoes
// the watch creates whose creator stopped (their wpend lease ran out) and
// finishes the deletes whose deleter stopped (their trash lease ran out),
// so a create or delete cut short by a dead replica stops holding its
// account's watch count and companies within createLease + sweepEvery,
// without waiting for the worker's Reconcile (every 30 s) or for a create
// of the account that it would refuse. Every replica runs one; the claim
// scripts give each stalled change to one sweep. A sweep that finds
// nothing stalled costs two ZRANGEBYSCORE calls.
type Sweeper struct {
	s   *Store
	log *slog.Logger
	// ticks starts the sweep's timer: a ticker of sweepEvery, or a test's
	// channel. stop stops it.
	ticks func() (c <-chan time.Time, stop func())
	// swept, when set (tests), is told each sweep's outcome.
	swept func(n int, err error)

	cancel context.CancelFunc
	done   chan struct{}
}

// Sweeper returns the store's sweeper of stalled creates and deletes (not
// started); log reports a sweep that fails and the one that next succeeds.
func (s *Store) Sweeper(log *slog.Logger) *Sweeper {
	return &Sweeper{s: s, log: log, ticks: func() (<-chan time.Time, func()) {
		t := time.NewTicker(sweepEvery)
		return t.C, t.Stop
	}}
}

// Start sweeps at every tick until Shutdown.
func (w *Sweeper) Start(ctx context.Context) error {
	ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	w.done = make(chan struct{})
	ticks, stop := w.ticks()
	go func() {
		defer close(w.done)
		defer stop()
		failing := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticks:
			}
			n, err := w.s.SweepStalled(ctx, w.s.clock())
			if ctx.Err() != nil {
				return
			}
			switch {
			case err != nil && !failing:
				w.log.Warn("sweeping stalled watch creates and deletes (retried every second)", "err", err)
			case err == nil && failing:
				w.log.Info("sweeping stalled watch creates and deletes works again")
			}
			failing = err != nil
			if w.swept != nil {
				w.swept(n, err)
			}
		}
	}()
	return nil
}

// Shutdown stops the sweeps, waiting for one under way.
func (w *Sweeper) Shutdown(ctx context.Context) error {
	if w.cancel == nil {
		return nil
	}
	w.cancel()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SweepStalled undoes every create whose lease ran out by now and finishes
// every delete whose lease ran out by now; it returns how many. One that
// fails does not hold up the rest.
func (s *Store) SweepStalled(ctx context.Context, now time.Time) (int, error) {
	undone, undoErr := s.undoStalledCreates(ctx, now)
	finished, trashErr := s.finishStalledDeletes(ctx, now)
	return undone + finished, errors.Join(undoErr, trashErr)
}
