// Package delivery holds the webhook delivery domain: the delivery record,
// its states, the retry schedule and the eligibility rule of SPEC.md.
package delivery

import (
	"time"
)

// States of a delivery (per notice per watch).
const (
	Pending   = "pending"
	Delivered = "delivered"
	Dead      = "dead"
)

// Rules of SPEC.md "Delivery rules" and "Limits".
const (
	// MaxAttempts is the number of attempts before a delivery is dead.
	MaxAttempts = 5
	// DeactivateAfter is the number of consecutive failed (dead) notices
	// that deactivates a watch.
	DeactivateAfter = 10
	// Window is how recently a notice must have been published to be
	// delivered (judged at its arrival, JudgedAt; at registration for the
	// matches a new webhook picks up).
	Window = 48 * time.Hour
	// MaxResponseBytes is the most of a receiver's response that is read.
	MaxResponseBytes = 64 << 10
	// KeepRecords is how many of a watch's newest delivery records are
	// always kept (GET /v1/watches/{id}/deliveries shows at most 100). An
	// older record is removed once it is final (delivered or dead) and
	// was created more than KeepAge ago; a pending one never is.
	KeepRecords = 1000
	// KeepAge is how old a final record beyond the newest KeepRecords
	// must be to be removed: past Window and a day more, its notice can
	// no longer be made eligible again (by registering the webhook anew),
	// so a removed record never lets a notice be delivered twice.
	KeepAge = Window + 24*time.Hour
	// TrimStep is how many of a watch's oldest records beyond the newest
	// KeepRecords each final outcome looks at for removal, in the same
	// step that records it (bounded work; the records grow by one per
	// outcome, so the trim keeps up).
	TrimStep = 16
	// WebhookRemoved is last_error of deliveries cancelled by deleting the
	// webhook.
	WebhookRemoved = "webhook removed"
)

// Record is the delivery record of SPEC.md and API.md, as listed by
// GET /v1/watches/{id}/deliveries. Timestamps are notice.Timestamp strings.
type Record struct {
	ID            string  `json:"id"`
	NoticeID      string  `json:"notice_id"`
	NoticeSeq     int64   `json:"notice_seq"`
	Status        string  `json:"status"`
	Attempts      int     `json:"attempts"`
	LastError     *string `json:"last_error"`
	CreatedAt     string  `json:"created_at"`
	UpdatedAt     string  `json:"updated_at"`
	NextAttemptAt *string `json:"next_attempt_at"`
	DeliveredAt   *string `json:"delivered_at"`
}

// RetryWait is the wait after failed attempt n (1-based) before the next:
// n x unit (10, 20, 30, 40 minutes with the default unit of 10 minutes).
// After attempt MaxAttempts there is no next attempt: ok is false.
func RetryWait(n int, unit time.Duration) (wait time.Duration, ok bool) {
	if n < 1 || n >= MaxAttempts {
		return 0, false
	}
	return time.Duration(n) * unit, true
}

// JudgedAt is when a new arrival's eligibility is judged: its arrival
// (collectedAt, the notice's collected_at), so a delivery created late (a
// worker or a backend down for a while) is judged as it would have been at
// once; now when collectedAt is not a time or lies after now.
func JudgedAt(collectedAt string, now time.Time) time.Time {
	at, err := time.Parse(time.RFC3339Nano, collectedAt)
	if err != nil || at.After(now) {
		return now
	}
	return at
}

// Eligible reports whether a notice that matched a watch is delivered:
// it arrived after the watch was created (noticeSeq > watchCreatedSeq, the
// highest notice_seq when the watch was created) and was published within
// Window of now.
func Eligible(noticeSeq, watchCreatedSeq int64, publishedAt, now time.Time) bool {
	return noticeSeq > watchCreatedSeq && !publishedAt.Before(now.Add(-Window))
}
