package store

import (
	"context"
	"time"

	"github.com/noticesd/noticesd/internal/mail"
)

// Mail is a backend's durable mail queue: the emails a watch's alert_email
// receives (package mail). The deactivation alert is queued by the backend
// itself, in the same transaction (embedded) or script (scale) that
// deactivates a watch after delivery.DeactivateAfter failed notices, when
// the watch has an alert_email: once per deactivation. Digests are queued
// by mail.Digester through QueueDigest. Jobs are claimed with a lease (a
// crash makes them due again), retried after mail.RetryWait and kept after
// they are sent, so a job id is never queued twice.
type Mail interface {
	// LastDigestWindow returns the latest digest window whose digests were
	// all queued (zero when none): a process that starts again later the
	// same day does not run that window again.
	LastDigestWindow(ctx context.Context) (time.Time, error)
	// SetDigestWindow records that window's digests were all queued (it
	// never moves the recorded window back).
	SetDigestWindow(ctx context.Context, window time.Time) error
	// DigestTargets lists every watch with an alert_email and the end of
	// its last digest the SMTP server accepted (mail.Target.SentSeq).
	DigestTargets(ctx context.Context) ([]mail.Target, error)
	// QueueDigest stores a digest job at now unless a job with its id
	// exists (the window was queued before, by this or another process) or
	// another digest of the watch is still pending (it is sent first; the
	// next window starts where the last accepted one ended). It reports
	// whether it queued the job.
	QueueDigest(ctx context.Context, job mail.Job, now time.Time) (bool, error)
	// ClaimMail leases up to limit due pending jobs until now+lease and
	// returns them, each with its attempt counted and a claim token.
	ClaimMail(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]mail.Job, error)
	// CompleteMail records a claimed attempt's outcome at now: sent (a
	// digest then moves its watch's SentSeq to its ThroughSeq), retried
	// after mail.RetryWait, or dead after mail.MaxAttempts. An outcome for
	// a claim that is no longer current is ignored unless it is a success.
	CompleteMail(ctx context.Context, job mail.Job, out mail.Outcome, now time.Time) error
	// MailStatus counts the queue.
	MailStatus(ctx context.Context) (mail.QueueStatus, error)
	// PruneMail forgets sent, dead and dropped jobs last changed before
	// before (mail.Retention ago): a digest window can only be queued
	// again on its own day, so the job ids need not be kept longer.
	PruneMail(ctx context.Context, before time.Time) error
}
