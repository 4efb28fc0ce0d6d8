//go:build sqlite_fts5

package collector

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/test/testbin"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/sqlite"
)

// start is the fake clock's first reading.
var start = time.Date(2026, 3, 3, 1, 0, 0, 0, time.UTC)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: start} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// logBuffer collects JSON log records; safe for the loop's goroutine.
type logBuffer struct {
	testbin.LockedBuffer
}

// runs returns the "collector run" records written so far.
func (b *logBuffer) runs(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", line, err)
		}
		if rec["msg"] == "collector run" {
			out = append(out, rec)
		}
	}
	return out
}

// lastRun returns the last "collector run" record.
func (b *logBuffer) lastRun(t *testing.T) map[string]any {
	t.Helper()
	runs := b.runs(t)
	if len(runs) == 0 {
		t.Fatal("no collector run was logged")
	}
	return runs[len(runs)-1]
}

// env is a store, a clock and a log for one test.
type env struct {
	st    *sqlite.Store
	clock *fakeClock
	log   *logBuffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	clock := newClock()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "notices.db"), sqlite.WithClock(clock.Now))
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return &env{st: st, clock: clock, log: &logBuffer{}}
}

// config is a Config for source with the test's clock, log and a fixed
// jitter of 0.5 (no jitter).
func (e *env) config(source string) Config {
	return Config{
		Source:   source,
		Interval: time.Hour,
		Now:      e.clock.Now,
		Rand:     func() float64 { return 0.5 },
		Logger:   slog.New(slog.NewJSONHandler(e.log, nil)),
	}
}

func (e *env) collector(t *testing.T, cfg Config) *Collector {
	t.Helper()
	c, err := New(cfg, e.st)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// notices returns every stored notice keyed by source_id.
func (e *env) notices(t *testing.T) map[string]notice.Notice {
	t.Helper()
	page, err := e.st.Search(context.Background(), notice.SearchQuery{
		Filter: notice.Filter{IncludeDeregistration: true},
		Sort:   notice.SortPublishedDesc, Limit: 100, Page: 1,
	})
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	out := make(map[string]notice.Notice, len(page.Notices))
	for _, n := range page.Notices {
		out[n.SourceID] = n
	}
	return out
}

// latestSeq is the highest notice_seq assigned so far.
func (e *env) latestSeq(t *testing.T) int64 {
	t.Helper()
	idx, err := e.st.IndexStatus(context.Background())
	if err != nil {
		t.Fatalf("IndexStatus: %v", err)
	}
	return idx.LatestNoticeSeq
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// str dereferences a status string for messages; nil is "<nil>".
func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// num reads a JSON number field of a log record.
func num(rec map[string]any, key string) int {
	f, _ := rec[key].(float64)
	return int(f)
}
