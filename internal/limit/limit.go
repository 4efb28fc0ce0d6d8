// Package limit enforces per-key request limits: a request rate per API key
// and caps on concurrent heavy requests, per key and for the whole service.
//
// Two implementations share one contract: Local keeps the state in the
// process (the embedded backend, one process) and Redis keeps it in Redis,
// so that every replica of a scale deployment draws on the same limits.
// The api package holds them behind its Limiter interface.
package limit

import "time"

// Rate is a token bucket: PerSecond requests a second sustained, Burst at
// once. A zero PerSecond means no limit.
type Rate struct {
	PerSecond int
	Burst     int
}

// Decision is the answer to a request for a token or a slot.
type Decision struct {
	// Allowed is true when the request may go ahead.
	Allowed bool
	// RetryAfter is, when not allowed, how long until a retry can succeed
	// (at least one second for slots, which free at an unknown time).
	RetryAfter time.Duration
	// Global is true when a slot was refused because the whole service is
	// at its heavy limit rather than the key.
	Global bool
}

// Release gives a heavy slot back. It is safe to call more than once; only
// the first call counts.
type Release func()

// slotRetry is the Retry-After of a refused heavy slot: slots free when a
// running request ends, which nobody can predict.
const slotRetry = time.Second

// burst returns the bucket size of r: Burst, or PerSecond when Burst is
// not set.
func (r Rate) burst() int {
	if r.Burst > 0 {
		return r.Burst
	}
	return r.PerSecond
}
