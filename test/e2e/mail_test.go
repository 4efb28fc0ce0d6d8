package e2e

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/mail/mailtest"
	"github.com/noticesd/noticesd/test/testbin"
)

// TestMailDeactivationAlert runs the built binary with NOTICES_SMTP_URL
// pointing at a real SMTP server on loopback: /health says mail is on; a
// watch whose webhook answers 503 for ten notices is deactivated by serve's
// worker and its alert_email gets one alert; after a SIGKILL and a restart
// nothing is sent again.
func TestMailDeactivationAlert(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := testbin.Build(t)
	dir := t.TempDir()
	smtp := mailtest.Start(t)
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer hook.Close()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"NOTICES_DATA_DIR=" + filepath.Join(dir, "data"),
		"NOTICES_WEBHOOK_ALLOW_PRIVATE=true",
		"NOTICES_WEBHOOK_CA_FILE=" + caFile,
		"NOTICES_DELIVERY_RETRY_UNIT=100ms",
		"NOTICES_SOURCE=none",
		"NOTICES_SECRET_KEY=" + config.DevelopmentSecretKey,
		"NOTICES_SMTP_URL=" + smtp.URL(),
		"NOTICES_MAIL_FROM=noticesd <alerts@noticesd.test>",
	}
	acct := createAccount(t, bin, env, "Mail", "enterprise")
	srv := startServe(t, bin, env)
	var health struct {
		Mail struct {
			State   string `json:"state"`
			Server  string `json:"server"`
			Pending *int   `json:"pending"`
		} `json:"mail"`
	}
	call(t, "GET", srv.base+"/health", "", nil, http.StatusOK, &health)
	if health.Mail.State != "on" || !strings.HasPrefix(health.Mail.Server, "127.0.0.1:") || health.Mail.Pending == nil {
		t.Fatalf("/health mail = %+v, want on with the server and the queue", health.Mail)
	}

	const acn = "100000007"
	var w struct {
		ID     string `json:"id"`
		Active bool   `json:"active"`
	}
	call(t, "POST", srv.base+"/v1/watches", acct.AccountKey,
		map[string]any{"name": "Loan book", "identifiers": []string{acn}, "alert_email": "credit@acme.test"}, http.StatusCreated, &w)
	call(t, "POST", srv.base+"/v1/watches/"+w.ID+"/webhook", acct.AccountKey, map[string]string{"url": hook.URL + "/hook"}, http.StatusCreated, nil)
	ingestNotices(t, bin, env, dir, "MAIL", "MAIL TEST PTY LTD", []string{acn, acn, acn, acn, acn, acn, acn, acn, acn, acn})

	testbin.WaitFor(t, 60*time.Second, "the deactivation alert", func() bool { return len(smtp.Messages()) >= 1 })
	call(t, "GET", srv.base+"/v1/watches/"+w.ID, acct.AccountKey, nil, http.StatusOK, &w)
	if w.Active {
		t.Fatal("the watch is still active after the alert")
	}
	msg := smtp.Messages()[0]
	for _, want := range []string{"Loan book", w.ID, "10 consecutive notices", "HTTP 503", "PATCH /v1/watches/" + w.ID} {
		if !strings.Contains(msg.Text(), want) {
			t.Errorf("the alert lacks %q:\n%s", want, msg.Text())
		}
	}

	// Killed and restarted: the alert is not sent again. The kill comes
	// once the alert is recorded as sent: the SMTP server has it as soon as
	// it is accepted, a moment before the mailer records it, and a kill in
	// between leaves it pending until its lease ends (then it is sent again:
	// mail is at least once).
	testbin.WaitFor(t, 30*time.Second, "the alert recorded as sent", func() bool {
		call(t, "GET", srv.base+"/health", "", nil, http.StatusOK, &health)
		return health.Mail.Pending != nil && *health.Mail.Pending == 0
	})
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = srv.cmd.Wait()
	srv = startServe(t, bin, env)
	testbin.WaitFor(t, 10*time.Second, "the mail queue is empty after the restart", func() bool {
		call(t, "GET", srv.base+"/health", "", nil, http.StatusOK, &health)
		return health.Mail.Pending != nil && *health.Mail.Pending == 0
	})
	if n := len(smtp.Messages()); n != 1 {
		t.Fatalf("%d emails after the restart, want the one alert", n)
	}
}
