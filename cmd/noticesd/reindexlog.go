package main

import (
	"fmt"
	"io"
	"time"
)

// reindexLines reports a reindex to a log (a container or CI log, a pipe):
// one line per kind every interval, with rows, rows/s and ETA, and one when
// a kind is done. Its report method is an elastic.ReindexProgress.
type reindexLines struct {
	w        io.Writer
	now      func() time.Time
	interval time.Duration

	kind        string
	start, last time.Time
	finished    bool
}

// report takes one progress call of the reindex.
func (r *reindexLines) report(kind string, done, total int64) {
	t := r.now()
	if kind != r.kind {
		r.kind, r.start, r.last, r.finished = kind, t, t, false
	}
	if r.finished || (done < total && t.Sub(r.last) < r.interval) {
		return
	}
	r.last = t
	elapsed := t.Sub(r.start)
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed.Seconds()
	}
	if done >= total {
		r.finished = true
		fmt.Fprintf(r.w, "reindex %s: %d rows copied in %s (%d rows/s)\n", kind, done, elapsed.Round(time.Second), int(rate))
		return
	}
	pct := 0
	if total > 0 {
		pct = int(100 * done / total)
	}
	eta := "unknown"
	if rate > 0 {
		eta = (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second).String()
	}
	fmt.Fprintf(r.w, "reindex %s: %d / %d rows (%d%%), %d rows/s, ETA %s\n", kind, done, total, pct, int(rate), eta)
}
