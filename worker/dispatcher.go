// Package worker runs webhook delivery in the embedded mode: a Dispatcher
// that turns arriving notices into deliveries, a Worker that attempts them
// with bounded concurrency, and the Attempter both modes' schedulers call.
//
// The Dispatcher reads the notices after a durable cursor (whichever
// process stored them), matches them against an in-memory matcher.Index of
// the watches with a webhook, and hands the matches to Queue.Enqueue, which
// creates the deliveries and advances the cursor in one transaction: every
// (watch, eligible notice) pair becomes exactly one delivery, across
// restarts too. The index is rebuilt when the store's version of the set of
// watches with a webhook moved (Enqueue refuses a batch matched against an
// older set, which is then matched again; changes made by another process
// are seen the same way) and every few minutes (register changes). Every
// part takes a clock, and RunOnce does one round synchronously, so tests
// drive the pipeline with a fake clock and no sleeps.
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/matcher"
)

// Dispatcher defaults.
const (
	// DefaultPoll is how often the Dispatcher looks for new notices; with
	// the Worker woken at once, a notice is attempted well within the two
	// seconds the issue allows.
	DefaultPoll = 250 * time.Millisecond
	// DefaultBatch is how many notices one Enqueue covers.
	DefaultBatch = 500
	// reloadEvery is how often the watch index is rebuilt even when its
	// version did not move.
	reloadEvery = 5 * time.Minute
	// staleRetries bounds how often one batch is matched again after the
	// watch set changed under it before RunOnce gives up until next time.
	staleRetries = 5
)

// DispatcherConfig configures a Dispatcher. Queue is required.
type DispatcherConfig struct {
	Queue store.Queue
	// Now is the clock eligibility is judged by; nil means time.Now.
	Now func() time.Time
	// Poll is the interval between looks for new notices; 0 means
	// DefaultPoll.
	Poll time.Duration
	// Batch is the most notices matched per Enqueue; 0 means DefaultBatch.
	Batch int
	// OnEnqueued is called after deliveries were created (Worker.Wake).
	OnEnqueued func()
	// Logger receives failures; nil discards them.
	Logger *slog.Logger
}

// Dispatcher matches arriving notices to watches and enqueues deliveries.
// Build it with NewDispatcher; run it with Start and Shutdown, or drive it
// step by step with RunOnce.
type Dispatcher struct {
	cfg DispatcherConfig
	log *slog.Logger

	mu       sync.Mutex // one round at a time
	index    matcher.Index
	version  int64
	loaded   bool
	loadedAt time.Time
	cursor   int64
	haveCur  bool

	stop chan struct{}
	done chan struct{}
}

// NewDispatcher returns a Dispatcher with cfg's zero fields defaulted.
func NewDispatcher(cfg DispatcherConfig) (*Dispatcher, error) {
	if cfg.Queue == nil {
		return nil, errors.New("worker: DispatcherConfig.Queue is nil; pass the store that holds the delivery queue")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	Default(&cfg.Poll, DefaultPoll)
	Default(&cfg.Batch, DefaultBatch)
	return &Dispatcher{cfg: cfg, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))}, nil
}

// RunOnce matches every notice that arrived since the cursor, batch by
// batch, and returns how many deliveries it created. It stops at the first
// error; the cursor then stays before the failed batch, which the next
// round retries.
func (d *Dispatcher) RunOnce(ctx context.Context) (created int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		n, more, err := d.step(ctx)
		created += n
		if err != nil || !more {
			if created > 0 && d.cfg.OnEnqueued != nil {
				d.cfg.OnEnqueued()
			}
			return created, err
		}
	}
}

// step matches one batch. more reports whether a full batch was read (so
// more notices may be waiting).
func (d *Dispatcher) step(ctx context.Context) (created int, more bool, err error) {
	if !d.haveCur {
		c, err := d.cfg.Queue.ArrivalCursor(ctx)
		if err != nil {
			return 0, false, fmt.Errorf("worker: read the arrival cursor: %w", err)
		}
		d.cursor, d.haveCur = c, true
	}
	for try := 0; ; try++ {
		if err := d.ensureWatchSet(ctx); err != nil {
			return 0, false, err
		}
		ns, through, err := d.next(ctx)
		if err != nil || through <= d.cursor {
			return 0, false, err
		}
		arrivals, err := d.match(ctx, ns)
		if err != nil {
			return 0, false, err
		}
		created, err = d.cfg.Queue.Enqueue(ctx, arrivals, through, d.version, d.cfg.Now())
		if errors.Is(err, store.ErrWatchSetChanged) && try < staleRetries {
			d.loaded = false // reload and match the batch again
			continue
		}
		if err != nil {
			return 0, false, fmt.Errorf("worker: enqueue deliveries for notices %d..%d: %w", d.cursor+1, through, err)
		}
		d.cursor = through
		return created, len(ns) == d.cfg.Batch, nil
	}
}

// next reads the batch after the cursor: its notices and the notice_seq
// the cursor moves to once they are matched. When no watch has a webhook
// it reads no notice and skips to the latest; Enqueue's version check
// makes that safe against a webhook registered meanwhile (its
// registration queues its own backlog).
func (d *Dispatcher) next(ctx context.Context) ([]notice.Notice, int64, error) {
	if d.index.Len() == 0 {
		latest, err := d.cfg.Queue.LatestSeq(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("worker: read the latest notice_seq: %w", err)
		}
		return nil, latest, nil
	}
	ns, err := d.cfg.Queue.NoticesAfter(ctx, d.cursor, d.cfg.Batch)
	if err != nil {
		return nil, 0, fmt.Errorf("worker: read notices after seq %d: %w", d.cursor, err)
	}
	if len(ns) == 0 {
		return nil, d.cursor, nil
	}
	return ns, ns[len(ns)-1].Seq, nil
}

// ensureWatchSet rebuilds the index when the store's version moved, when
// it was never loaded, or when it is older than reloadEvery.
func (d *Dispatcher) ensureWatchSet(ctx context.Context) error {
	q := d.cfg.Queue
	now := d.cfg.Now()
	if d.loaded && now.Sub(d.loadedAt) < reloadEvery {
		v, err := q.WatchSetVersion(ctx)
		if err != nil {
			return fmt.Errorf("worker: read the watch set version: %w", err)
		}
		if v == d.version {
			return nil
		}
	}
	ws, err := q.WatchSet(ctx)
	if err != nil {
		return fmt.Errorf("worker: load the watches with a webhook: %w", err)
	}
	if err := d.index.Replace(slices.Values(ws.Entries)); err != nil {
		return fmt.Errorf("worker: index the watches with a webhook: %w", err)
	}
	d.version, d.loaded, d.loadedAt = ws.Version, true, now
	d.log.Debug("watch index loaded", "watches", len(ws.Entries), "version", ws.Version)
	return nil
}

// match returns the arrivals of ns that matched at least one watch.
func (d *Dispatcher) match(ctx context.Context, ns []notice.Notice) ([]store.Arrival, error) {
	var abns []string
	for i := range ns {
		if ns[i].ABN == nil {
			continue
		}
		if id, ok := ident.Normalise(*ns[i].ABN); ok && id.Kind == ident.ABN {
			abns = append(abns, id.Value)
		}
	}
	var acnOf map[string][]string
	if len(abns) > 0 {
		slices.Sort(abns)
		var err error
		if acnOf, err = d.cfg.Queue.ResolveABNs(ctx, slices.Compact(abns)); err != nil {
			return nil, fmt.Errorf("worker: resolve the ABNs of arriving notices: %w", err)
		}
	}
	resolve := func(abn string) []string { return acnOf[abn] }
	var out []store.Arrival
	for i := range ns {
		if ids := d.index.Match(&ns[i], resolve); len(ids) > 0 {
			out = append(out, store.Arrival{Notice: ns[i], Watches: ids})
		}
	}
	return out, nil
}

// Start runs the Dispatcher in the background until Shutdown: a round
// every Poll. Failures are logged and retried on the next round.
func (d *Dispatcher) Start(ctx context.Context) error {
	if d.stop != nil {
		return errors.New("worker: Dispatcher started twice")
	}
	d.stop, d.done = make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(d.done)
		defer cancel()
		go func() {
			<-d.stop
			cancel()
		}()
		t := time.NewTicker(d.cfg.Poll)
		defer t.Stop()
		for {
			if _, err := d.RunOnce(ctx); err != nil && ctx.Err() == nil {
				d.log.Error("matching arrived notices failed; retrying", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Shutdown stops the background loop and waits for the round in progress
// (an interrupted round writes nothing: Enqueue is one transaction).
func (d *Dispatcher) Shutdown(ctx context.Context) error {
	if err := stopAndWait(ctx, d.stop, d.done); err != nil {
		return fmt.Errorf("worker: dispatcher did not stop in time: %w", err)
	}
	return nil
}
