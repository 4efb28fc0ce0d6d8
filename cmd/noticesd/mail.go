package main

import (
	"context"
	"log/slog"

	"github.com/noticesd/noticesd/api"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/mail"
	"github.com/noticesd/noticesd/internal/mailer"
	"github.com/noticesd/noticesd/internal/store"
)

// newMailer builds the Mailer of alert_email mail over a backend's mail
// queue and watches, or nil when mail is off (NOTICES_SMTP_URL unset). The
// embedded `serve` and every scale `noticesd worker` run it whole: each
// claims due jobs from the backend's queue with a lease. Mail retries use
// NOTICES_DELIVERY_RETRY_UNIT.
func newMailer(cfg config.Config, q store.Mail, w store.Watches, log *slog.Logger) (*mailer.Mailer, error) {
	sender, err := cfg.MailSender()
	if err != nil || sender == nil {
		return nil, err
	}
	log.Info("alert_email mail on", "smtp", mail.Redact(cfg.SMTPURL), "digest_time", cfg.DigestSchedule().String())
	return mailer.New(mailer.Config{Queue: q, Watches: w, Sender: sender, Schedule: cfg.DigestSchedule(),
		RetryUnit: cfg.DeliveryRetryUnit, Logger: log})
}

// mailHealth reports alert_email mail on /health: the server without its
// credentials, the digest time and the queue of the backend.
type mailHealth struct {
	cfg   config.Config
	queue store.Mail
	log   *slog.Logger
}

// newMailHealth is the /health source of mail, nil (reported as off) when
// mail is off.
func newMailHealth(cfg config.Config, q store.Mail, log *slog.Logger) api.MailSource {
	if !cfg.MailOn() {
		return nil
	}
	return mailHealth{cfg: cfg, queue: q, log: log}
}

// MailStatus implements api.MailSource.
func (h mailHealth) MailStatus(ctx context.Context) api.MailStatus {
	st := api.MailStatus{State: api.MailOn}
	if u, err := mail.ParseURL(h.cfg.SMTPURL); err == nil {
		server := u.Host
		st.Server = &server
	}
	dt := h.cfg.DigestSchedule().String()
	st.DigestTime = &dt
	q, err := h.queue.MailStatus(ctx)
	if err != nil {
		h.log.Warn("health: mail queue unreadable", "err", err)
		return st
	}
	st.Pending, st.Dead = &q.Pending, &q.Dead
	if q.LastError != "" {
		st.LastError = &q.LastError
	}
	return st
}
