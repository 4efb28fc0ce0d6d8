//go:build sqlite_fts5

package collector

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestNewValidatesSource(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "x.jsonl")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		source  string
		wantErr string
	}{
		{"", "no source"},
		{"   ", "no source"},
		{"https://feed.example/notices.jsonl", ""},
		{"HTTP://feed.example/notices.jsonl", ""},
		{"http://", "not a valid http(s) URL"},
		{"ftp://feed.example/notices.jsonl", "only http and https"},
		{dir, ""},
		{filepath.Join(dir, "missing"), "create it or set NOTICES_SOURCE"},
		{file, "is a file, not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.source, func(t *testing.T) {
			_, err := New(e.config(tc.source), e.st)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("New(%q): %v", tc.source, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("New(%q) error %v, want one mentioning %q", tc.source, err, tc.wantErr)
			}
		})
	}
	cfg := e.config(dir)
	cfg.Interval = -time.Second
	if _, err := New(cfg, e.st); err == nil {
		t.Error("New accepted a negative interval")
	}
	if _, err := New(e.config(dir), nil); err == nil {
		t.Error("New accepted no store")
	}
}

// fakeTimer replaces the loop's timer: each wait is reported on waits and
// ends when the test sends on fire.
type fakeTimer struct {
	waits chan time.Duration
	fire  chan time.Time
}

func installFakeTimer(c *Collector) *fakeTimer {
	ft := &fakeTimer{waits: make(chan time.Duration, 16), fire: make(chan time.Time)}
	c.after = func(d time.Duration) <-chan time.Time {
		ft.waits <- d
		return ft.fire
	}
	return ft
}

func TestLoopBacksOffAndRecovers(t *testing.T) {
	e := newEnv(t)
	fs := newFeedServer(t, readFile(t, "testdata/feed.jsonl"))
	fs.status = http.StatusInternalServerError
	cfg := e.config(fs.URL)
	cfg.Rand = func() float64 { return 0.75 } // +10%
	c := e.collector(t, cfg)
	ft := installFakeTimer(c)
	c.Start(context.Background())

	if d := <-ft.waits; d != 33*time.Second {
		t.Errorf("wait after the first failure %v, want 30s +10%%", d)
	}
	if s := c.Status(); s.State != StateFailing || s.ConsecutiveFailures != 1 {
		t.Errorf("status %+v, want failing once", s)
	}
	ft.fire <- time.Time{}
	if d := <-ft.waits; d != 66*time.Second {
		t.Errorf("wait after the second failure %v, want 1m +10%%", d)
	}
	fs.set(func(fs *feedServer) { fs.status = 0 })
	ft.fire <- time.Time{}
	if d := <-ft.waits; d != time.Hour {
		t.Errorf("wait after a success %v, want the interval", d)
	}
	if s := c.Status(); s.State != StateIdle || s.ConsecutiveFailures != 0 || s.NoticesCollected != 3 {
		t.Errorf("status %+v, want idle with 3 collected", s)
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := fs.count(); n != 3 {
		t.Errorf("the feed saw %d requests, want 3", n)
	}
	if runs := e.log.runs(t); len(runs) != 3 {
		t.Errorf("%d run records logged, want 3", len(runs))
	}
}

// blockingFeed is a feed that answers the first lines and then waits for
// release (or for the request to be cancelled) before the last one.
func blockingFeed(t *testing.T) (fs *feedServer, entered, release chan struct{}) {
	feed := readFile(t, "testdata/feed.jsonl")
	lines := bytes.SplitAfter(feed, []byte("\n"))
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	fs = newFeedServer(t, nil)
	fs.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Write(lines[0])
		w.(http.Flusher).Flush()
		once.Do(func() { close(entered) })
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Write(lines[1])
		w.Write(lines[2])
	}
	return fs, entered, release
}

func TestShutdownWaitsForTheRun(t *testing.T) {
	e := newEnv(t)
	fs, entered, release := blockingFeed(t)
	c := e.collector(t, e.config(fs.URL))
	installFakeTimer(c)
	c.Start(context.Background())
	<-entered

	shut := make(chan error, 1)
	go func() { shut <- c.Shutdown(context.Background()) }()
	c.loopMu.Lock()
	stop := c.stop
	c.loopMu.Unlock()
	<-stop // Shutdown has begun while the run is in flight
	if s := c.Status(); s.State != StateRunning {
		t.Errorf("state %q during Shutdown, want running", s.State)
	}
	close(release)
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// The run finished rather than being cancelled, and no other started.
	if s := c.Status(); s.State != StateIdle || s.NoticesCollected != 3 {
		t.Errorf("status after Shutdown %+v, want the run completed with 3 collected", s)
	}
	if n := len(e.notices(t)); n != 3 {
		t.Errorf("%d notices stored, want 3", n)
	}
	if n := fs.count(); n != 1 {
		t.Errorf("the feed saw %d requests, want 1", n)
	}
}

func TestShutdownDeadlineCancelsTheRun(t *testing.T) {
	e := newEnv(t)
	fs, entered, release := blockingFeed(t)
	defer close(release)
	c := e.collector(t, e.config(fs.URL))
	installFakeTimer(c)
	c.Start(context.Background())
	<-entered

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no time to wait
	if err := c.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown = %v, want context.Canceled", err)
	}
	// Shutdown returned after the run ended: it was cancelled.
	if s := c.Status(); s.State == StateRunning || s.ConsecutiveFailures != 1 || s.NoticesCollected != 0 {
		t.Errorf("status %+v, want the cancelled run over and counted as failed", s)
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

func TestShutdownNeverStarted(t *testing.T) {
	e := newEnv(t)
	c := e.collector(t, e.config(t.TempDir()))
	if err := c.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown of a collector never started: %v", err)
	}
}

func TestRunTimeout(t *testing.T) {
	e := newEnv(t)
	fs, _, release := blockingFeed(t)
	defer close(release)
	cfg := e.config(fs.URL)
	cfg.RunTimeout = time.Millisecond // the feed never finishes: the run always times out
	c := e.collector(t, cfg)
	_, err := c.RunOnce(context.Background())
	if err == nil || !strings.Contains(err.Error(), "did not finish within 1ms") {
		t.Fatalf("error %v, want the run timeout named", err)
	}
	if s := c.Status(); s.State != StateFailing {
		t.Errorf("state %q, want failing", s.State)
	}
}

// TestLeaderGatesRuns: while Config.Leader says no, the loop makes no run
// and only asks again every LeaderPoll; once it says yes, runs go on at the
// interval.
func TestLeaderGatesRuns(t *testing.T) {
	e := newEnv(t)
	fs := newFeedServer(t, readFile(t, "testdata/feed.jsonl"))
	cfg := e.config(fs.URL)
	var leader atomic.Bool
	cfg.Leader = leader.Load
	cfg.LeaderPoll = 7 * time.Second
	c := e.collector(t, cfg)
	ft := installFakeTimer(c)
	c.Start(context.Background())

	for i := range 3 {
		if d := <-ft.waits; d != 7*time.Second {
			t.Fatalf("wait %d as a non-leader %v, want the leader poll 7s", i, d)
		}
		if i == 2 {
			if n := fs.count(); n != 0 {
				t.Fatalf("a non-leader fetched the feed %d times", n)
			}
			// Leader from the end of this wait on: set before the timer
			// fires, so the loop cannot ask again before it is set.
			leader.Store(true)
		}
		ft.fire <- time.Time{}
	}
	if d := <-ft.waits; d != time.Hour {
		t.Errorf("wait after the leader's run %v, want the interval", d)
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := fs.count(); n != 1 {
		t.Errorf("the feed saw %d requests once leader, want 1", n)
	}
}
