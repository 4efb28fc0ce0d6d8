package mailer_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/mail"
	"github.com/noticesd/noticesd/internal/mail/mailtest"
	"github.com/noticesd/noticesd/internal/mailer"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/sqlite"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
)

// TestStartSendsTheDigest runs the loop as serve does (Start, Shutdown) on
// a real SQLite store and SMTP server: at the digest time on the fake
// clock the digest is queued and sent without anyone calling it.
func TestStartSendsTheDigest(t *testing.T) {
	ctx := context.Background()
	sched, err := mail.ParseSchedule("07:00 UTC")
	if err != nil {
		t.Fatal(err)
	}
	clock := storetest.NewClock(time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC))
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "notices.db"), sqlite.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acc, err := st.CreateAccount(ctx, "Acme", "enterprise")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := ident.Normalise(storetest.ACNAlpha)
	email := "credit@acme.test"
	w, err := st.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: []ident.ID{id}, AlertEmail: &email}, acc.AccountID, clock.Now()),
		account.DefaultPlans()["enterprise"])
	if err != nil {
		t.Fatal(err)
	}
	n := storetest.AlphaNotice("LOOP-1", clock.Now())
	if _, err := st.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
		t.Fatal(err)
	}
	srv := mailtest.Start(t)
	sender, err := mail.NewSender(srv.URL(), "alerts@noticesd.test", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m, err := mailer.New(mailer.Config{Queue: st, Watches: st, Sender: sender, Schedule: sched, Poll: 10 * time.Millisecond, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(ctx)
	// Before 07:00 the latest window (yesterday's) is run at start: the
	// match arrived after the watch, so it is listed then; then 07:00.
	waitFor(t, func() bool { return len(srv.Messages()) == 1 })
	// The second match arrives before 07:00 (the window already run stays
	// done until then): arriving after the clock moved, it could miss a
	// 07:00 run the loop made in between, which finds nothing to send.
	if _, err := st.UpsertNotices(ctx, []notice.Notice{storetest.AlphaNotice("LOOP-2", clock.Now().Add(30*time.Minute))}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	waitFor(t, func() bool { return len(srv.Messages()) == 2 })
	got := srv.Messages()[1]
	if got.MessageID() != mail.MessageID(mail.DigestID(w.ID, clock.Now()), "noticesd.test") || !strings.Contains(got.Text(), "1 new notice matches") {
		t.Errorf("the 07:00 digest: %s\n%s", got.MessageID(), got.Text())
	}
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond for up to 10 s (the loop polls every 10 ms).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the mailer loop did not send in 10 s")
		}
	}
}
