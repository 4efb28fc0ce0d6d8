package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/webhook"
)

// Worker defaults.
const (
	// concurrency is the most delivery attempts in flight at once.
	concurrency = 16
	// perWatch is the most attempts in flight for one watch.
	perWatch = 4
	// DefaultIdlePoll is the longest the Worker sleeps without looking at
	// the queue.
	DefaultIdlePoll = time.Second
	// leaseMargin makes a live attempt's lease outlive it, so it is never
	// claimed twice.
	leaseMargin = 30 * time.Second
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

// Config configures a Worker. Queue and Sender are required.
type Config struct {
	Queue  store.Queue
	Sender *webhook.Sender
	// RetryUnit scales the retry schedule (NOTICES_DELIVERY_RETRY_UNIT);
	// 0 means 10 minutes.
	RetryUnit time.Duration
	// Logger receives failures; nil discards them.
	Logger *slog.Logger

	// Tests set these; zero is the default: time.Now (the clock of
	// matching, claims and outcomes), DefaultIdlePoll, DefaultPoll and
	// DefaultBatch.
	now      func() time.Time
	idlePoll time.Duration
	poll     time.Duration
	batch    int
}

// Worker attempts the Queue's due deliveries through an Attempter, and
// runs the Dispatcher that creates them. Build it with New; run it with
// Start and Shutdown.
type Worker struct {
	cfg       Config
	log       *slog.Logger
	wake      chan struct{}
	attempter Attempter
	// lease is how long a claimed delivery is reserved: (concurrency/perWatch
	// + 1) Sender timeouts plus leaseMargin, as an attempt may first wait
	// for its endpoint's slot behind the others claimed with it.
	lease time.Duration
	// Dispatcher turns arriving notices into deliveries.
	Dispatcher *Dispatcher

	loops  Loops
	cancel context.CancelFunc // cancels attempts in flight
}

// New returns a Worker with cfg's zero fields defaulted.
func New(cfg Config) (*Worker, error) {
	if cfg.Queue == nil || cfg.Sender == nil {
		return nil, errors.New("worker: Config needs Queue (the store that holds the delivery queue) and Sender (webhook.NewSender)")
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	Default(&cfg.RetryUnit, 10*time.Minute)
	Default(&cfg.idlePoll, DefaultIdlePoll)
	Default(&cfg.poll, DefaultPoll)
	Default(&cfg.batch, DefaultBatch)
	log := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	a := Attempter{Sender: cfg.Sender, Ledger: cfg.Queue, RetryUnit: cfg.RetryUnit, Now: cfg.now, Log: log}
	lease := time.Duration(concurrency/perWatch+1)*cfg.Sender.Timeout() + leaseMargin
	w := &Worker{cfg: cfg, log: log, wake: make(chan struct{}, 1), attempter: a, lease: lease}
	w.Dispatcher = &Dispatcher{w: w}
	return w, nil
}

// Default sets *v to def when *v is not positive: how the Configs of
// this package and of package scheduler default a field left zero.
func Default[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Signal sends on a wake-up channel of capacity one without blocking.
func Signal(wake chan struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// Every returns a loop that runs once, then again each interval later (or
// as soon as wake fires), until its context ends; failed gets its errors
// while the context lasts.
func Every(interval time.Duration, wake <-chan struct{}, once func(context.Context) error, failed func(error)) func(context.Context) {
	return func(ctx context.Context) {
		for ctx.Err() == nil {
			if err := once(ctx); err != nil && ctx.Err() == nil {
				failed(err)
			}
			t := time.NewTimer(interval)
			select {
			case <-ctx.Done():
			case <-t.C:
			case <-wake:
			}
			t.Stop()
		}
	}
}

// Loops runs a part's background loops from its Start to its Shutdown: the
// Worker's and package scheduler's.
type Loops struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Go runs each loop in the background under a context that outlives ctx
// and that Stop cancels.
func (l *Loops) Go(ctx context.Context, loops ...func(context.Context)) {
	ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, loop := range loops {
		l.wg.Go(func() { loop(ctx) })
	}
}

// Stop cancels the loops' context, runs then (when set) and waits for the
// loops until ctx ends (its error). Loops never started have nothing to stop.
func (l *Loops) Stop(ctx context.Context, then func()) error {
	if l.cancel == nil {
		return nil
	}
	l.cancel()
	done := make(chan struct{})
	go func() {
		if then != nil {
			then()
		}
		l.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wake tells a running Worker that deliveries may have become due (it
// otherwise finds them within DefaultIdlePoll). It never blocks.
func (w *Worker) Wake() { Signal(w.wake) }

// Start makes the deliveries whose attempt was in flight when the previous
// process stopped due now (Queue.Recover: the interrupted attempt is
// uncounted; the endpoint deduplicates on X-Notices-Delivery), then runs
// the Worker and its Dispatcher in the background until Shutdown.
func (w *Worker) Start(ctx context.Context) error {
	if w.cancel != nil {
		return errors.New("worker: Worker started twice")
	}
	n, err := w.cfg.Queue.Recover(ctx, w.cfg.now())
	if err != nil {
		return fmt.Errorf("worker: recover deliveries in flight at the last stop: %w", err)
	}
	if n > 0 {
		w.log.Info("delivery attempts interrupted at the last stop are due again", "deliveries", n)
	}
	var actx context.Context
	actx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	w.loops.Go(ctx, func(stop context.Context) { w.loop(stop, actx) },
		Every(w.cfg.poll, nil, func(ctx context.Context) error { _, err := w.Dispatcher.RunOnce(ctx); return err },
			func(err error) { w.log.Error("matching arrived notices failed; retrying", "err", err) }))
	return nil
}

// loop claims while slots are free and sleeps until a slot frees, a
// delivery falls due, Wake is called, or idlePoll passes, until stop ends;
// ctx is the attempts'.
func (w *Worker) loop(stop, ctx context.Context) {
	var (
		inFlight = map[string]int{}
		total    int
		// The watch id of each attempt that ended; room for every one, as
		// attempts run on in w.loops after the loop returns.
		finished = make(chan string, concurrency)
	)
	finish := func(watchID string) {
		total--
		if inFlight[watchID]--; inFlight[watchID] <= 0 {
			delete(inFlight, watchID)
		}
	}
	for {
		// Claim when enough slots are free to be worth a transaction.
		free := concurrency - total
		if free > 0 && (total == 0 || free >= concurrency/4) {
			jobs, err := w.cfg.Queue.Claim(ctx, w.cfg.now(), store.ClaimRequest{Limit: free, Lease: w.lease, PerWatch: perWatch, InFlight: inFlight})
			if err != nil && ctx.Err() == nil {
				w.log.Error("claiming due deliveries failed; retrying", "err", err)
			}
			for _, j := range jobs {
				total++
				inFlight[j.WatchID]++
				w.loops.wg.Go(func() {
					// Logged by the Attempter; one cut off by shutdown records
					// nothing, and the next Start makes it due again.
					_, _ = w.attempter.Attempt(ctx, j)
					finished <- j.WatchID
				})
			}
			if len(jobs) == free {
				continue // full: more may be due
			}
		}
		sleep := w.cfg.idlePoll
		if next, ok, err := w.cfg.Queue.NextDue(ctx); err == nil && ok {
			// A due delivery not claimed belongs to a busy watch, whose
			// finishing attempt wakes the loop.
			if d := next.Sub(w.cfg.now()); d > 0 && d < sleep {
				sleep = d
			}
		}
		select {
		case <-stop.Done():
			return
		case id := <-finished:
			finish(id)
		case <-w.wake:
		case <-time.After(sleep):
		}
		// Take every other finished attempt (the loop is the only reader).
		for len(finished) > 0 {
			finish(<-finished)
		}
	}
}

// Shutdown stops matching (a round cut off writes nothing: Enqueue is one
// transaction) and claiming, and waits for the attempts in flight to be
// recorded. When ctx ends first, the rest are cancelled and left
// unrecorded: the next Start retries them.
func (w *Worker) Shutdown(ctx context.Context) error {
	if err := w.loops.Stop(ctx, nil); err != nil {
		w.cancel()
		w.loops.wg.Wait()
		return fmt.Errorf("worker: delivery attempts still in flight at the shutdown deadline were cancelled; they are retried at the next start: %w", err)
	}
	return nil
}
