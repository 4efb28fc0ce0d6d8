package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/api"
	"github.com/noticesd/noticesd/internal/config"
)

// TestMailHealth: with NOTICES_SMTP_URL set /health says mail is on and
// shows the server, the digest time and the queue, never the password,
// which no log line shows either; unset, there is no source (off).
func TestMailHealth(t *testing.T) {
	const password = "s3cret-pa55"
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	if newMailHealth(cfg, nil, slog.Default()) != nil {
		t.Fatal("a mail source without NOTICES_SMTP_URL; /health must say off")
	}
	cfg.SMTPURL = "smtp://alerts:" + password + "@127.0.0.1:2525"
	cfg.MailFrom = "noticesd <alerts@example.com>"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	m, err := newMailer(cfg, st, st, false, log)
	if err != nil || m == nil {
		t.Fatalf("mailer: %v %v", m, err)
	}
	h := newMailHealth(cfg, st, log)
	got := h.MailStatus(context.Background())
	b, _ := json.Marshal(got)
	if got.State != api.MailOn || got.Server == nil || *got.Server != "127.0.0.1:2525" || got.Pending == nil || *got.Pending != 0 ||
		got.DigestTime == nil || *got.DigestTime != "07:00 Australia/Sydney" {
		t.Errorf("mail status %s", b)
	}
	if strings.Contains(string(b), password) || strings.Contains(logs.String(), password) {
		t.Errorf("the SMTP password shows: %s / %s", b, logs.String())
	}
	if !strings.Contains(logs.String(), "smtp://alerts:xxxxx@127.0.0.1:2525") {
		t.Errorf("the start log does not name the server (redacted): %s", logs.String())
	}
}
