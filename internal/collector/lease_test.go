//go:build sqlite_fts5

package collector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

// feedLines returns n notice lines with source ids prefix-0 ... prefix-(n-1).
func feedLines(prefix string, n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"source_id":"%s-%d","published_at":"2026-03-02","company_name":"LEASE %d PTY LTD","notice_type":"Appointment of Liquidator","notice_code":"APLQ","notice_purpose":"Appointment","state":"NSW","status":"In Liquidation","text":"t"}`+"\n", prefix, i, i)
	}
	return []byte(b.String())
}

// refusingState is a StateStore whose saves are refused, as the scale
// backend's fenced Redis record refuses a holder whose lease lapsed.
type refusingState struct{ saves atomic.Int32 }

func (s *refusingState) Load(context.Context) ([]byte, error) { return nil, nil }
func (s *refusingState) Save(context.Context, []byte) error {
	s.saves.Add(1)
	return ErrLeaseLost
}

// TestRunStopsWhenTheLeaseIsLost: a collector whose lease is lost mid-run
// stops before its next store write (not at the end of a run that may
// last minutes), keeps what it stored, saves no cursor, and is not
// counted as failing: another replica collects now. A cursor save the
// fenced state store refuses ends the run the same way.
func TestRunStopsWhenTheLeaseIsLost(t *testing.T) {
	t.Run("leader says no before the third batch", func(t *testing.T) {
		e := newEnv(t)
		fs := newFeedServer(t, feedLines("LOST", 30))
		fs.nextSince = "after-30"
		var asked atomic.Int32
		cfg := e.config(fs.URL + "/feed")
		cfg.BatchSize = 5
		cfg.Leader = func() bool { return asked.Add(1) <= 2 }
		c := e.collector(t, cfg)
		res, err := c.RunOnce(context.Background())
		if !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("run error %v, want ErrLeaseLost", err)
		}
		if res.Outcome != OutcomeLeaseLost {
			t.Errorf("outcome %q, want %q", res.Outcome, OutcomeLeaseLost)
		}
		if got := len(e.notices(t)); got != 10 {
			t.Errorf("%d notices stored, want the 10 of the two batches written while the lease was held", got)
		}
		if s := c.Status(); s.ConsecutiveFailures != 0 || s.State == StateFailing {
			t.Errorf("status after a lost lease: %+v; want not failing", s)
		}
		if rec := e.log.lastRun(t); rec["outcome"] != OutcomeLeaseLost || rec["level"] != "WARN" {
			t.Errorf("run record %v, want outcome lease_lost at WARN", rec)
		}
		// The cursor was not kept: the next run (as leader again) asks
		// for the same page.
		asked.Store(-100)
		if _, err := c.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if q := fs.last(t).query; q.Has(SinceParam) {
			t.Errorf("the run after a lost lease asked with since=%q; the lost run's cursor must not be saved", q.Get(SinceParam))
		}
	})
	t.Run("state store refuses the cursor", func(t *testing.T) {
		e := newEnv(t)
		fs := newFeedServer(t, feedLines("FENCED", 3))
		fs.nextSince = "after-3"
		st := &refusingState{}
		cfg := e.config(fs.URL + "/feed")
		cfg.State = st
		c := e.collector(t, cfg)
		res, err := c.RunOnce(context.Background())
		if !errors.Is(err, ErrLeaseLost) || res.Outcome != OutcomeLeaseLost {
			t.Fatalf("run = %q, %v; want lease_lost", res.Outcome, err)
		}
		if st.saves.Load() != 1 {
			t.Errorf("%d saves, want 1", st.saves.Load())
		}
		if c.Status().ConsecutiveFailures != 0 {
			t.Error("a refused cursor counted as a failure")
		}
	})
}
