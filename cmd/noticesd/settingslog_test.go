package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/noticesd/noticesd/internal/config"
)

// lockedBuffer is a buffer the log writes to while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
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
	var logs lockedBuffer
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
