package ingest

import (
	"os"
	"strings"
	"testing"
	"time"
)

// fakeClock advances by step on every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time {
	c.t = c.t.Add(c.step)
	return c.t
}

func TestProgressRedrawsAtMostFiveTimesASecond(t *testing.T) {
	tests := []struct {
		name  string
		step  time.Duration // clock advance per reading
		rows  int
		draws int
	}{
		{"fast rows, 50ms per reading: every 4th reading draws", 50 * time.Millisecond, 20, 5},
		{"slow rows, 1s per reading: every reading draws", time.Second, 5, 5},
		{"clock stands still: no redraw", 0, 100, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), step: tt.step}
			p := newProgress(&out, clk.now, "notices", 1000, func() int64 { return 500 })
			p.every = 1
			for i := 0; i < tt.rows; i++ {
				p.row()
			}
			if got := strings.Count(out.String(), "\r"); got != tt.draws {
				t.Errorf("%d draws, want %d: %q", got, tt.draws, out.String())
			}
		})
	}
}

func TestProgressLine(t *testing.T) {
	tests := []struct {
		name  string
		total int64
		read  int64
		want  []string
	}{
		{"known size", 1000, 250, []string{"\rnotices [======                  ]  25%", "  400 rows  100 rows/s  ETA 0:12", "\x1b[K"}},
		{"unknown size (stdin)", -1, 250, []string{"\rnotices  400 rows  100 rows/s  0:04\x1b[K"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), step: 0}
			p := newProgress(&out, clk.now, "notices", tt.total, func() int64 { return tt.read })
			p.every = 400
			clk.step = 4 * time.Second
			for i := 0; i < 400; i++ {
				p.row()
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("progress %q\ndoes not contain %q", out.String(), w)
				}
			}
		})
	}
}

func TestProgressFinishAndClear(t *testing.T) {
	var out strings.Builder
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), step: time.Second}
	p := newProgress(&out, clk.now, "register", 100, func() int64 { return 90 })
	p.every = 1
	p.row()
	p.clear()
	if !strings.HasSuffix(out.String(), "\r\x1b[K") {
		t.Errorf("clear did not erase the bar: %q", out.String())
	}
	p.clear() // nothing shown: nothing written
	if strings.Count(out.String(), "\r\x1b[K") != 1 {
		t.Errorf("clear wrote twice: %q", out.String())
	}
	p.finish()
	if !strings.HasSuffix(out.String(), "100%  1 rows  0 rows/s  0:02\x1b[K\n") {
		t.Errorf("finish does not show 100%% and end the line: %q", out.String())
	}
}

func TestNoProgressWithoutWriter(t *testing.T) {
	p := newProgress(nil, time.Now, "notices", 10, func() int64 { return 0 })
	if p != nil {
		t.Fatal("a progress without a writer")
	}
	p.row() // all safe on nil
	p.clear()
	p.finish()
}

func TestTerminalProgressIsNilForFiles(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if w := TerminalProgress(f); w != nil {
		t.Error("a regular file was taken for a terminal")
	}
	if w := TerminalProgress(nil); w != nil {
		t.Error("nil file gave a writer")
	}
}

// TestProgressLines: for a log (Options.ProgressLines) progress is a plain
// line every ProgressLineEvery on the injected clock, on rows read and on
// rows stored (writes go on after the reader has finished), with rows
// read and stored, rows/s and, when the size is known, percent and ETA; no
// bar, no escape codes, and clear and finish write nothing (the summary
// follows).
func TestProgressLines(t *testing.T) {
	type event struct {
		advance time.Duration
		read    int // rows read
		stored  int // rows stored, after those
	}
	tests := []struct {
		name   string
		total  int64
		events []event
		want   []string
	}{
		{"known size", 1000, []event{
			{2 * time.Second, 100, 0}, // 2 s: no line yet
			{3 * time.Second, 1, 0},   // 5 s: a line on a row read
			{5 * time.Second, 0, 50},  // 10 s: a line on rows stored
			{time.Second, 0, 51},      // 11 s: none
		}, []string{
			"notices: 101 rows read, 0 stored, 20 rows/s, 25% read, 0:05 elapsed\n",
			// 101 rows are a quarter of the input: 404 rows, 354 to store at 5 rows/s.
			"notices: 101 rows read, 50 stored, 10 rows/s, 25% read, ETA 1:11, 0:10 elapsed\n",
		}},
		{"unknown size (stdin)", -1, []event{{5 * time.Second, 1, 0}, {5 * time.Second, 0, 1}}, []string{
			"notices: 1 rows read, 0 stored, 0 rows/s, 0:05 elapsed\n",
			"notices: 1 rows read, 1 stored, 0 rows/s, 0:10 elapsed\n",
		}},
		{"fast rows: no line before 5 s", 1000, []event{{4900 * time.Millisecond, 5000, 4000}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			p := newProgressFor(Options{Progress: &out, ProgressLines: true, Now: func() time.Time { return at }},
				"notices", tt.total, func() int64 { return 250 })
			p.every = 1
			for _, e := range tt.events {
				at = at.Add(e.advance)
				for range e.read {
					p.row()
				}
				if e.stored > 0 {
					p.stored(e.stored)
				}
			}
			p.clear()
			p.finish()
			if got := out.String(); got != strings.Join(tt.want, "") {
				t.Errorf("progress lines\n%q\nwant\n%q", got, strings.Join(tt.want, ""))
			}
		})
	}
}
