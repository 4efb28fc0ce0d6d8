package store

import (
	"context"
	"time"

	"github.com/noticesd/noticesd/internal/mail"
)

// Mail is a backend's durable queue of the emails a watch's alert_email
// receives (package mail; docs/email.md). The backend queues the
// deactivation alert in the step that deactivates the watch, so once per
// deactivation; digests come through QueueDigest. Jobs are claimed with a
// lease and kept after they are sent, so a job id is never queued twice.
type Mail interface {
	// LastDigestWindow returns the latest digest window whose digests were
	// all queued (zero when none).
	LastDigestWindow(ctx context.Context) (time.Time, error)
	// SetDigestWindow records that window's digests were all queued (it
	// never moves the recorded window back).
	SetDigestWindow(ctx context.Context, window time.Time) error
	// DigestTargets lists every watch with an alert_email and the end of
	// its last digest the SMTP server accepted (mail.Target.SentSeq).
	DigestTargets(ctx context.Context) ([]mail.Target, error)
	// QueueDigest stores a digest job at now unless a job with its id
	// exists or another digest of the watch is still pending, and reports
	// whether it queued it.
	QueueDigest(ctx context.Context, job mail.Job, now time.Time) (bool, error)
	// ClaimMail leases up to limit due pending jobs until now+lease and
	// returns them, each with its attempt counted and a claim token.
	ClaimMail(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]mail.Job, error)
	// CompleteMail records a claimed attempt's outcome at now: sent (a
	// digest moves its watch's SentSeq to its ThroughSeq), retried after
	// mail.RetryWait, or dead. A failure of a claim no longer current is
	// ignored.
	CompleteMail(ctx context.Context, job mail.Job, out mail.Outcome, now time.Time) error
	// MailStatus counts the queue.
	MailStatus(ctx context.Context) (mail.QueueStatus, error)
	// PruneMail forgets sent, dead and dropped jobs last changed before
	// before (mail.Retention ago: long after their window's day).
	PruneMail(ctx context.Context, before time.Time) error
}
