package scheduler

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/mail"
	"github.com/noticesd/noticesd/internal/mail/mailtest"
	"github.com/noticesd/noticesd/internal/mailer"
	"github.com/noticesd/noticesd/internal/watch"
)

// mailer is the Mailer a `noticesd worker` runs (its whole loop: digests
// and sending) on the SMTP server srv, not started.
func (h *harness) mailer(srv *mailtest.Server) *mailer.Mailer {
	h.t.Helper()
	s, err := mail.NewSender(srv.URL(), "alerts@noticesd.test", 5*time.Second)
	if err != nil {
		h.t.Fatal(err)
	}
	m, err := mailer.New(mailer.Config{Queue: h.rs, Watches: h.rs, Sender: s, RetryUnit: unit, Poll: 20 * time.Millisecond})
	if err != nil {
		h.t.Fatal(err)
	}
	return m
}

// startMailer runs m's loop until the test ends, as `noticesd worker`
// does. The loop's digest window (the latest real one) is run first, here,
// before the test makes matches: it then queues nothing, and the tests
// queue their own window.
func (h *harness) startMailer(m *mailer.Mailer) {
	h.t.Helper()
	ctx := context.Background()
	if _, err := m.DigestOnce(ctx); err != nil {
		h.t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			h.t.Error(err)
		}
	})
}

// alertWatch creates a watch of company with an alert_email.
func (h *harness) alertWatch(company int) watch.Watch {
	h.t.Helper()
	id, _ := ident.Normalise(acn(company))
	email := "credit@acme.test"
	w, err := h.rs.CreateWatch(context.Background(), watch.New(watch.CreateRequest{Identifiers: []ident.ID{id}, Name: "Loan book",
		AlertEmail: &email}, h.acc.AccountID, time.Now()), account.DefaultPlans()["enterprise"])
	if err != nil {
		h.t.Fatal(err)
	}
	return w
}

// TestMailDeactivationAlertFromWorker: a watch whose webhook fails ten
// notices in a row is deactivated by the asynq delivery tasks, and its
// alert_email gets one alert, sent by the worker's mailer from the Redis
// mail queue.
func TestMailDeactivationAlertFromWorker(t *testing.T) {
	h := newHarness(t)
	srv := mailtest.Start(t)
	h.start("w1")
	h.startMailer(h.mailer(srv))
	h.recv.setStatus(func(string, int) int { return http.StatusServiceUnavailable })
	w := h.alertWatch(21)
	if _, err := h.rs.SetWebhook(context.Background(), h.acc.AccountID, w.ID, h.recv.srv.URL+"/hook", "whsec_test", time.Now()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < delivery.DeactivateAfter; i++ {
		h.ingest("ALERT-"+string(rune('A'+i)), 21, time.Now())
	}
	eventually(t, 60*time.Second, "the deactivation alert arrives", func() bool { return len(srv.Messages()) >= 1 })
	msg := srv.Messages()[0]
	text := msg.Text()
	for _, want := range []string{"Loan book", w.ID, "10 consecutive notices", "HTTP 503", "PATCH /v1/watches/" + w.ID} {
		if !strings.Contains(text, want) {
			t.Errorf("the alert lacks %q:\n%s", want, text)
		}
	}
	if !strings.HasPrefix(msg.MessageID(), "deactivated."+w.ID+".") {
		t.Errorf("Message-ID %q", msg.MessageID())
	}
	eventually(t, 10*time.Second, "the mail queue drains", func() bool {
		st, err := h.rs.MailStatus(context.Background())
		return err == nil && st.Pending == 0
	})
	if n := len(srv.Messages()); n != 1 {
		t.Fatalf("%d emails for one deactivation", n)
	}
}

// TestMailDigestRetryAcrossWorkers: two workers' mailers share the Redis
// mail queue; a digest the server refuses is retried after the retry unit
// with the same Message-ID and accepted once, and neither worker, nor a
// third started later, queues or sends the window again.
func TestMailDigestRetryAcrossWorkers(t *testing.T) {
	h := newHarness(t)
	srv := mailtest.Start(t)
	m1, m2 := h.mailer(srv), h.mailer(srv)
	h.start("w1")
	h.startMailer(m1)
	h.startMailer(m2)
	w := h.alertWatch(22)
	h.ingest("DIGEST-1", 22, time.Now())
	h.ingest("DIGEST-2", 22, time.Now())
	srv.Refuse(true)
	window := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
	ctx := context.Background()
	// Both matches must be in the match log before the window is queued
	// (a digest queued after the first alone would list one notice).
	eventually(t, 10*time.Second, "both notices in the watch's match log", func() bool {
		page, err := h.rs.Matches(ctx, h.acc.AccountID, w.ID, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Notices) == 2
	})
	eventually(t, 10*time.Second, "the digest is queued", func() bool {
		n, err := m1.QueueDigests(ctx, window, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	})
	eventually(t, 10*time.Second, "the server refuses the digest", func() bool { return srv.Refused() >= 1 })
	// The server counts its refusal before the worker has read the reply
	// and recorded it: wait for the record.
	var st mail.QueueStatus
	eventually(t, 10*time.Second, "the refusal recorded", func() bool {
		var err error
		if st, err = h.rs.MailStatus(ctx); err != nil {
			t.Fatal(err)
		}
		return st.LastError != ""
	})
	if st.Pending != 1 || !strings.Contains(st.LastError, "451") {
		t.Fatalf("queue after a refusal: %+v", st)
	}
	srv.Refuse(false)
	eventually(t, 20*time.Second, "the retry is accepted", func() bool { return len(srv.Messages()) == 1 })
	if id := srv.Messages()[0].MessageID(); id != mail.MessageID(mail.DigestID(w.ID, window), "noticesd.test") {
		t.Errorf("Message-ID %q", id)
	}
	if !strings.Contains(srv.Messages()[0].Text(), "2 new notices match") {
		t.Errorf("digest:\n%s", srv.Messages()[0].Text())
	}
	// The record of the accepted attempt ends the job: until then another
	// claim could not take it either (its lease holds).
	eventually(t, 10*time.Second, "the digest recorded as sent", func() bool {
		st, err := h.rs.MailStatus(ctx)
		return err == nil && st.Pending == 0
	})
	// Both workers, and a third started now: the window is not queued
	// again, and nothing is left to send.
	m3 := h.mailer(srv)
	for _, m := range []*mailer.Mailer{m1, m2, m3} {
		if n, err := m.QueueDigests(ctx, window, time.Now()); err != nil || n != 0 {
			t.Fatalf("the same window queued again: %d %v", n, err)
		}
	}
	if n, err := m3.SendOnce(ctx); err != nil || n != 0 {
		t.Fatalf("a worker started after the digest was sent sent %d more (%v)", n, err)
	}
	if n := len(srv.Messages()); n != 1 {
		t.Fatalf("%d messages for one digest window, want 1", n)
	}
}
