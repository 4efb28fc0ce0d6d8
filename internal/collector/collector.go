// Package collector keeps the notice store fed from NOTICES_SOURCE: a
// directory where JSON Lines files are dropped, or an http(s) JSON Lines
// feed. It polls the source every interval (backing off with jitter after
// failures), writes through the same ingest path as `noticesd ingest`
// (idempotent by source_id, so the store's arrival pipeline sees each
// notice once) and reports its state for /health.
//
// Directory sources: each run reads the *.jsonl and *.jsonl.gz files
// directly in the directory, in name order, and moves each to done/ (every
// line loaded) or rejected/ (some lines, or the whole file, could not be
// read; a NAME.errors.txt report lies beside it). Only complete files may
// be visible under those names: write to a temporary name (a dotfile, or a
// name ending .tmp or .part, which are ignored) and rename it into place,
// which is atomic within one file system. A store failure leaves the file
// where it is for the next run.
//
// HTTP sources: conditional GETs (ETag / Last-Modified), gzip, and an
// optional since cursor given by the feed in the X-Notices-Next-Since
// header; see NextSinceHeader for the whole convention. With
// Config.StateFile the validators and cursor survive restarts.
//
// Status: notices_collected counts the new notices this process's
// collector stored since it started (not persisted). A failed run (also
// one cancelled by shutdown or cut by RunTimeout) makes the state
// "failing" until a run succeeds; meanwhile runs are retried after 30s,
// 1m, 2m, ... (±20%), never less often than every Interval (see Delay).
// Lines that are not notices, and dropped files that cannot be read, are
// reported but do not fail a run: the source itself is working.
package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// Defaults of Config.
const (
	DefaultInterval   = 15 * time.Minute
	DefaultRunTimeout = 30 * time.Minute
	// DefaultBodyIdle is how long a feed body may stall, as long as the
	// wait for its headers.
	DefaultBodyIdle = time.Minute
	// DefaultBatchSize is the number of notices per store write. The
	// collector runs inside serve, beside the API's own writes, so it keeps
	// transactions short (about a third of a second each on the benchmark
	// machine) where `noticesd ingest` writes ten times as many at once
	// for speed (ingest.DefaultNoticeBatch).
	DefaultBatchSize = 5000
)

// Config configures a Collector. Only Source is required.
type Config struct {
	// Source is an existing directory or an http(s) URL serving JSON Lines.
	Source string
	// Interval is the time between the starts of successful runs; 0 is
	// DefaultInterval.
	Interval time.Duration
	// HTTPClient fetches an http(s) source; nil uses a client whose
	// transport times out waiting for response headers after a minute.
	HTTPClient *http.Client
	// StateFile, when set, is where an http(s) source's validators (ETag,
	// Last-Modified) and since cursor are kept across restarts and shared
	// with one-off runs (`noticesd collect --once`); "" keeps them in
	// memory only. Delete the file to make the next run fetch everything
	// again (harmless: ingest is idempotent).
	StateFile string
	// RunTimeout bounds one run; 0 is DefaultRunTimeout.
	RunTimeout time.Duration
	// BodyIdle is how long an http(s) source's body may send nothing
	// before the run fails; 0 is DefaultBodyIdle.
	BodyIdle time.Duration
	// BatchSize is the number of notices per store write; 0 is
	// DefaultBatchSize.
	BatchSize int
	// Now is the clock for status timestamps and durations; nil is time.Now.
	Now func() time.Time
	// Rand returns the jitter in [0, 1); nil is math/rand/v2.Float64.
	Rand func() float64
	// Logger receives one record per run; nil logs JSON to standard error.
	Logger *slog.Logger
	// OnRun, if set, is called with the result of every run (for
	// metrics), after it is logged.
	OnRun func(RunResult)
	// Leader, if set, is asked before each scheduled run whether this
	// process may collect now; while it says no the loop only waits and
	// asks again every LeaderPoll. The scale backend's serve replicas pass
	// a Redis lease here, so only one of them collects at a time.
	Leader func() bool
	// LeaderPoll is how often a process that is not the leader asks again;
	// 0 is DefaultLeaderPoll.
	LeaderPoll time.Duration
	// State, when set, keeps an http(s) source's validators and cursor in
	// place of StateFile (scale mode: a Redis key written only by the
	// lease holder, see StateStore).
	State StateStore
}

// ErrLeaseLost stops a run whose process no longer holds the collector's
// lease (Config.Leader said no before a store write, or the fenced state
// store refused the cursor).
var ErrLeaseLost = errors.New("this process no longer holds the collector lease; another replica collects now")

// leaderWriter asks leader before every store write, so a process that
// lost the lease stops within one batch rather than at the end of a run
// that may last minutes.
type leaderWriter struct {
	w      store.NoticeWriter
	leader func() bool
}

// UpsertNotices implements store.NoticeWriter.
func (l leaderWriter) UpsertNotices(ctx context.Context, batch []notice.Notice) (store.UpsertResult, error) {
	if !l.leader() {
		return store.UpsertResult{}, ErrLeaseLost
	}
	return l.w.UpsertNotices(ctx, batch)
}

// DefaultLeaderPoll is how often a non-leader asks Config.Leader again.
const DefaultLeaderPoll = 5 * time.Second

// source is where notices are collected from: a directory or a feed.
type source interface {
	// run reads what is new into w, filling res. An error fails the run.
	run(ctx context.Context, w store.NoticeWriter, res *RunResult) error
}

// Collector polls one source into a store. It is safe for concurrent use.
// A nil *Collector reports the "disabled" status.
type Collector struct {
	cfg    Config
	w      store.NoticeWriter
	src    source
	shown  string // the source for logs and results, credentials redacted
	log    *slog.Logger
	after  func(time.Duration) <-chan time.Time // the loop's timer; tests replace it
	runMu  sync.Mutex                           // one run at a time
	loopMu sync.Mutex                           // guards the loop fields below
	stop   chan struct{}                        // closed by Shutdown
	done   chan struct{}                        // closed when the loop exits
	cancel context.CancelFunc                   // cancels the loop's runs

	mu          sync.Mutex // guards the status fields below
	running     bool
	lastRun     time.Time
	lastSuccess time.Time
	lastError   string
	failures    int
	collected   int64
}

// New checks cfg and returns a collector writing to w. Source must be an
// existing directory or an absolute http(s) URL.
func New(cfg Config, w store.NoticeWriter) (*Collector, error) {
	if w == nil {
		return nil, errors.New("collector: no store to write to")
	}
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("collector: interval %v is negative; give a positive duration such as 15m", cfg.Interval)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = DefaultRunTimeout
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.BodyIdle <= 0 {
		cfg.BodyIdle = DefaultBodyIdle
	}
	if cfg.LeaderPoll <= 0 {
		cfg.LeaderPoll = DefaultLeaderPoll
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	c := &Collector{cfg: cfg, w: w, after: time.After}
	src := strings.TrimSpace(cfg.Source)
	switch {
	case src == "":
		return nil, errors.New("collector: no source; set NOTICES_SOURCE to a directory or an http(s) URL of a JSON Lines feed")
	case hasScheme(src, "http") || hasScheme(src, "https"):
		u, err := url.Parse(src)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("collector: source %q is not a valid http(s) URL; give one like https://example.org/notices.jsonl", redact(src))
		}
		c.shown = redact(src)
		c.src = newFeed(u, cfg, c.shown)
	case strings.Contains(src, "://"):
		return nil, fmt.Errorf("collector: source %q: only http and https URLs are supported; or give a directory path", redact(src))
	default:
		fi, err := os.Stat(src)
		if err != nil {
			return nil, fmt.Errorf("collector: source directory %s: %w; create it or set NOTICES_SOURCE to an existing directory or an http(s) URL", src, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("collector: source %s is a file, not a directory; give the directory files are dropped into, or an http(s) URL", src)
		}
		c.shown = src
		c.src = &dropDir{dir: src, batch: cfg.BatchSize}
	}
	c.cfg.Source = src
	c.log = cfg.Logger.With("component", "collector")
	return c, nil
}

// hasScheme reports whether s starts with scheme:// (any case).
func hasScheme(s, scheme string) bool {
	return len(s) >= len(scheme)+3 && strings.EqualFold(s[:len(scheme)+3], scheme+"://")
}

// redact removes user info and the query string from a URL, which may
// carry credentials; other strings are returned as they are.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.User == nil && u.RawQuery == "") {
		return s
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}

// Start runs the collector in the background: a run at once, then each
// next run Delay(Interval, consecutive failures, jitter) after the previous
// one ended (so Interval apart while the source is healthy, sooner while
// it is failing). Cancelling ctx stops the loop and cancels a run in
// progress; Shutdown stops it gracefully. Start on a started collector
// does nothing.
func (c *Collector) Start(ctx context.Context) {
	c.loopMu.Lock()
	defer c.loopMu.Unlock()
	if c.done != nil {
		return
	}
	ctx, c.cancel = context.WithCancel(ctx)
	c.stop = make(chan struct{})
	c.done = make(chan struct{})
	go c.loop(ctx, c.stop, c.done)
}

func (c *Collector) loop(ctx context.Context, stop, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		if c.cfg.Leader != nil && !c.cfg.Leader() {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-c.after(c.cfg.LeaderPoll):
			}
			continue
		}
		c.RunOnce(ctx)
		wait := Delay(c.cfg.Interval, c.Status().ConsecutiveFailures, c.cfg.Rand())
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-c.after(wait):
		}
	}
}

// Shutdown stops the loop started by Start: no new run starts, and a run in
// progress is allowed to finish until ctx ends, when it is cancelled (a
// cancelled run leaves a dropped file in place and keeps the feed's
// cursor, so nothing is lost). It returns ctx's error if it had to cancel.
// Shutdown on a collector never started returns nil.
func (c *Collector) Shutdown(ctx context.Context) error {
	c.loopMu.Lock()
	stop, done, cancel := c.stop, c.done, c.cancel
	if stop != nil {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}
	c.loopMu.Unlock()
	if done == nil {
		return nil
	}
	defer cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		cancel()
		<-done
		return ctx.Err()
	}
}

// RunOnce runs the collector once now, waiting for a run already in
// progress to end first. It is the manual trigger (`noticesd collect
// --once`) and what the loop calls. The error is the run's failure, also
// reported by Status and logged.
func (c *Collector) RunOnce(ctx context.Context) (RunResult, error) {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	start := c.cfg.Now()
	c.mu.Lock()
	c.running = true
	c.lastRun = start
	c.mu.Unlock()

	res := RunResult{Source: c.shown}
	runCtx, cancel := context.WithTimeout(ctx, c.cfg.RunTimeout)
	w := c.w
	if c.cfg.Leader != nil {
		w = leaderWriter{w: w, leader: c.cfg.Leader}
	}
	err := c.src.run(runCtx, w, &res)
	if err != nil && errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("run did not finish within %v (%w); a slow or huge source needs a longer run timeout", c.cfg.RunTimeout, err)
	}
	cancel()
	res.Duration = c.cfg.Now().Sub(start)
	lost := errors.Is(err, ErrLeaseLost)
	switch {
	case lost:
		res.Outcome = OutcomeLeaseLost
		res.Error = err.Error()
	case err != nil:
		res.Outcome = OutcomeFailed
		res.Error = err.Error()
	}

	c.mu.Lock()
	c.running = false
	c.collected += int64(res.New)
	switch {
	case lost:
		// Not a failure of the source: another replica took over.
	case err != nil:
		c.failures++
		c.lastError = res.Error
	default:
		c.failures = 0
		c.lastError = ""
		c.lastSuccess = start
	}
	c.mu.Unlock()
	c.logRun(res)
	if c.cfg.OnRun != nil {
		c.cfg.OnRun(res)
	}
	return res, err
}

// logRun writes the run's log record: info when it succeeded cleanly,
// warn when lines or files were rejected, error when it failed.
func (c *Collector) logRun(res RunResult) {
	level := slog.LevelInfo
	attrs := []slog.Attr{
		slog.String("source", res.Source),
		slog.String("outcome", res.Outcome),
		slog.Int64("duration_ms", res.Duration.Milliseconds()),
		slog.Int("read", res.Read),
		slog.Int("new", res.New),
		slog.Int("updated", res.Updated),
		slog.Int("rejected", res.Rejected),
	}
	if res.Files != nil {
		attrs = append(attrs, slog.Int("files", len(res.Files)))
	}
	if res.ExitCode() == ExitRejected {
		level = slog.LevelWarn
		var why []string
		for _, f := range res.Files {
			if f.Error != "" {
				why = append(why, f.Name+": "+f.Error)
			}
		}
		if len(why) > 0 {
			attrs = append(attrs, slog.Any("rejected_files", why))
		}
	}
	if len(res.rejections) > 0 {
		attrs = append(attrs, slog.Any("rejected_lines", res.rejections))
	}
	if res.Outcome == OutcomeLeaseLost {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", res.Error))
	}
	if res.Outcome == OutcomeFailed {
		level = slog.LevelError
		attrs = append(attrs, slog.String("error", res.Error))
	}
	c.log.LogAttrs(context.Background(), level, "collector run", attrs...)
}

// Status reports the collector's state for /health.
func (c *Collector) Status() Status {
	if c == nil {
		return Status{State: StateDisabled}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	src := c.cfg.Source
	s := Status{
		State:               StateIdle,
		Source:              &src,
		ConsecutiveFailures: c.failures,
		NoticesCollected:    c.collected,
	}
	switch {
	case c.running:
		s.State = StateRunning
	case c.failures > 0:
		s.State = StateFailing
	}
	s.LastRunAt = timestamp(c.lastRun)
	s.LastSuccessAt = timestamp(c.lastSuccess)
	if c.failures > 0 {
		e := c.lastError
		s.LastError = &e
	}
	return s
}

func timestamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := notice.Timestamp(t)
	return &s
}
