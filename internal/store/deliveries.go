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
	// WebhookTarget returns the URL and current secret of the watch's
	// webhook (for a test delivery). NoWebhook when the watch has none.
	WebhookTarget(ctx context.Context, accountID, watchID string) (url, secret string, err error)
	// RetryDelivery makes a dead delivery of the watch pending again at
	// now, under the same delivery id, with its attempts starting again
	// from 0 (the full retry schedule applies anew), and returns the
	// record. It is due at once when the watch is active and held
	// otherwise, and it is scheduled as a new delivery is (one durable
	// write: a crash loses nothing). errs.NotFound for a delivery the
	// watch does not have; DeliveryNotDead for one that is not dead;
	// NoWebhook when the watch has no webhook to send it to.
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

// WatchSet is what the arrival matcher needs of the watches that have a
// webhook, at one version of the watch set.
type WatchSet struct {
	// Version changes whenever a watch gains a webhook or a watch with one
	// is deleted or loses it (see Queue.WatchSetVersion).
	Version int64
	// Entries are the watches with a webhook, active or not, every
	// register ACN of each of their ABNs added to Identifiers (see
	// matcher.Entry).
	Entries []matcher.Entry
}

// ErrWatchSetChanged is returned by Queue.Enqueue when the watch set
// changed after the caller matched against it: reload and match again.
var ErrWatchSetChanged = errors.New("store: the set of watches with a webhook changed while matching; reload it and match the batch again")

// Job is one claimed delivery attempt.
type Job struct {
	DeliveryID string
	WatchID    string
	URL        string
	Secret     string // the secret current at claim time (Ledger.Signing reads it again before signing)
	Attempt    int    // 1-based number of this attempt
	// Token identifies this claim: a lease that expires mid-attempt and is
	// claimed again gives a new attempt with a new token, and Complete
	// tells the current attempt's outcome from the stale one's by it.
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
	// SentAt is when the attempt's request was sent: the delivered_at its
	// body carries, and so the record's delivered_at when OK. Zero: the
	// time the outcome is recorded.
	SentAt time.Time
	// RetryUnit scales the retry schedule: after failed attempt n the next
	// is n x RetryUnit later (delivery.RetryWait).
	RetryUnit time.Duration
}

// Ledger is the durable record of deliveries that an attempt's outcome is
// written to, whichever scheduler ran the attempt (worker.Attempter): the
// embedded backend's Queue, or the scale backend's Redis ledger driven by
// asynq tasks.
type Ledger interface {
	// Complete records an attempt's outcome at now by delivery.Decide:
	// delivered, rescheduled after delivery.RetryWait, or dead after the
	// last attempt; dead and delivered notices update the watch's
	// consecutive-failure count, which deactivates the watch when
	// delivery.Deactivates. An outcome for a delivery that is no longer
	// pending (delivered, dead, webhook removed, watch deleted) is
	// ignored; see each backend for attempts that lost their claim.
	Complete(ctx context.Context, job Job, out Outcome, now time.Time) error
	// Signing returns the webhook URL and secret of job's watch as they
	// are now, read just before the attempt is signed: an attempt that
	// waited while the secret was rotated (or the webhook replaced) goes
	// out signed with the new secret. errs.NotFound when the watch or its
	// webhook is gone (its pending deliveries ended with it).
	Signing(ctx context.Context, job Job) (url, secret string, err error)
}

// Queue is the embedded backend's delivery queue: the arrivals, the
// watches with a webhook they are matched against and the ledger,
// scheduled by an SQL claim/lease loop that the worker drives.
//
// One process drives a queue at a time (the worker of `noticesd serve`);
// Recover assumes no other worker holds leases.
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
	// WatchSetVersion returns the current WatchSet version cheaply, so the
	// matcher reloads only when it changed.
	WatchSetVersion(ctx context.Context) (int64, error)
	// ResolveABNs returns the register ACNs of each given ABN that the
	// register knows, sorted and distinct (ABNs it does not know are absent
	// from the map). An ABN held by several register rows with different
	// ACNs resolves to every one of them: the one rule that webhook
	// matching and Watches.Matches share (docs/webhooks.md).
	ResolveABNs(ctx context.Context, abns []string) (map[string][]string, error)
	// Enqueue creates one pending delivery for each eligible (watch,
	// notice) pair, at most once per pair ever, and advances the arrival
	// cursor to through, in one transaction. Eligibility is
	// delivery.Eligible at now; watches without a webhook (or deleted) get
	// nothing. Deliveries for inactive watches are created held: they wait
	// for reactivation. When the watch set is no longer at version (the
	// arrivals were matched against an older set) nothing is written and
	// the error is ErrWatchSetChanged.
	Enqueue(ctx context.Context, arrivals []Arrival, through, version int64, now time.Time) (created int, err error)
	// Recover releases every lease (attempts in flight when a previous
	// process stopped): those deliveries are due at now. The interrupted
	// attempt is uncounted. Only one process may drive a queue: the caller
	// holds the data directory's serve lock (or the backend's equivalent).
	Recover(ctx context.Context, now time.Time) (released int, err error)
	// Claim leases due deliveries (next attempt at or before now, watch
	// active with a webhook) until now+req.Lease and returns them; see
	// ClaimRequest for the bounds. It is fair across watches: the watches
	// with due deliveries are served in the order of each one's oldest due
	// delivery, one delivery of each per round, each watch's oldest first,
	// so every due delivery of every watch progresses however large
	// another watch's backlog. A lease that expires without Complete makes
	// the delivery due again. Each claimed Job carries the URL and secret
	// current at claim time.
	Claim(ctx context.Context, now time.Time, req ClaimRequest) ([]Job, error)
	// NextDue returns when the next delivery becomes due, if any.
	NextDue(ctx context.Context) (time.Time, bool, error)
}
