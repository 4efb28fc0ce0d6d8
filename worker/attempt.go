package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/webhook"
)

// ErrInterrupted is returned by Attempter.Attempt when its context ended
// before the attempt had an outcome: nothing was recorded, and the
// scheduler retries the delivery.
var ErrInterrupted = errors.New("worker: the delivery attempt was interrupted before it had an outcome")

// Attempter makes one delivery attempt and records its outcome: the one
// attempt handler of both schedulers (Worker, and package scheduler's
// asynq tasks).
type Attempter struct {
	// Sender sends the signed request.
	Sender *webhook.Sender
	// Ledger records the outcome.
	Ledger store.Ledger
	// RetryUnit scales the retry schedule (delivery.RetryWait).
	RetryUnit time.Duration
	// Now is the clock of the payload's sent_at and of the outcome.
	Now func() time.Time
	// Log, when set, receives each failed attempt, and each attempt not
	// made (not sent or not recorded, not interrupted), at warn level.
	Log *slog.Logger
}

// Attempt builds job's body and signs it with the webhook's current secret
// (Ledger.Signing) once the endpoint's slot is held, sends it, records the
// outcome in the Ledger and returns what delivery.Decide made of it. When
// ctx ends first it records nothing and returns ErrInterrupted. When the
// webhook is gone nothing is sent or recorded and the decision is dead
// (delivery.WebhookRemoved); when the secret cannot be read, the error
// says why and the delivery is tried again.
func (a Attempter) Attempt(ctx context.Context, job store.Job) (d delivery.Decision, err error) {
	defer func() {
		switch {
		case a.Log == nil || errors.Is(err, ErrInterrupted):
		case err != nil:
			a.Log.Warn("delivery attempt not made", "watch", job.WatchID, "delivery", job.DeliveryID, "attempt", job.Attempt, "err", err)
		case d.Status != delivery.Delivered:
			a.Log.Warn("delivery attempt failed", "watch", job.WatchID, "delivery", job.DeliveryID, "attempt", job.Attempt, "reason", d.LastError)
		}
	}()
	var sentAt time.Time
	res := a.Sender.Send(ctx, webhook.Request{
		URL: job.URL, DeliveryID: job.DeliveryID, Secret: job.Secret,
		Current: func(ctx context.Context) (string, string, error) { return a.Ledger.Signing(ctx, job) },
		// Built once the slot is held: delivered_at is the request's time.
		Build: func() ([]byte, error) {
			sentAt = a.Now()
			body, err := webhook.Payload(job.WatchID, sentAt, job.Notice)
			if err != nil {
				return nil, fmt.Errorf("worker: build the body of delivery %s: %w", job.DeliveryID, err)
			}
			return body, nil
		},
	})
	if ctx.Err() != nil {
		return delivery.Decision{}, ErrInterrupted
	}
	if res.NotSent != nil {
		if e, ok := errs.As(res.NotSent); ok && e.Code == errs.NotFound {
			return delivery.Decision{Status: delivery.Dead, LastError: delivery.WebhookRemoved}, nil
		}
		return delivery.Decision{}, fmt.Errorf("worker: delivery %s attempt %d not sent: %w", job.DeliveryID, job.Attempt, res.NotSent)
	}
	out := store.Outcome{OK: res.OK, LastError: res.LastError, RetryUnit: a.RetryUnit, SentAt: sentAt}
	// Record the outcome even if shutdown begins now: it is known.
	if err := a.Ledger.Complete(context.WithoutCancel(ctx), job, out, a.Now()); err != nil {
		return delivery.Decision{}, fmt.Errorf("worker: record the outcome of delivery %s attempt %d: %w", job.DeliveryID, job.Attempt, err)
	}
	return delivery.Decide(job.Attempt, res.OK, res.LastError, a.RetryUnit), nil
}
