package store

import (
	"context"
	"time"

	"noticesd/delivery"
	"noticesd/notice"
	"noticesd/watch"
)

// Webhooks manages a watch's webhook and lists its deliveries. Every method
// answers errs.NotFound for a watch of another account.
type Webhooks interface {
	// SetWebhook registers or replaces the watch's webhook URL and secret at
	// time now. Matches that arrived after the watch was created and were
	// published within delivery.Window of now get deliveries (never older
	// ones); a delivery that already exists for a (watch, notice) is kept.
	SetWebhook(ctx context.Context, accountID, watchID, url, secret string, now time.Time) (watch.Watch, error)
	// RotateSecret replaces the secret; the old one stops being used at
	// once, also for retries already scheduled. errs.NotFound when the
	// watch has no webhook.
	RotateSecret(ctx context.Context, accountID, watchID, secret string, now time.Time) (watch.Watch, error)
	// DeleteWebhook stops delivery: pending deliveries become dead with
	// last_error delivery.WebhookRemoved. errs.NotFound when the watch has
	// no webhook.
	DeleteWebhook(ctx context.Context, accountID, watchID string, now time.Time) error
	// Deliveries lists the watch's most recent deliveries, newest first.
	Deliveries(ctx context.Context, accountID, watchID string, limit int) ([]delivery.Record, error)
}

// Arrival is a newly arrived notice and the watches it matched.
type Arrival struct {
	Notice  notice.Notice
	Watches []string
}

// Job is one claimed delivery attempt.
type Job struct {
	DeliveryID string
	WatchID    string
	URL        string
	Secret     string // the secret current at claim time
	Attempt    int    // 1-based number of this attempt
	Notice     notice.Notice
}

// Outcome is the result of one attempt.
type Outcome struct {
	OK        bool
	LastError string
}

// Queue is the durable delivery queue the worker drives. The embedded
// backend keeps it in SQLite; the scale-out backend in Redis/asynq.
type Queue interface {
	// ArrivalCursor is the highest notice_seq already matched (durable).
	ArrivalCursor(ctx context.Context) (int64, error)
	// NoticesAfter returns up to limit notices with notice_seq > seq,
	// ascending: the arrivals still to match.
	NoticesAfter(ctx context.Context, seq int64, limit int) ([]notice.Notice, error)
	// Enqueue creates one pending delivery for each eligible (watch,
	// notice) pair, at most once per pair ever, and advances the arrival
	// cursor to through, in one transaction. Deliveries for inactive
	// watches are created held: they wait for reactivation.
	Enqueue(ctx context.Context, arrivals []Arrival, through int64, now time.Time) (created int, err error)
	// Claim leases up to limit due deliveries (next attempt at or before
	// now, watch active with a webhook) until now+lease and returns them.
	Claim(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]Job, error)
	// Complete records an attempt's outcome at now: delivered, rescheduled
	// after delivery.RetryWait, or dead after the last attempt; dead and
	// delivered notices update the watch's consecutive-failure count, which
	// deactivates the watch at delivery.DeactivateAfter.
	Complete(ctx context.Context, job Job, out Outcome, now time.Time) error
	// NextDue returns when the next delivery becomes due, if any.
	NextDue(ctx context.Context) (time.Time, bool, error)
}
