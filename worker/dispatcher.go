// Package worker runs webhook delivery in the embedded mode: a Dispatcher
// that turns arriving notices into deliveries (docs/architecture.md, "How
// an arrival becomes a delivery"), a Worker that attempts them with
// bounded concurrency, and the Attempter both modes' schedulers call.
// Every part takes a clock and its steps are synchronous, so tests drive
// them with a fake clock and no sleeps.
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
	// DefaultPoll is how often the Dispatcher looks for new notices.
	DefaultPoll = 250 * time.Millisecond
	// DefaultBatch is how many notices one Enqueue covers.
	DefaultBatch = 500
	// reloadEvery is how often the watch index is rebuilt even when its
	// version did not move (register changes).
	reloadEvery = 5 * time.Minute
	// staleRetries bounds how often one batch is matched again after the
	// watch set changed under it, until the next round.
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

// Dispatcher matches the notices after a durable cursor against an
// in-memory matcher.Index of the watches with a webhook and hands the
// matches to Queue.Enqueue, which creates the deliveries and advances the
// cursor in one transaction. Build it with NewDispatcher; run it with
// Start and Shutdown, or step by step with RunOnce.
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

	loops Loops
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
// batch, and returns how many deliveries it created. At the first error
// the cursor stays before the failed batch, which the next round retries.
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

// step matches one batch; more: a full batch was read.
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
// the cursor moves to. With no watch with a webhook it skips to the
// latest; Enqueue's version check makes that safe against a webhook
// registered meanwhile (its registration queues its own backlog).
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

// ensureWatchSet rebuilds the index when the store's version moved or it
// is older than reloadEvery.
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

// Start runs a round every Poll in the background until Shutdown;
// failures are logged and retried on the next round.
func (d *Dispatcher) Start(ctx context.Context) error {
	if d.loops.cancel != nil {
		return errors.New("worker: Dispatcher started twice")
	}
	d.loops.Go(ctx, Every(d.cfg.Poll, nil, func(ctx context.Context) error { _, err := d.RunOnce(ctx); return err },
		func(err error) { d.log.Error("matching arrived notices failed; retrying", "err", err) }))
	return nil
}

// Shutdown stops the loop and waits for the round in progress (an
// interrupted round writes nothing: Enqueue is one transaction).
func (d *Dispatcher) Shutdown(ctx context.Context) error {
	if err := d.loops.Stop(ctx, nil); err != nil {
		return fmt.Errorf("worker: dispatcher did not stop in time: %w", err)
	}
	return nil
}
