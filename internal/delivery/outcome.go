package delivery

import (
	"fmt"
	"strings"
	"time"
)

// The rules that turn one attempt's outcome into the delivery's next state
// and the watch's, written once for every backend and scheduler (the
// embedded SQL queue and the asynq workers both apply them).

// Decision is what the outcome of attempt n makes of a pending delivery.
type Decision struct {
	// Status is Delivered, Pending (a retry follows) or Dead.
	Status string
	// Wait is the time to the next attempt when Status is Pending.
	Wait time.Duration
	// LastError is the record's last_error ("" when delivered).
	LastError string
}

// Decide applies the retry table of SPEC.md to the outcome of attempt n
// (1-based): delivered on success; otherwise retried after RetryWait(n,
// unit), or dead after attempt MaxAttempts. An empty lastErr becomes
// "delivery failed".
func Decide(n int, ok bool, lastErr string, unit time.Duration) Decision {
	if ok {
		return Decision{Status: Delivered}
	}
	if strings.TrimSpace(lastErr) == "" {
		lastErr = "delivery failed"
	}
	if wait, retry := RetryWait(n, unit); retry {
		return Decision{Status: Pending, Wait: wait, LastError: lastErr}
	}
	return Decision{Status: Dead, LastError: lastErr}
}

// Deactivates reports whether a watch whose consecutive dead notices now
// number n is deactivated (a delivered notice resets the count to 0).
func Deactivates(n int) bool { return n >= DeactivateAfter }

// DeactivationReason is the deactivated_reason of a watch switched off
// after n consecutive failed notices, the last failing with lastErr.
func DeactivationReason(n int, lastErr string) string {
	return fmt.Sprintf("webhook deliveries failed for %d consecutive notices (each after %d attempts); last error: %s. "+
		"Fix the endpoint, then PATCH {\"active\": true} to deliver the held notices",
		n, MaxAttempts, strings.TrimSpace(lastErr))
}
