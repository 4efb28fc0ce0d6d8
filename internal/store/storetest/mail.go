package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/mail"
	"github.com/noticesd/noticesd/internal/mail/mailtest"
	"github.com/noticesd/noticesd/internal/mailer"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/watch"
)

// MailBackend bundles what RunMail exercises: a watch backend, its mail
// queue, and a way to deactivate a watch through the backend's own
// delivery ledger.
type MailBackend struct {
	WatchBackend
	Mail store.Mail
	// FailDeliveries makes the watch (which has a webhook) fail
	// delivery.DeactivateAfter notices through the backend's ledger, at
	// the suite's clock, so the ledger deactivates it. It returns the
	// last error it recorded.
	FailDeliveries func(t *testing.T, accountID, watchID string) string
}

// AlphaNotice is a new notice of ACNAlpha (an appointment of a
// liquidator) with source_id source, published at: what the mail and
// delivery tests ingest.
func AlphaNotice(source string, at time.Time) notice.Notice {
	acn := ACNAlpha
	return notice.Notice{SourceID: source, ID: notice.IDFor(source), PublishedAt: notice.Timestamp(at), PublishedDate: notice.PublishedDate(at),
		ACN: &acn, CompanyName: "ALPHA MINING PTY LTD", NoticeType: "Appointment of liquidator",
		NoticeCode: "APP", NoticePurpose: "Appointment", State: "NSW", Status: "In Liquidation"}
}

// mailUnit is the retry unit of the mail tests.
const mailUnit = time.Minute

// RunMail runs the alert_email contract (issue 17) against backends made
// by open, each with a real SMTP server on loopback.
func RunMail(t *testing.T, open func(t *testing.T) MailBackend) {
	t.Run("DeactivationAlert", func(t *testing.T) { testDeactivationAlert(t, newMailFix(t, open(t))) })
	t.Run("DigestAtItsTime", func(t *testing.T) { testDigestAtItsTime(t, newMailFix(t, open(t))) })
	t.Run("DigestRetryWhenRefused", func(t *testing.T) { testDigestRetry(t, newMailFix(t, open(t))) })
	t.Run("NoDuplicateAfterRestart", func(t *testing.T) { testNoDuplicateAfterRestart(t, newMailFix(t, open(t))) })
	t.Run("DeletedWatchDropsMail", func(t *testing.T) { testDeletedWatchDropsMail(t, newMailFix(t, open(t))) })
	t.Run("DeadDigestListedAgainAndPruned", func(t *testing.T) { testDeadDigest(t, newMailFix(t, open(t))) })
}

type mailFix struct {
	t       *testing.T
	ctx     context.Context
	b       MailBackend
	smtp    *mailtest.Server
	sched   mail.Schedule
	account string
	seq     int
}

func newMailFix(t *testing.T, b MailBackend) *mailFix {
	t.Helper()
	sched, err := mail.ParseSchedule(mail.DefaultDigestTime)
	if err != nil {
		t.Fatal(err)
	}
	f := &mailFix{t: t, ctx: context.Background(), b: b, smtp: mailtest.Start(t), sched: sched}
	created, err := b.Accounts.CreateAccount(f.ctx, "Acme Credit", "enterprise")
	if err != nil {
		t.Fatal(err)
	}
	f.account = created.AccountID
	return f
}

// mailer is a fresh Mailer (a new process) over the backend and the SMTP
// server, on the suite's clock.
func (f *mailFix) mailer() *mailer.Mailer {
	f.t.Helper()
	s, err := mail.NewSender(f.smtp.URL(), "noticesd <alerts@noticesd.test>", 5*time.Second)
	if err != nil {
		f.t.Fatal(err)
	}
	m, err := mailer.New(mailer.Config{Queue: f.b.Mail, Watches: f.b.Watches, Sender: s, Schedule: f.sched,
		RetryUnit: mailUnit, Now: f.b.Clock.Now})
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

// watch creates a watch of ACNAlpha with an alert_email.
func (f *mailFix) watch(name string) watch.Watch {
	f.t.Helper()
	body := fmt.Sprintf(`{"name": %q, "identifiers": [%q], "alert_email": "credit@acme.test"}`, name, ACNAlpha)
	req, err := watch.ParseCreate([]byte(body))
	if err != nil {
		f.t.Fatal(err)
	}
	w, err := f.b.Watches.CreateWatch(f.ctx, watch.New(req, f.account, f.b.Clock.Now()), account.DefaultPlans()["enterprise"])
	if err != nil {
		f.t.Fatal(err)
	}
	return w
}

// notices stores n new notices of ACNAlpha published now.
func (f *mailFix) notices(n int) {
	f.t.Helper()
	batch := make([]notice.Notice, n)
	for i := range batch {
		f.seq++
		src := fmt.Sprintf("https://notices.example.gov.au/M-%04d", f.seq)
		batch[i] = AlphaNotice(fmt.Sprintf("M-%04d", f.seq), f.b.Clock.Now())
		batch[i].SourceURL = &src
	}
	if _, err := f.b.Writer.UpsertNotices(f.ctx, batch); err != nil {
		f.t.Fatal(err)
	}
}

// setClock moves the suite's clock to the Sydney wall time hh:mm on the
// day after the clock's current Sydney day when that time has passed.
func (f *mailFix) setClock(hh, mm int) time.Time {
	f.t.Helper()
	now := f.b.Clock.Now()
	l := now.In(f.sched.Loc)
	at := time.Date(l.Year(), l.Month(), l.Day(), hh, mm, 0, 0, f.sched.Loc)
	if !at.After(now) {
		at = at.AddDate(0, 0, 1)
	}
	f.b.Clock.Advance(at.Sub(now))
	return at
}

func (f *mailFix) digestOnce(m *mailer.Mailer) int {
	f.t.Helper()
	n, err := m.DigestOnce(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *mailFix) sendOnce(m *mailer.Mailer) int {
	f.t.Helper()
	n, err := m.SendOnce(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func wantContains(t *testing.T, what, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Errorf("%s does not contain %q:\n%s", what, p, text)
		}
	}
}

func testDeactivationAlert(t *testing.T, f *mailFix) {
	w := f.watch("Loan book")
	lastErr := f.b.FailDeliveries(t, f.account, w.ID)
	got, err := f.b.Watches.Watch(f.ctx, f.account, w.ID)
	if err != nil || got.Active {
		t.Fatalf("watch after %d failed notices: active=%v err=%v; want deactivated", 10, got.Active, err)
	}
	m := f.mailer()
	if n := f.sendOnce(m); n != 1 {
		t.Fatalf("sent %d emails, want the one deactivation alert", n)
	}
	msgs := f.smtp.Messages()
	if len(msgs) != 1 {
		t.Fatalf("the server received %d messages, want 1", len(msgs))
	}
	raw := msgs[0].Text()
	wantContains(t, "the alert", raw, "Loan book", w.ID, "10 consecutive notices", lastErr,
		"PATCH /v1/watches/"+w.ID, `{"active": true}`, "<html>")
	if msgs[0].To[0] != "credit@acme.test" || !strings.HasPrefix(msgs[0].MessageID(), "deactivated."+w.ID+".") {
		t.Errorf("alert to %v with Message-ID %q", msgs[0].To, msgs[0].MessageID())
	}
	// Once per deactivation: nothing more to send, now or later.
	f.b.Clock.Advance(time.Hour)
	if n := f.sendOnce(f.mailer()); n != 0 || len(f.smtp.Messages()) != 1 {
		t.Fatalf("a second pass sent %d more", n)
	}
	st, err := f.b.Mail.MailStatus(f.ctx)
	if err != nil || st.Pending != 0 || st.Dead != 0 {
		t.Fatalf("queue after the alert: %+v %v", st, err)
	}
}

func testDigestAtItsTime(t *testing.T, f *mailFix) {
	f.setClock(6, 0)
	w := f.watch("Loan book")
	quiet := f.watch("Quiet book") // its only matches arrive below
	m := f.mailer()
	// 06:00: the window of yesterday 07:00 is run at once (nothing new yet).
	if n := f.digestOnce(m); n != 0 {
		t.Fatalf("queued %d digests before any match", n)
	}
	f.notices(mail.DigestCap + 3)
	f.setClock(6, 59)
	if n := f.digestOnce(m); n != 0 {
		t.Fatalf("queued %d digests before 07:00", n)
	}
	window := f.setClock(7, 0)
	if n := f.digestOnce(m); n != 2 {
		t.Fatalf("queued %d digests at 07:00, want 2 (both watches match)", n)
	}
	if n := f.sendOnce(m); n != 2 {
		t.Fatalf("sent %d digests, want 2", n)
	}
	msgs := f.smtp.Messages()
	var mine *mailtest.Message
	for i := range msgs {
		if msgs[i].MessageID() == mail.MessageID(mail.DigestID(w.ID, window), "noticesd.test") {
			mine = &msgs[i]
		}
	}
	if mine == nil {
		t.Fatalf("no digest with the Message-ID of watch %s and window %s among %d messages", w.ID, window, len(msgs))
	}
	raw := mine.Text()
	wantContains(t, "the digest", raw, "53 new notices match", "Loan book", "ALPHA MINING PTY LTD", "Appointment of liquidator",
		"https://notices.example.gov.au/M-0001", "and 3 more", "<table")
	if strings.Contains(raw, "M-0051") {
		t.Errorf("the digest lists more than %d matches", mail.DigestCap)
	}
	// Nothing new the next day: nothing sent.
	f.setClock(7, 0)
	if n := f.digestOnce(m); n != 0 {
		t.Fatalf("queued %d digests with nothing new", n)
	}
	// One new match: only it is listed, the next day.
	f.notices(1)
	next := f.setClock(7, 0)
	if n := f.digestOnce(m); n != 2 {
		t.Fatalf("queued %d digests for one new match, want 2", n)
	}
	f.sendOnce(m)
	msgs = f.smtp.Messages()
	if len(msgs) != 4 {
		t.Fatalf("the server has %d messages, want 4", len(msgs))
	}
	for _, msg := range msgs[2:] {
		raw := msg.Text()
		if !strings.Contains(raw, "1 new notice matches") || !strings.Contains(raw, "M-0054") || strings.Contains(raw, "M-0053") {
			t.Errorf("second digest does not list exactly the one new match:\n%s", raw)
		}
		if id := msg.MessageID(); id != mail.MessageID(mail.DigestID(w.ID, next), "noticesd.test") && id != mail.MessageID(mail.DigestID(quiet.ID, next), "noticesd.test") {
			t.Errorf("Message-ID %q is not of the window %s", id, next)
		}
	}
}

func testDigestRetry(t *testing.T, f *mailFix) {
	f.setClock(6, 0)
	w := f.watch("Loan book")
	m := f.mailer()
	f.digestOnce(m)
	f.notices(2)
	window := f.setClock(7, 0)
	f.smtp.Refuse(true)
	if n := f.digestOnce(m); n != 1 {
		t.Fatalf("queued %d digests", n)
	}
	if n := f.sendOnce(m); n != 0 || f.smtp.Refused() != 1 {
		t.Fatalf("sent %d with the server refusing (refused %d)", n, f.smtp.Refused())
	}
	st, err := f.b.Mail.MailStatus(f.ctx)
	if err != nil || st.Pending != 1 || !strings.Contains(st.LastError, "451") {
		t.Fatalf("queue after a refusal: %+v %v; want 1 pending with the 451", st, err)
	}
	// Not due before the retry unit has passed.
	f.b.Clock.Advance(mailUnit / 2)
	if f.sendOnce(m); f.smtp.Refused() != 1 {
		t.Fatalf("retried after %s, before its wait of %s", mailUnit/2, mailUnit)
	}
	// A second refusal waits 2 units (backoff).
	f.b.Clock.Advance(mailUnit / 2)
	f.sendOnce(m)
	if f.smtp.Refused() != 2 {
		t.Fatalf("refused %d times after one unit, want 2", f.smtp.Refused())
	}
	f.smtp.Refuse(false)
	f.b.Clock.Advance(mailUnit)
	if n := f.sendOnce(m); n != 0 {
		t.Fatalf("sent %d one unit after the second failure; the wait is two units", n)
	}
	f.b.Clock.Advance(mailUnit)
	if n := f.sendOnce(m); n != 1 {
		t.Fatalf("sent %d after the backoff", n)
	}
	msgs := f.smtp.Messages()
	if len(msgs) != 1 || msgs[0].MessageID() != mail.MessageID(mail.DigestID(w.ID, window), "noticesd.test") {
		t.Fatalf("after the retries the server has %d messages (%v)", len(msgs), msgs)
	}
	if st, _ := f.b.Mail.MailStatus(f.ctx); st.Pending != 0 || st.LastError != "" {
		t.Errorf("queue after the retry succeeded: %+v", st)
	}
}

func testNoDuplicateAfterRestart(t *testing.T, f *mailFix) {
	f.setClock(6, 0)
	w := f.watch("Loan book")
	f.digestOnce(f.mailer())
	f.notices(2)
	window := f.setClock(7, 0)
	first := f.mailer()
	if n := f.digestOnce(first); n != 1 {
		t.Fatalf("queued %d", n)
	}
	// The process dies mid-send: claimed, never completed.
	jobs, err := f.b.Mail.ClaimMail(f.ctx, f.b.Clock.Now(), 10, time.Minute)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	// A second process (and a third, racing it) over the same store, the
	// same window: no second job; the claimed one is due when its lease ends.
	second, third := f.mailer(), f.mailer()
	if n := f.digestOnce(second) + f.digestOnce(third); n != 0 {
		t.Fatalf("a restarted process queued the same window again (%d)", n)
	}
	if n := f.sendOnce(second); n != 0 {
		t.Fatalf("sent %d while the dead process's lease holds", n)
	}
	f.b.Clock.Advance(time.Minute)
	if n := f.sendOnce(second) + f.sendOnce(third); n != 1 {
		t.Fatalf("sent %d after the lease expired, want 1", n)
	}
	// Later in the day new matches arrive and the process restarts again:
	// the window was run, so nothing is sent before the next digest time.
	f.b.Clock.Advance(3 * time.Hour)
	f.notices(1)
	fourth := f.mailer()
	if n := f.digestOnce(fourth) + f.sendOnce(fourth); n != 0 {
		t.Fatalf("a restart later the same day sent %d more", n)
	}
	msgs := f.smtp.Messages()
	if len(msgs) != 1 || msgs[0].MessageID() != mail.MessageID(mail.DigestID(w.ID, window), "noticesd.test") {
		t.Fatalf("the server has %d messages, want the one digest", len(msgs))
	}
}

func testDeletedWatchDropsMail(t *testing.T, f *mailFix) {
	f.setClock(6, 0)
	w := f.watch("Loan book")
	m := f.mailer()
	f.digestOnce(m)
	f.notices(1)
	f.setClock(7, 0)
	if n := f.digestOnce(m); n != 1 {
		t.Fatalf("queued %d", n)
	}
	if err := f.b.Watches.DeleteWatch(f.ctx, f.account, w.ID); err != nil {
		t.Fatal(err)
	}
	if n := f.sendOnce(m); n != 0 || len(f.smtp.Messages()) != 0 {
		t.Fatalf("sent %d emails of a deleted watch", n)
	}
	if st, err := f.b.Mail.MailStatus(f.ctx); err != nil || st.Pending != 0 {
		t.Fatalf("queue after the watch was deleted: %+v %v", st, err)
	}
}

func testDeadDigest(t *testing.T, f *mailFix) {
	f.setClock(6, 0)
	f.watch("Loan book")
	m := f.mailer()
	f.digestOnce(m)
	f.notices(2)
	f.setClock(7, 0)
	f.smtp.Refuse(true)
	if n := f.digestOnce(m); n != 1 {
		t.Fatalf("queued %d", n)
	}
	for attempt := 1; attempt <= mail.MaxAttempts; attempt++ {
		f.sendOnce(m)
		if f.smtp.Refused() != attempt {
			t.Fatalf("attempt %d: the server saw %d attempts", attempt, f.smtp.Refused())
		}
		f.b.Clock.Advance(time.Duration(attempt) * mailUnit)
	}
	st, err := f.b.Mail.MailStatus(f.ctx)
	if err != nil || st.Pending != 0 || st.Dead != 1 || st.LastError == "" {
		t.Fatalf("after %d refusals: %+v %v; want one dead with its error", mail.MaxAttempts, st, err)
	}
	if f.sendOnce(m); f.smtp.Refused() != mail.MaxAttempts {
		t.Fatalf("a dead digest was tried again")
	}
	// The dead digest was never accepted: the next window lists its matches.
	f.smtp.Refuse(false)
	f.setClock(7, 0)
	if n := f.digestOnce(m); n != 1 {
		t.Fatalf("queued %d the day after a dead digest", n)
	}
	f.sendOnce(m)
	if msgs := f.smtp.Messages(); len(msgs) != 1 || !strings.Contains(msgs[0].Text(), "2 new notices match") {
		t.Fatalf("the next digest: %d messages", len(msgs))
	}
	// Finished jobs are pruned after mail.Retention.
	f.b.Clock.Advance(mail.Retention + 24*time.Hour)
	f.digestOnce(m)
	if st, err := f.b.Mail.MailStatus(f.ctx); err != nil || st.Dead != 0 || st.Pending != 0 {
		t.Fatalf("after the retention: %+v %v", st, err)
	}
}
