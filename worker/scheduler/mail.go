package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
)

// MailTaskType is the asynq type of one attempt to send an alert_email.
const MailTaskType = "mail:send"

// mailLease hides a mail job taken by the pump or begun by a task from the
// pump: longer than one SMTP attempt (30 s), so only a job whose worker
// died gets a task again.
const mailLease = 2 * time.Minute

// MailQueueName is the asynq queue of the namespace's mail.
func MailQueueName(namespace string) string { return namespace + ":mail" }

// mailPayload is a mail task's payload: the job id only.
type mailPayload struct {
	ID string `json:"id"`
}

// PumpMailOnce makes the tasks of the mail jobs due now, one per attempt
// (TaskID = job id#attempt), so a retry is a new task and a pump that
// runs twice (or on two workers) makes the attempt's task once.
func (s *Scheduler) PumpMailOnce(ctx context.Context) error {
	refs, err := s.cfg.Ledger.TakeDueMail(ctx, s.cfg.Now(), mailLease, 100)
	if err != nil {
		return err
	}
	for _, r := range refs {
		if _, err := s.add(ctx, MailTaskType, MailQueueName(s.cfg.Namespace), r.ID+"#"+strconv.Itoa(r.Attempts+1), mailPayload{ID: r.ID}); err != nil {
			return err
		}
	}
	return nil
}

// handleMail makes one attempt of a mail job; the Redis mail queue records
// its outcome and schedules the next attempt. An error (Redis unreachable)
// has asynq run the task again.
func (s *Scheduler) handleMail(ctx context.Context, t *asynq.Task) error {
	var p mailPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.ID == "" {
		return fmt.Errorf("scheduler: task payload %q is not a mail job reference: %v: %w", t.Payload(), err, asynq.SkipRetry)
	}
	job, ok, err := s.cfg.Ledger.BeginMail(ctx, p.ID, s.cfg.Now(), mailLease)
	if err != nil || !ok {
		return err // nothing to send (sent, dead, watch deleted), or Redis failed
	}
	_, err = s.cfg.Mail.Attempt(ctx, job)
	return err
}
