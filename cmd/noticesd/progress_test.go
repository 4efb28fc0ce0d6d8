package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestReindexLines: a reindex reported to a log writes a line per kind
// every interval on the injected clock (rows, percent, rows/s, ETA) and
// one line when each kind is done, however often it is called.
func TestReindexLines(t *testing.T) {
	var out strings.Builder
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &reindexLines{w: &out, now: func() time.Time { return at }, interval: 5 * time.Second}
	step := func(d time.Duration, kind string, done, total int64) {
		at = at.Add(d)
		r.report(kind, done, total)
	}
	step(0, "notices", 0, 1000)                  // the start: no line
	step(2*time.Second, "notices", 200, 1000)    // 2 s: none yet
	step(3*time.Second, "notices", 500, 1000)    // 5 s: a line
	step(time.Second, "notices", 600, 1000)      // 6 s: none
	step(5*time.Second, "notices", 1000, 1000)   // done: a line
	step(time.Second, "notices", 1000, 1000)     // done again: none
	step(0, "register", 0, 4000)                 // the next kind
	step(10*time.Second, "register", 4000, 4000) // done
	want := "reindex notices: 500 / 1000 rows (50%), 100 rows/s, ETA 5s\n" +
		"reindex notices: 1000 rows copied in 11s (90 rows/s)\n" +
		"reindex register: 4000 rows copied in 10s (400 rows/s)\n"
	if out.String() != want {
		t.Errorf("lines\n%q\nwant\n%q", out.String(), want)
	}
}

// TestIngestOptionsProgress: ingest (and demo's first load) draws a bar on
// a terminal and writes lines anywhere else; --quiet shows neither.
func TestIngestOptionsProgress(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tt := range []struct {
		name     string
		stderr   io.Writer
		quiet    bool
		progress bool
		lines    bool
	}{
		{"a file (a container log)", f, false, true, true},
		{"a pipe or buffer", &bytes.Buffer{}, false, true, true},
		{"quiet", f, true, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opt := ingestOptions(tt.stderr, tt.quiet, 0)
			if (opt.Progress != nil) != tt.progress || opt.ProgressLines != tt.lines {
				t.Errorf("progress %v lines %v, want %v %v", opt.Progress != nil, opt.ProgressLines, tt.progress, tt.lines)
			}
		})
	}
}
