package ingest

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// TerminalProgress returns f when it is a terminal, for Options.Progress,
// and nil (no progress bar) otherwise, so logs and pipes stay clean.
func TerminalProgress(f *os.File) io.Writer {
	if f != nil && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}

// ProgressLineEvery is how often Options.ProgressLines writes a line.
const ProgressLineEvery = 5 * time.Second

const (
	progressEvery    = 200 * time.Millisecond // at most ~5 redraws a second
	progressCheckRow = 256                    // rows between clock readings
	progressBarWidth = 24
)

// progress draws a one-line bar: percent of the input's bytes read (of the
// compressed file when it is compressed), rows, rows/s and ETA. In line
// mode (a log, not a terminal) it writes the same as a plain line every
// interval instead. A nil *progress draws nothing; every method is safe on
// it.
type progress struct {
	mu       sync.Mutex // rows come from the reader, rejections from both sides
	w        io.Writer
	lines    bool          // a line every interval, no bar
	interval time.Duration // between draws
	now      func() time.Time
	label    string
	total    int64        // bytes; <= 0 when unknown
	bytes    func() int64 // bytes read so far
	every    int          // rows between clock readings
	start    time.Time
	last     time.Time
	rows     int
	saved    int // rows stored, reported in line mode (writes lag reads)
	pending  int
	shown    bool
}

func newProgress(w io.Writer, now func() time.Time, label string, total int64, bytes func() int64) *progress {
	if w == nil {
		return nil
	}
	t := now()
	return &progress{w: w, now: now, label: label, total: total, bytes: bytes,
		every: progressCheckRow, start: t, last: t, interval: progressEvery}
}

// newProgressFor is newProgress as opt asks: a bar on opt.Progress, or
// lines every ProgressLineEvery with opt.ProgressLines.
func newProgressFor(opt Options, label string, total int64, bytes func() int64) *progress {
	p := newProgress(opt.Progress, opt.now, label, total, bytes)
	if p != nil && opt.ProgressLines {
		p.lines, p.interval = true, ProgressLineEvery
	}
	return p
}

// row counts one row read and redraws when enough time has passed.
func (p *progress) row() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rows++
	p.pending++
	if p.pending < p.every {
		return
	}
	p.pending = 0
	if t := p.now(); t.Sub(p.last) >= p.interval {
		p.last = t
		p.draw(t, false)
	}
}

// stored counts n rows stored. In line mode it also writes a line when
// the interval has passed, so a log goes on showing the load while the
// writes catch up with a reader that has finished.
func (p *progress) stored(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.saved += n
	if !p.lines {
		return
	}
	if t := p.now(); t.Sub(p.last) >= p.interval {
		p.last = t
		p.draw(t, false)
	}
}

// clear erases the bar so another line can be written; the next redraw
// brings it back.
func (p *progress) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.shown || p.lines {
		return
	}
	fmt.Fprint(p.w, "\r\x1b[K")
	p.shown = false
}

// finish draws the final state and ends the line.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lines {
		return // the summary line follows
	}
	p.draw(p.now(), true)
	fmt.Fprint(p.w, "\n")
	p.shown = false
}

func (p *progress) draw(t time.Time, done bool) {
	elapsed := t.Sub(p.start)
	rate := 0
	if elapsed > 0 {
		rate = int(float64(p.rows) / elapsed.Seconds())
	}
	if p.lines {
		p.line(elapsed, rate)
		return
	}
	var b strings.Builder
	b.WriteString("\r")
	b.WriteString(p.label)
	if p.total > 0 {
		read := p.bytes()
		frac := float64(read) / float64(p.total)
		if done || frac > 1 {
			frac = 1
		}
		fill := int(frac * progressBarWidth)
		fmt.Fprintf(&b, " [%s%s] %3d%%", strings.Repeat("=", fill), strings.Repeat(" ", progressBarWidth-fill), int(frac*100))
		fmt.Fprintf(&b, "  %d rows  %d rows/s", p.rows, rate)
		if !done && read > 0 && elapsed > 0 {
			left := time.Duration(float64(elapsed) * float64(p.total-read) / float64(read))
			fmt.Fprintf(&b, "  ETA %s", clock(left))
		} else {
			fmt.Fprintf(&b, "  %s", clock(elapsed))
		}
	} else {
		fmt.Fprintf(&b, "  %d rows  %d rows/s  %s", p.rows, rate, clock(elapsed))
	}
	b.WriteString("\x1b[K")
	io.WriteString(p.w, b.String())
	p.shown = true
}

// line writes one progress line for a log: "notices: 120000 rows read,
// 100000 stored, 24000 rows/s, 25% read, ETA 0:15, 0:05 elapsed" (rows/s
// of rows read; no percent or ETA when the input's size is unknown, no ETA
// before a row is stored).
func (p *progress) line(elapsed time.Duration, rate int) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d rows read, %d stored, %d rows/s", p.label, p.rows, p.saved, rate)
	if p.total > 0 {
		read := p.bytes()
		frac := min(float64(read)/float64(p.total), 1)
		fmt.Fprintf(&b, ", %d%% read", int(frac*100))
		// The rows the input holds, estimated from the share read; the
		// time left is the time the stored rows took, scaled.
		if frac > 0 && p.saved > 0 && elapsed > 0 {
			rows := float64(p.rows) / frac
			left := time.Duration(float64(elapsed) * max(rows-float64(p.saved), 0) / float64(p.saved))
			fmt.Fprintf(&b, ", ETA %s", clock(left))
		}
	}
	fmt.Fprintf(&b, ", %s elapsed\n", clock(elapsed))
	io.WriteString(p.w, b.String())
}

// clock formats d as m:ss or h:mm:ss.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s < 0 {
		s = 0
	}
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
