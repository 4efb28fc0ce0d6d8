package ingest

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Exit codes of a batch load (API.md operating contract).
const (
	ExitOK       = 0 // every line loaded
	ExitFailure  = 1 // the load failed: an error was returned
	ExitRejected = 3 // some lines were rejected (reported) and the rest loaded
)

// MaxListedRejections is how many rejected lines are listed one by one;
// the rest are only counted.
const MaxListedRejections = 100

// Options tune a load. The zero value is usable.
type Options struct {
	// Report receives one "FILE:LINE: reason" line per rejected line (the
	// first MaxListedRejections, then a count). nil discards them.
	Report io.Writer
	// Progress receives a progress bar redrawn in place; nil draws none.
	// Pass a terminal only (see TerminalProgress), unless ProgressLines.
	Progress io.Writer
	// ProgressLines makes Progress a log rather than a terminal (a
	// container or CI log, a pipe): a plain line every ProgressLineEvery
	// (rows, rows/s and, when the input's size is known, percent and ETA)
	// instead of a bar redrawn in place.
	ProgressLines bool
	// BatchSize is the number of rows per write call; 0 uses the default
	// (DefaultNoticeBatch, or the writer's own (store.BatchSizer: scale
	// mode), or DefaultRegisterBatch).
	BatchSize int
	// Now is the clock for Summary.Duration and the progress rate; nil is
	// time.Now.
	Now func() time.Time
}

func (o Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

func (o Options) batch(def int) int {
	if o.BatchSize > 0 {
		return o.BatchSize
	}
	return def
}

// Summary counts what a load did. Read counts the non-blank lines read
// (header excluded), so Read == Inserted + Updated + Rejected once a load
// completes.
type Summary struct {
	// Kind names what was loaded: "notices" or "register".
	Kind     string
	Read     int
	Inserted int
	Updated  int
	Rejected int
	Duration time.Duration
}

// String is the one-line summary, for example
// "notices: read 1000 inserted 990 updated 0 rejected 10 in 0.42s (2380 rows/s)".
func (s Summary) String() string {
	kind := s.Kind
	if kind == "" {
		kind = "ingest"
	}
	return fmt.Sprintf("%s: read %d inserted %d updated %d rejected %d in %.2fs (%d rows/s)",
		kind, s.Read, s.Inserted, s.Updated, s.Rejected, s.Duration.Seconds(), s.RowsPerSecond())
}

// RowsPerSecond is Read over Duration, rounded down; 0 when no time passed.
func (s Summary) RowsPerSecond() int {
	if s.Duration <= 0 {
		return 0
	}
	return int(float64(s.Read) / s.Duration.Seconds())
}

// ExitCode is ExitOK when every line loaded and ExitRejected when some were
// rejected. A load that returned an error exits with ExitFailure instead.
func (s Summary) ExitCode() int {
	if s.Rejected > 0 {
		return ExitRejected
	}
	return ExitOK
}

// LineError is a rejected line: the reason it cannot be loaded. The load
// skips it and goes on.
type LineError struct {
	Line   int // 1-based; 0 when not known (ParseNoticeLine)
	Reason string
}

// Error returns "line N: reason", or the reason alone without a line number.
func (e *LineError) Error() string {
	if e.Line == 0 {
		return e.Reason
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
}

func reject(format string, args ...any) *LineError {
	return &LineError{Reason: fmt.Sprintf(format, args...)}
}

// reporter lists rejected lines, the first MaxListedRejections of them, and
// keeps the progress bar out of the way while it writes.
type reporter struct {
	mu       sync.Mutex // the reader and the writer side both reject
	w        io.Writer
	progress *progress
	count    int
}

func (r *reporter) reject(file string, e *LineError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	if r.w == nil || r.count > MaxListedRejections {
		return
	}
	r.progress.clear()
	fmt.Fprintf(r.w, "%s:%d: %s\n", file, e.Line, e.Reason)
}

// finish writes how many rejections were not listed, if any.
func (r *reporter) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil || r.count <= MaxListedRejections {
		return
	}
	r.progress.clear()
	fmt.Fprintf(r.w, "... and %d more rejected lines not listed (%d rejected in all)\n",
		r.count-MaxListedRejections, r.count)
}
