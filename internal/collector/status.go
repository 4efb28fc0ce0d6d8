package collector

import "time"

// Collector states, as /health reports them.
const (
	StateDisabled = "disabled" // no source configured (a nil *Collector)
	StateIdle     = "idle"     // waiting for the next run; the last one (if any) succeeded
	StateRunning  = "running"  // a run is in progress
	StateFailing  = "failing"  // the last run failed; retrying with backoff
)

// Status is the collector block of /health. Its fields are, in order and
// type, those of api.CollectorStatus, so api.CollectorStatus(s) converts it.
// Timestamps are in notice.Timestamp form, or nil.
type Status struct {
	// State is one of the State constants.
	State string `json:"state"`
	// Source is the configured source as given (a directory or a URL; the
	// API redacts credentials before showing it); nil when disabled.
	Source *string `json:"source"`
	// LastRunAt is when the last (or current) run started.
	LastRunAt *string `json:"last_run_at"`
	// LastSuccessAt is when the last successful run started.
	LastSuccessAt *string `json:"last_success_at"`
	// LastError says why the last failed run failed, for example
	// "HTTP 500"; nil once a run succeeds again. It never holds the
	// source URL (which may carry credentials).
	LastError *string `json:"last_error"`
	// ConsecutiveFailures counts failed runs since the last success.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// NoticesCollected counts the new notices (first arrivals, not updates)
	// this collector has stored since the process started.
	NoticesCollected int64 `json:"notices_collected"`
}

// Degraded reports whether the collector is failing: the service is then
// "degraded" on /health. A disabled collector is not degraded.
func (s Status) Degraded() bool {
	return s.State == StateFailing || s.ConsecutiveFailures > 0
}

// Outcomes of a run, in RunResult.Outcome and the run's log record.
const (
	OutcomeOK          = "ok"           // the source was read and everything in it stored
	OutcomeNotModified = "not_modified" // the feed answered 304, or the directory held no new file
	OutcomeFailed      = "failed"       // the run failed; see the error
	// OutcomeLeaseLost: the run stopped because this process no longer
	// holds the collector's lease (another replica collects now); what it
	// stored stays stored, its cursor was not saved, and it is not counted
	// as a failure.
	OutcomeLeaseLost = "lease_lost"
)

// RunResult is what one run did. Read == New + Updated + Rejected for the
// lines read, also in a failed run (lines read before the failure).
type RunResult struct {
	// Source is the source as configured (redacted of credentials).
	Source string `json:"source"`
	// Outcome is one of the Outcome constants.
	Outcome string `json:"outcome"`
	// Read counts the non-blank lines read.
	Read int `json:"read"`
	// New counts notices stored for the first time (arrivals).
	New int `json:"new"`
	// Updated counts notices already known and updated in place.
	Updated int `json:"updated"`
	// Rejected counts lines that were not notices (reported and skipped).
	Rejected int `json:"rejected"`
	// Files lists the files of a directory source, in the order read.
	Files []FileResult `json:"files,omitempty"`
	// Duration is how long the run took (by Config.Now).
	Duration time.Duration `json:"-"`
	// Error is the failure, empty on success.
	Error string `json:"error,omitempty"`

	rejections []string // the first rejected lines of a feed, for the log
}

// FileResult is one file of a directory run.
type FileResult struct {
	// Name is the file's name in the source directory.
	Name     string `json:"name"`
	Read     int    `json:"read"`
	New      int    `json:"new"`
	Updated  int    `json:"updated"`
	Rejected int    `json:"rejected"`
	// MovedTo is the path the file was moved to (under done/ or
	// rejected/), empty when it was left in place for the next run.
	MovedTo string `json:"moved_to,omitempty"`
	// Error says why the file was rejected whole or left in place.
	Error string `json:"error,omitempty"`
}

// Exit codes of a one-off run (`noticesd collect --once`), as for
// `noticesd ingest`.
const (
	ExitOK       = 0 // the run succeeded and every line loaded
	ExitFailure  = 1 // the run failed
	ExitRejected = 3 // the run succeeded but some lines or files were rejected
)

// ExitCode is ExitFailure for a failed run, ExitRejected when lines or
// whole files were rejected, ExitOK otherwise.
func (r RunResult) ExitCode() int {
	if r.Outcome == OutcomeFailed {
		return ExitFailure
	}
	if r.Rejected > 0 {
		return ExitRejected
	}
	for _, f := range r.Files {
		if f.Error != "" {
			return ExitRejected
		}
	}
	return ExitOK
}

func (r *RunResult) add(f FileResult) {
	r.Read += f.Read
	r.New += f.New
	r.Updated += f.Updated
	r.Rejected += f.Rejected
	r.Files = append(r.Files, f)
}
