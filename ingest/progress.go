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

const (
	progressEvery    = 200 * time.Millisecond // at most ~5 redraws a second
	progressCheckRow = 256                    // rows between clock readings
	progressBarWidth = 24
)

// progress draws a one-line bar: percent of the input's bytes read (of the
// compressed file when it is compressed), rows, rows/s and ETA. A nil
// *progress draws nothing; every method is safe on it.
type progress struct {
	mu      sync.Mutex // rows come from the reader, rejections from both sides
	w       io.Writer
	now     func() time.Time
	label   string
	total   int64        // bytes; <= 0 when unknown
	bytes   func() int64 // bytes read so far
	every   int          // rows between clock readings
	start   time.Time
	last    time.Time
	rows    int
	pending int
	shown   bool
}

func newProgress(w io.Writer, now func() time.Time, label string, total int64, bytes func() int64) *progress {
	if w == nil {
		return nil
	}
	t := now()
	return &progress{w: w, now: now, label: label, total: total, bytes: bytes,
		every: progressCheckRow, start: t, last: t}
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
	if t := p.now(); t.Sub(p.last) >= progressEvery {
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
	if !p.shown {
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
