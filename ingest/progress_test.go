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
