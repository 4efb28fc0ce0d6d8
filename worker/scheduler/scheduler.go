// Package scheduler runs scale mode's webhook delivery on asynq: arrival
// matching (the Redis store's MatchArrivals, whose commits make the
// deliveries), then one task per delivery (TaskID = the delivery id), each
// attempt made by worker.Attempter against the Redis delivery ledger
// (docs/architecture.md, "How an arrival becomes a delivery in scale
// mode"). Any number of processes may run one.
package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/lease"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/webhook"
	"github.com/noticesd/noticesd/worker"
)

// TaskType is the asynq type of a delivery attempt task.
const TaskType = "webhook:deliver"

// Defaults.
const (
	// DefaultConcurrency is the most attempts one process runs at once.
	DefaultConcurrency = 32
	// checkInterval is how often asynq moves due scheduled and retry tasks
	// to pending and the outbox is pumped: a retry is at most this late.
	checkInterval = 100 * time.Millisecond
	// DefaultSweepEvery is how often pending deliveries are checked for a
	// task of their own.
	DefaultSweepEvery = 30 * time.Second
	// DefaultRecoverEvery is how often attempts whose lease ran out (their
	// worker died) are handed to recovery tasks.
	DefaultRecoverEvery = time.Second
	// maxRetry is asynq's retry bound, never what ends a delivery: the
	// ledger decides when one is dead.
	maxRetry = 1000
	// taskCheckInterval is how long an idle asynq processor waits before
	// looking for a pending task: short, so a new task starts at once.
	taskCheckInterval = 10 * time.Millisecond
	// leaseMargin bounds the rest of an attempt (reading the notice,
	// recording the outcome) beside the Sender's timeout.
	leaseMargin = 5 * time.Second
	// attemptLease is how long an attempt is held in the ledger without a
	// renewal (every third of it while it runs): a dead worker's attempt
	// is made again at most this long (plus RecoverEvery) after.
	attemptLease = 10 * time.Second
	// matchIdle is how long arrival matching waits when nothing was left
	// to match.
	matchIdle = 200 * time.Millisecond
)

// QueueName is the asynq queue of the namespace's deliveries.
func QueueName(namespace string) string { return namespace + ":deliveries" }

// Config configures a Scheduler. Redis, Namespace, Ledger and Sender are
// required.
type Config struct {
	Redis     redis.UniversalClient
	Namespace string
	Ledger    *redisstore.Store
	Sender    *webhook.Sender
	// RetryUnit is NOTICES_DELIVERY_RETRY_UNIT; 0 means 10 minutes.
	RetryUnit time.Duration
	// Concurrency bounds the attempts in flight in this process; 0 means
	// DefaultConcurrency.
	Concurrency int
	// SweepEvery: see DefaultSweepEvery.
	SweepEvery time.Duration
	// RecoverEvery: see DefaultRecoverEvery.
	RecoverEvery time.Duration
	// Now is the clock of outcomes; nil means time.Now.
	Now func() time.Time
	// Logger; nil discards.
	Logger *slog.Logger
}

// Scheduler runs delivery on asynq; Start and Shutdown it.
type Scheduler struct {
	cfg       Config
	log       *slog.Logger
	queue     string
	client    *asynq.Client
	inspector *asynq.Inspector
	server    *asynq.Server
	attempter worker.Attempter

	wake  chan struct{}
	loops worker.Loops
}

// New returns a Scheduler with cfg's zero fields defaulted.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Redis == nil || cfg.Ledger == nil || cfg.Sender == nil || cfg.Namespace == "" {
		return nil, errors.New("scheduler: Config needs Redis, Namespace, Ledger and Sender")
	}
	worker.Default(&cfg.RetryUnit, 10*time.Minute)
	worker.Default(&cfg.Concurrency, DefaultConcurrency)
	worker.Default(&cfg.SweepEvery, DefaultSweepEvery)
	worker.Default(&cfg.RecoverEvery, DefaultRecoverEvery)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	s := &Scheduler{cfg: cfg, log: log, queue: QueueName(cfg.Namespace),
		client:    asynq.NewClientFromRedisClient(cfg.Redis),
		inspector: asynq.NewInspectorFromRedisClient(cfg.Redis),
		wake:      make(chan struct{}, 1)}
	s.attempter = worker.Attempter{Sender: cfg.Sender, Ledger: cfg.Ledger, RetryUnit: cfg.RetryUnit, Now: cfg.Now, Log: log}
	s.server = asynq.NewServerFromRedisClient(cfg.Redis, asynq.Config{
		Concurrency:              cfg.Concurrency,
		Queues:                   map[string]int{s.queue: 1},
		RetryDelayFunc:           retryDelay,
		DelayedTaskCheckInterval: checkInterval,
		TaskCheckInterval:        taskCheckInterval,
		ShutdownTimeout:          cfg.Sender.Timeout() + 5*time.Second, // then handed back to asynq
		LogLevel:                 asynq.WarnLevel,
		Logger:                   asynqLogger{log.With("part", "asynq")},
	})
	return s, nil
}

// retryError asks asynq for the next attempt after exactly wait.
type retryError struct {
	wait      time.Duration
	lastError string
}

func (e *retryError) Error() string {
	return fmt.Sprintf("attempt failed (%s); next attempt in %s", e.lastError, e.wait)
}

// retryDelay is asynq's RetryDelayFunc: the ledger's wait when the handler
// decided a retry; else (a backend unreachable, not the endpoint) one
// second, doubling with each run up to a minute.
func retryDelay(n int, err error, _ *asynq.Task) time.Duration {
	var re *retryError
	if errors.As(err, &re) {
		return re.wait
	}
	return min(time.Second<<min(n, 6), time.Minute)
}

// Enqueue makes the task of one delivery, due at once: an existing one is
// run now when scheduled or retrying (the ledger still decides when the
// attempt is made), replaced when finished or archived. False: it runs.
func (s *Scheduler) Enqueue(ctx context.Context, ref redisstore.Ref) (bool, error) {
	if ok, err := s.add(ctx, ref.DeliveryID, ref); ok || err != nil {
		return ok, err
	}
	info, err := s.inspector.GetTaskInfo(s.queue, ref.DeliveryID)
	switch {
	case errors.Is(err, asynq.ErrTaskNotFound):
	case err != nil:
		return false, err
	case info.State == asynq.TaskStateActive:
		return false, nil
	case info.State == asynq.TaskStateScheduled || info.State == asynq.TaskStateRetry:
		return true, ignoreNotFound(s.inspector.RunTask(s.queue, ref.DeliveryID))
	case info.State == asynq.TaskStateArchived || info.State == asynq.TaskStateCompleted:
		if err := ignoreNotFound(s.inspector.DeleteTask(s.queue, ref.DeliveryID)); err != nil {
			return false, err
		}
	default:
		return true, nil // pending: it runs soon
	}
	return s.add(ctx, ref.DeliveryID, ref)
}

// add makes a delivery task of ref named id on the namespace's queue;
// false: a task of that id is kept (asynq.ErrTaskIDConflict).
func (s *Scheduler) add(ctx context.Context, id string, ref redisstore.Ref) (bool, error) {
	b, _ := json.Marshal(ref) // strings and an int: it cannot fail
	_, err := s.client.EnqueueContext(ctx, asynq.NewTask(TaskType, b), asynq.TaskID(id), asynq.Queue(s.queue), asynq.MaxRetry(maxRetry))
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return false, nil
	}
	return err == nil, err
}

func ignoreNotFound(err error) error {
	if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return nil
	}
	return err
}

// maxEarly is the longest an attempt that asynq started early waits in
// the handler (asynq keeps due times in whole seconds).
const maxEarly = 2 * time.Second

// handle is the asynq handler of one delivery task.
func (s *Scheduler) handle(ctx context.Context, t *asynq.Task) error {
	var ref redisstore.Ref
	if err := json.Unmarshal(t.Payload(), &ref); err != nil || ref.DeliveryID == "" {
		return fmt.Errorf("scheduler: task payload %q is not a delivery reference: %v: %w", t.Payload(), err, asynq.SkipRetry)
	}
	var b redisstore.Begun
	task, _ := asynq.GetTaskID(ctx)
	for {
		var err error
		if b, err = s.cfg.Ledger.Begin(ctx, ref, s.cfg.Now(), redisstore.Hold{Task: task, Lease: attemptLease}); err != nil {
			if ctx.Err() == nil { // a secret no key opens, Redis unreachable: the operator must see why
				s.log.Warn("delivery attempt not begun", "watch", ref.WatchID, "delivery", ref.DeliveryID, "err", err)
			}
			return err
		}
		if b.State != redisstore.BeginEarly {
			break
		}
		wait := b.Until.Sub(s.cfg.Now())
		if wait > maxEarly {
			return &retryError{wait: wait, lastError: "not due yet"}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	if b.State != redisstore.BeginAttempt {
		return nil // done, held, or busy (another task carries it on)
	}
	ctx, release := s.hold(ctx, ref, task)
	defer release()
	job := b.Job
	n, ok, err := s.cfg.Ledger.NoticeBySeq(ctx, ref.NoticeSeq)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("scheduler: notice_seq %d of delivery %s is not readable from the notice store yet", ref.NoticeSeq, ref.DeliveryID)
	}
	job.Notice = n
	d, err := s.attempter.Attempt(ctx, job)
	if err != nil {
		return err // interrupted (asynq runs it again; the ledger counts it once) or not recorded
	}
	if d.Status == delivery.Pending {
		return &retryError{wait: d.Wait, lastError: d.LastError}
	}
	return nil
}

// hold renews the lease of task's attempt of ref every third of
// attemptLease until release, and cancels the returned context when the
// attempt is no longer task's (taken over after a stall).
func (s *Scheduler) hold(ctx context.Context, ref redisstore.Ref, task string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := lease.Keep(attemptLease/3, func(rctx context.Context) {
		held, err := s.cfg.Ledger.Renew(rctx, ref, task, s.cfg.Now().Add(attemptLease))
		switch {
		case ctx.Err() != nil:
		case err != nil:
			s.log.Warn("delivery attempt's lease not renewed", "watch", ref.WatchID, "delivery", ref.DeliveryID, "err", err)
		case !held:
			s.log.Info("delivery attempt no longer held by this task (ended, or taken over after its lease ran out)", "watch", ref.WatchID, "delivery", ref.DeliveryID)
			cancel()
		}
	})
	return ctx, func() { stop(); cancel() }
}

// Start starts the asynq server and the loops around it: arrival
// matching, the outbox pump, the sweep and the recovery of lapsed attempts.
func (s *Scheduler) Start(ctx context.Context) error {
	mux := asynq.NewServeMux()
	mux.HandleFunc(TaskType, s.handle)
	loops := []func(context.Context){
		worker.Every(matchIdle, nil, s.matchOnce, func(err error) { s.log.Error("matching arrived notices failed; retrying", "err", err) }),
		s.every(checkInterval, s.wake, "scheduling deliveries", s.PumpOnce),
		s.every(s.cfg.SweepEvery, nil, "sweeping pending deliveries", func(ctx context.Context) error { _, err := s.SweepOnce(ctx); return err }),
		s.every(s.cfg.RecoverEvery, nil, "recovering delivery attempts whose worker stopped", s.RecoverOnce),
	}
	if err := s.server.Start(mux); err != nil {
		return fmt.Errorf("scheduler: start the asynq server: %w", err)
	}
	s.loops.Go(ctx, loops...)
	return nil
}

// Shutdown stops taking work and waits for attempts in flight (up to
// the Sender's timeout plus 5 s; the rest go back to the queue).
func (s *Scheduler) Shutdown(ctx context.Context) error {
	if err := s.loops.Stop(ctx, s.server.Shutdown); err != nil {
		return fmt.Errorf("scheduler: shutdown did not finish in time: %w", err)
	}
	return nil // the Redis client is the caller's to close
}

// Wake makes the pump look at the outbox now.
func (s *Scheduler) Wake() { worker.Signal(s.wake) }

// every returns a loop that runs once, then again each interval later (or
// as soon as wake fires) until its context ends, logging failures as what.
func (s *Scheduler) every(interval time.Duration, wake <-chan struct{}, what string, once func(context.Context) error) func(context.Context) {
	return worker.Every(interval, wake, once, func(err error) { s.log.Warn(what, "err", err) })
}

// matchOnce matches the published notices not yet matched, a commit at a
// time (each commits whole or not at all: a shutdown loses nothing), and
// wakes the pump after each commit that made deliveries' outbox entries.
// Any number of processes may match at once; each notice is matched once.
func (s *Scheduler) matchOnce(ctx context.Context) error {
	for {
		moved, err := s.cfg.Ledger.MatchArrivals(ctx, redisstore.ArrivalBatch)
		if err != nil || moved == 0 {
			return err
		}
		s.Wake()
	}
}

// PumpOnce makes the tasks of every due outbox entry.
func (s *Scheduler) PumpOnce(ctx context.Context) error {
	for {
		claimed, err := s.cfg.Ledger.ClaimDue(ctx, s.cfg.Now(), 10*time.Second, 500)
		if err != nil || len(claimed) == 0 {
			return err
		}
		var done, later []redisstore.Ref
		for _, c := range claimed {
			ok, err := s.Enqueue(ctx, c.Ref)
			if err != nil {
				return err
			}
			if ok {
				done = append(done, c.Ref)
			} else {
				later = append(later, c.Ref)
			}
		}
		if err := s.cfg.Ledger.Scheduled(ctx, done, later, s.cfg.Now().Add(250*time.Millisecond)); err != nil {
			return err
		}
		if len(claimed) < 500 {
			return nil
		}
	}
}

// SweepOnce finishes watch changes a stopped process left half done
// (redisstore.Store.Reconcile), then puts in the outbox every pending
// delivery overdue by more than one attempt (the Sender's timeout plus
// leaseMargin) without a live asynq task, and returns how many it found.
func (s *Scheduler) SweepOnce(ctx context.Context) (int, error) {
	if n, err := s.cfg.Ledger.Reconcile(ctx, s.cfg.Now()); err != nil {
		return 0, err
	} else if n > 0 {
		s.log.Info("watch changes left half done were finished", "changes", n)
	}
	// asynq drops a process from asynq:servers and asynq:workers when it
	// stops cleanly; listing them drops the killed ones (heartbeat expired).
	if _, err := s.inspector.Servers(); err != nil {
		s.log.Warn("dropping stopped worker processes from asynq's server list", "err", err)
	}
	refs, err := s.cfg.Ledger.Pending(ctx, s.cfg.Now().Add(-s.cfg.Sender.Timeout()-leaseMargin))
	if err != nil {
		return 0, err
	}
	var lost []redisstore.Ref
	for _, r := range refs {
		info, err := s.inspector.GetTaskInfo(s.queue, r.DeliveryID)
		if ignoreNotFound(err) != nil {
			return 0, err
		}
		// No task, or one that gave up or ended: Enqueue replaces it.
		if err != nil || info.State == asynq.TaskStateArchived || info.State == asynq.TaskStateCompleted {
			lost = append(lost, r)
		}
	}
	if err := s.cfg.Ledger.Reschedule(ctx, lost, s.cfg.Now()); err != nil {
		return 0, err
	}
	if len(lost) > 0 {
		s.log.Info("pending deliveries without a task were scheduled again", "deliveries", len(lost))
		s.Wake()
	}
	return len(lost), nil
}

// RecoverOnce gives a recovery task, <delivery id>@<lease end ms>, to
// every attempt whose lease ran out without an outcome: its worker died
// (why and what follows: docs/architecture.md, "How an arrival becomes a
// delivery in scale mode", step 6).
func (s *Scheduler) RecoverOnce(ctx context.Context) error {
	lapsed, err := s.cfg.Ledger.LapsedAttempts(ctx, s.cfg.Now(), attemptLease, 100)
	if err != nil {
		return err
	}
	for _, l := range lapsed {
		if _, err := s.add(ctx, l.DeliveryID+"@"+strconv.FormatInt(l.DueMS, 10), l.Ref); err != nil {
			return err
		}
	}
	if len(lapsed) > 0 {
		s.log.Info("delivery attempts whose worker stopped were handed to recovery tasks", "attempts", len(lapsed))
	}
	return nil
}

// Counts are the delivery queue's task counts, from asynq's Inspector.
type Counts struct {
	Pending   int `json:"pending"`
	Active    int `json:"active"`
	Scheduled int `json:"scheduled"`
	Retry     int `json:"retry"`
	Archived  int `json:"archived"`
}

// QueueCounts reads the namespace's delivery queue counts (all zero before
// the first task).
func QueueCounts(rdb redis.UniversalClient, namespace string) (Counts, error) {
	insp := asynq.NewInspectorFromRedisClient(rdb)
	// asynq registers a queue with its first task; GetQueueInfo's error for
	// an unknown one wraps no exported sentinel.
	queues, err := insp.Queues()
	if err != nil {
		return Counts{}, fmt.Errorf("scheduler: list the queues: %w", err)
	}
	if !slices.Contains(queues, QueueName(namespace)) {
		return Counts{}, nil
	}
	info, err := insp.GetQueueInfo(QueueName(namespace))
	if err != nil {
		return Counts{}, fmt.Errorf("scheduler: read the delivery queue: %w", err)
	}
	return Counts{Pending: info.Pending, Active: info.Active, Scheduled: info.Scheduled, Retry: info.Retry, Archived: info.Archived}, nil
}

// asynqLogger sends asynq's log lines to slog.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }
