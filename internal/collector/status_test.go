package collector

import "testing"

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		res  RunResult
		want int
	}{
		{"ok", RunResult{Outcome: OutcomeOK, Read: 3, New: 3}, ExitOK},
		{"not modified", RunResult{Outcome: OutcomeNotModified}, ExitOK},
		{"rejected lines", RunResult{Outcome: OutcomeOK, Read: 3, New: 2, Rejected: 1}, ExitRejected},
		{"rejected file", RunResult{Outcome: OutcomeOK, Files: []FileResult{{Name: "a.jsonl.gz", Error: "unreadable"}}}, ExitRejected},
		{"failed", RunResult{Outcome: OutcomeFailed, Rejected: 1}, ExitFailure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.res.ExitCode(); got != tc.want {
				t.Errorf("ExitCode() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestStatusDegraded(t *testing.T) {
	tests := []struct {
		name string
		s    Status
		want bool
	}{
		{"disabled", (*Collector)(nil).Status(), false},
		{"idle", Status{State: StateIdle}, false},
		{"failing", Status{State: StateFailing, ConsecutiveFailures: 1}, true},
		{"running after failures", Status{State: StateRunning, ConsecutiveFailures: 2}, true},
		{"running healthy", Status{State: StateRunning}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Degraded(); got != tc.want {
				t.Errorf("Degraded() = %v, want %v", got, tc.want)
			}
		})
	}
	if s := (*Collector)(nil).Status(); s.State != StateDisabled || s.Source != nil {
		t.Errorf("nil collector status %+v, want disabled with no source", s)
	}
}
