// Package worker runs webhook delivery in the embedded mode: a Worker that
// attempts deliveries with bounded concurrency, its Dispatcher that turns
// arriving notices into deliveries (docs/architecture.md, "How an arrival
// becomes a delivery"), and the Attempter both modes' schedulers call.
// Every part takes a clock and its steps are synchronous, so tests drive
// them with a fake clock and no sleeps.
package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/matcher"
)

// Dispatcher matches the notices after a durable cursor against an
// in-memory matcher.Index of the watches with a webhook and hands the
// matches to Queue.Enqueue, which creates the deliveries and advances the
// cursor in one transaction, then wakes its Worker. The Worker's Start
// runs it every DefaultPoll; RunOnce runs it step by step.
type Dispatcher struct {
	w *Worker

	mu       sync.Mutex // one round at a time
	index    matcher.Index
	version  int64
	loaded   bool
	loadedAt time.Time
	cursor   int64
	haveCur  bool
}

// RunOnce matches every notice that arrived since the cursor, batch by
// batch, and returns how many deliveries it created. At the first error
// the cursor stays before the failed batch, which the next round retries.
func (d *Dispatcher) RunOnce(ctx context.Context) (created int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer func() {
		if created > 0 {
			d.w.Wake()
		}
	}()
	if !d.haveCur {
		if d.cursor, err = d.w.cfg.Queue.ArrivalCursor(ctx); err != nil {
			return 0, fmt.Errorf("worker: read the arrival cursor: %w", err)
		}
		d.haveCur = true
	}
	for stale := 0; ; {
		if err := d.ensureWatchSet(ctx); err != nil {
			return created, err
		}
		ns, through, err := d.next(ctx)
		if err != nil || through <= d.cursor {
			return created, err
		}
		arrivals, err := d.match(ctx, ns)
		if err != nil {
			return created, err
		}
		n, err := d.w.cfg.Queue.Enqueue(ctx, arrivals, through, d.version, d.w.cfg.now())
		if errors.Is(err, store.ErrWatchSetChanged) && stale < staleRetries {
			stale++
			d.loaded = false // reload and match the batch again
			continue
		}
		if err != nil {
			return created, fmt.Errorf("worker: enqueue deliveries for notices %d..%d: %w", d.cursor+1, through, err)
		}
		d.cursor, created, stale = through, created+n, 0
		if len(ns) < d.w.cfg.batch {
			return created, nil // else a full batch: more may follow
		}
	}
}

// next reads the batch after the cursor: its notices and the notice_seq
// the cursor moves to. With no watch with a webhook it skips to the
// latest; Enqueue's version check makes that safe against a webhook
// registered meanwhile (its registration queues its own backlog).
func (d *Dispatcher) next(ctx context.Context) ([]notice.Notice, int64, error) {
	if d.index.Len() == 0 {
		latest, err := d.w.cfg.Queue.LatestSeq(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("worker: read the latest notice_seq: %w", err)
		}
		return nil, latest, nil
	}
	ns, err := d.w.cfg.Queue.NoticesAfter(ctx, d.cursor, d.w.cfg.batch)
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
	q := d.w.cfg.Queue
	now := d.w.cfg.now()
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
	d.w.log.Debug("watch index loaded", "watches", len(ws.Entries), "version", ws.Version)
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
		if acnOf, err = d.w.cfg.Queue.ResolveABNs(ctx, slices.Compact(abns)); err != nil {
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
