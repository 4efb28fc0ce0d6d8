package store

import (
	"context"
	"errors"
	"time"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/matcher"
)

// Webhooks manages a watch's webhook and lists its deliveries. Every method
// answers errs.NotFound for a watch of another account.
type Webhooks interface {
	// SetWebhook registers or replaces the watch's webhook URL and secret at
	// now. Matches that arrived after the watch was created and were
	// published within delivery.Window get deliveries, once per notice.
	SetWebhook(ctx context.Context, accountID, watchID, url, secret string, now time.Time) (watch.Watch, error)
	// RotateSecret replaces the secret, at once also for retries already
	// scheduled. errs.NotFound when the watch has no webhook.
	RotateSecret(ctx context.Context, accountID, watchID, secret string, now time.Time) (watch.Watch, error)
	// DeleteWebhook stops delivery: pending deliveries become dead with
	// last_error delivery.WebhookRemoved. errs.NotFound when the watch has
	// no webhook.
	DeleteWebhook(ctx context.Context, accountID, watchID string, now time.Time) error
	// Deliveries lists the watch's most recent deliveries, newest first.
	Deliveries(ctx context.Context, accountID, watchID string, limit int) ([]delivery.Record, error)
	// WebhookTarget returns the URL and current secret of the watch's
	// webhook (for a test delivery). NoWebhook when the watch has none.
	WebhookTarget(ctx context.Context, accountID, watchID string) (url, secret string, err error)
	// RetryDelivery makes a dead delivery of the watch pending again at
	// now (same id, attempts from 0; due at once, or held while the watch
	// is inactive) in one durable write, and returns the record.
	// errs.NotFound for a delivery the watch does not have;
	// DeliveryNotDead for one not dead; NoWebhook without a webhook.
	RetryDelivery(ctx context.Context, accountID, watchID, deliveryID string, now time.Time) (delivery.Record, error)
}

// NoWebhook is the error of a test delivery or a retry on a watch without
// a webhook.
func NoWebhook(watchID string) error {
	return errs.New(errs.NoWebhook, "watch %s has no webhook; register one with POST /v1/watches/%s/webhook first", errs.Quote(watchID), watchID)
}

// NoDelivery is the errs.NotFound of a delivery id the watch does not have.
func NoDelivery(watchID, deliveryID string) error {
	return errs.New(errs.NotFound, "watch %s has no delivery %s; list its deliveries with GET /v1/watches/%s/deliveries", errs.Quote(watchID), errs.Quote(deliveryID), watchID)
}

// DeliveryNotDead is the error of a retry of a delivery in another state
// than dead.
func DeliveryNotDead(deliveryID, status string) error {
	return errs.New(errs.DeliveryNotDead, "delivery %s is %s, not dead; only a dead delivery can be retried (a pending one is retried on its schedule, a delivered one was accepted)", errs.Quote(deliveryID), status)
}

// Arrival is a newly arrived notice and the watches it matched.
type Arrival struct {
	Notice  notice.Notice
	Watches []string
}

// WatchSet is the watches with a webhook at one version of the set.
type WatchSet struct {
	// Version changes whenever a watch gains a webhook or a watch with one
	// is deleted or loses it.
	Version int64
	// Entries are the watches with a webhook, active or not, every
	// register ACN of their ABNs added to Identifiers.
	Entries []matcher.Entry
}

// ErrWatchSetChanged is returned by Queue.Enqueue when the watch set
// changed after the caller matched against it: reload and match again.
var ErrWatchSetChanged = errors.New("store: the set of watches with a webhook changed while matching; reload it and match the batch again")

// Job is one claimed delivery attempt.
type Job struct {
	DeliveryID string
	WatchID    string
	AccountID  string // the watch's account, where a backend keys by it (scale mode); may be empty
	URL        string
	Secret     string // the secret current at claim time (Ledger.Signing reads it again)
	Attempt    int    // 1-based number of this attempt
	// Token identifies this claim, so Complete tells the current attempt's
	// outcome from that of one whose lease expired.
	Token  string
	Notice notice.Notice
}

// ClaimRequest bounds one Claim.
type ClaimRequest struct {
	// Limit is the most deliveries claimed.
	Limit int
	// Lease is how long each claimed delivery is reserved for its attempt.
	Lease time.Duration
	// PerWatch, when positive, is the most attempts in flight for one
	// watch: a watch gets at most PerWatch minus InFlight[watch] claims.
	PerWatch int
	// InFlight counts the caller's attempts in flight per watch id.
	InFlight map[string]int
}

// Outcome is the result of one attempt.
type Outcome struct {
	OK        bool
	LastError string
	// SentAt is when the request was sent, the delivered_at its body
	// carries (zero: when the outcome is recorded).
	SentAt time.Time
	// RetryUnit scales the retry schedule (delivery.RetryWait).
	RetryUnit time.Duration
}

// Ledger is the durable record of deliveries that worker.Attempter writes
// an attempt's outcome to: the embedded Queue, or scale mode's Redis
// ledger driven by asynq tasks.
type Ledger interface {
	// Complete records an attempt's outcome at now by delivery.Decide
	// (delivered, retried, dead), keeping the watch's consecutive-failure
	// count, which deactivates it when delivery.Deactivates. An outcome
	// for a delivery no longer pending is ignored.
	Complete(ctx context.Context, job Job, out Outcome, now time.Time) error
	// Signing returns the webhook URL and secret of job's watch as they
	// are now, just before the attempt is signed (a rotation while it
	// waited applies). errs.NotFound when the watch or its webhook is gone.
	Signing(ctx context.Context, job Job) (url, secret string, err error)
}

// Queue is the embedded backend's delivery queue: the arrivals, the
// watches with a webhook they are matched against and the ledger, driven
// by one process at a time (the worker of `noticesd serve`).
type Queue interface {
	Ledger
	// ArrivalCursor is the highest notice_seq already matched (durable).
	ArrivalCursor(ctx context.Context) (int64, error)
	// NoticesAfter returns up to limit notices with notice_seq > seq,
	// ascending: the arrivals still to match.
	NoticesAfter(ctx context.Context, seq int64, limit int) ([]notice.Notice, error)
	// LatestSeq returns the highest notice_seq stored (0 when none).
	LatestSeq(ctx context.Context) (int64, error)
	// WatchSet returns the watches with a webhook, for the matcher.
	WatchSet(ctx context.Context) (WatchSet, error)
	// WatchSetVersion returns the current WatchSet version cheaply.
	WatchSetVersion(ctx context.Context) (int64, error)
	// ResolveABNs returns the register ACNs of each given ABN the register
	// knows, sorted and distinct: every one of an ABN held by several rows,
	// as Watches.Matches resolves it (docs/webhooks.md).
	ResolveABNs(ctx context.Context, abns []string) (map[string][]string, error)
	// Enqueue creates one pending delivery for each pair eligible at now
	// (delivery.Eligible; held for an inactive watch), at most once per
	// pair ever, and advances the arrival cursor to through, in one
	// transaction. When the watch set is no longer at version nothing is
	// written and the error is ErrWatchSetChanged.
	Enqueue(ctx context.Context, arrivals []Arrival, through, version int64, now time.Time) (created int, err error)
	// Recover releases every lease (attempts in flight when a previous
	// process stopped), uncounted and due at now. The caller holds the
	// data directory's serve lock: no other worker holds leases.
	Recover(ctx context.Context, now time.Time) (released int, err error)
	// Claim leases due deliveries of active watches with a webhook until
	// now+req.Lease and returns them, fair across watches: one of each
	// watch per round, watches in the order of their oldest due delivery,
	// so no backlog holds up another watch. A lease that expires without
	// Complete makes the delivery due again.
	Claim(ctx context.Context, now time.Time, req ClaimRequest) ([]Job, error)
	// NextDue returns when the next delivery becomes due, if any.
	NextDue(ctx context.Context) (time.Time, bool, error)
}
