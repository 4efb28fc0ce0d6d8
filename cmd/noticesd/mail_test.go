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
	m, err := newMailer(cfg, st, st, log)
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

// TestServeLogsSettingsRedacted: serve's start line lists the settings
// that differ from the defaults, the secret key as xxxxx and the SMTP
// password masked (the table's secrecy), never their values.
func TestServeLogsSettingsRedacted(t *testing.T) {
	const password = "smtp-pa55word"
	cfg := config.Default()
	cfg.Addr = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.SecretKey = testSecretKey
	cfg.SMTPURL = "smtp://alerts:" + password + "@127.0.0.1:2525"
	cfg.MailFrom = "alerts@example.com"
	// Read once serve has returned; slog serializes the writes.
	var logs bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, cfg, slog.New(slog.NewJSONHandler(&logs, nil)), func(string) { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-served:
		t.Fatalf("serve stopped: %v", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, `"msg":"serving"`) {
			line = l
		}
	}
	for _, want := range []string{`"NOTICES_SECRET_KEY":"xxxxx"`, `"NOTICES_SMTP_URL":"smtp://alerts:xxxxx@127.0.0.1:2525"`, `"NOTICES_DATA_DIR":`} {
		if !strings.Contains(line, want) {
			t.Errorf("the serving line lacks %s: %s", want, line)
		}
	}
	if strings.Contains(out, password) || strings.Contains(out, testSecretKey) {
		t.Errorf("the log shows a secret:\n%s", out)
	}
}
