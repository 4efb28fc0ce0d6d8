// Package e2e runs the built noticesd binary as a user would: a separate
// process, its CLI and its HTTP API. Tests here build the binary once
// (go build -tags sqlite_fts5) and are skipped with -short.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-github/v75/github"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/test/testbin"
)

// buildBinary builds cmd/noticesd into a temporary directory.

// crashReceiver is the webhook endpoint of the crash test. It verifies each
// signature over the raw body with go-github's ValidateSignature, answers
// 401 on a mismatch, and deduplicates on X-Notices-Delivery. While hang is
// set, valid requests after the first okFirst never answer (they are in
// flight when the server is killed).
type crashReceiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	secret  string
	okFirst int
	hang    bool
	valid   int
	badSig  int
	hung    int
	seen    map[string]string // delivery id -> notice id
	release chan struct{}
}

func (r *crashReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	r.mu.Lock()
	secret := r.secret
	r.mu.Unlock()
	if err := github.ValidateSignature(req.Header.Get("X-Notices-Signature"), body, []byte(secret)); err != nil {
		r.mu.Lock()
		r.badSig++
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var p struct {
		WatchID string `json:"watch_id"`
		Notice  struct {
			ID string `json:"id"`
		} `json:"notice"`
	}
	if err := json.Unmarshal(body, &p); err != nil || p.Notice.ID == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.valid++
	hang := r.hang && r.valid > r.okFirst
	if hang {
		r.hung++
	}
	release := r.release
	r.mu.Unlock()
	if hang {
		select {
		case <-release:
		case <-req.Context().Done():
		}
		return // never answered: the connection drops with the server
	}
	r.mu.Lock()
	r.seen[req.Header.Get("X-Notices-Delivery")] = p.Notice.ID
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *crashReceiver) state() (unique, hung, badSig int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen), r.hung, r.badSig
}

// server is one running `noticesd serve`.
type server struct {
	cmd    *exec.Cmd
	stderr *testbin.LockedBuffer
	base   string
}

func startServe(t *testing.T, bin string, env []string) *server {
	t.Helper()
	addr := testbin.FreeAddr(t)
	s := &server{stderr: &testbin.LockedBuffer{}, base: "http://" + addr}
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = append(append(os.Environ(), env...), "NOTICES_ADDR="+addr)
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(s.base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer /health within 30s; its stderr:\n%s", s.stderr)
		}
	}
}

// call makes an API request with the account key and decodes the answer.
func call(t *testing.T, method, url, key string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s = %d %s; want %d", method, url, resp.StatusCode, data, want)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, data)
		}
	}
}

// accountKeys are the keys `noticesd accounts create` prints.
type accountKeys struct {
	AccountKey string `json:"account_key"`
	ReadKey    string `json:"read_key"`
}

// createAccount creates an account with the built binary's CLI and
// returns its keys.
func createAccount(t *testing.T, bin string, env []string, name, plan string) accountKeys {
	t.Helper()
	var keys accountKeys
	if err := json.Unmarshal(testbin.Run(t, bin, env, "accounts", "create", "--name", name, "--plan", plan), &keys); err != nil || keys.AccountKey == "" || keys.ReadKey == "" {
		t.Fatalf("accounts create: %v (keys %+v)", err, keys)
	}
	return keys
}

// ingestNotices writes one appointment notice per ACN in acns (source_id
// prefix + a number, the i-th published i minutes ago) and loads them with
// a separate `noticesd ingest` process.
func ingestNotices(t *testing.T, bin string, env []string, dir, prefix, company string, acns []string) {
	t.Helper()
	var lines bytes.Buffer
	now := time.Now().UTC()
	for i, acn := range acns {
		line, _ := json.Marshal(map[string]any{
			"source_id": fmt.Sprintf("%s%07d", prefix, i), "published_at": now.Add(-time.Duration(i) * time.Minute).Format(time.RFC3339),
			"acn": acn, "company_name": company, "notice_type": "Appointment of liquidator",
			"notice_code": "APP", "notice_purpose": "Appointment", "state": "NSW", "status": "In Liquidation",
			"text": "notice " + fmt.Sprint(i),
		})
		lines.Write(line)
		lines.WriteByte('\n')
	}
	file := filepath.Join(dir, prefix+"notices.jsonl")
	if err := os.WriteFile(file, lines.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	testbin.Run(t, bin, env, "ingest", "notices", file)
}

// TestDeliveryCrashRecovery kills `noticesd serve` with SIGKILL while
// deliveries are in flight and pending, restarts it, and checks that every
// eligible notice is delivered and no delivery stays pending.
func TestDeliveryCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := testbin.Build(t)
	dir := t.TempDir()

	rcv := &crashReceiver{seen: map[string]string{}, okFirst: 3, hang: true, release: make(chan struct{})}
	rcv.srv = httptest.NewTLSServer(rcv)
	defer rcv.srv.Close()
	defer func() {
		select {
		case <-rcv.release:
		default:
			close(rcv.release)
		}
	}()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"NOTICES_DATA_DIR=" + filepath.Join(dir, "data"),
		"NOTICES_WEBHOOK_ALLOW_PRIVATE=true",
		"NOTICES_WEBHOOK_CA_FILE=" + caFile,
		"NOTICES_DELIVERY_RETRY_UNIT=1s",
		"NOTICES_DELIVERY_TIMEOUT=30s", // hung requests stay in flight until the kill
		"NOTICES_LOG_LEVEL=debug",
		"NOTICES_SOURCE=none",
		// serve encrypts webhook secrets at rest and refuses to start without a key.
		"NOTICES_SECRET_KEY=" + config.DevelopmentSecretKey,
	}
	acct := createAccount(t, bin, env, "Crash", "enterprise")

	srv := startServe(t, bin, env)
	const companies = 5
	var acns []string
	for i := 0; i < companies; i++ {
		acns = append(acns, fmt.Sprintf("%09d", 100000000+i*7))
	}
	var w struct {
		ID string `json:"id"`
	}
	call(t, "POST", srv.base+"/v1/watches", acct.AccountKey, map[string]any{"identifiers": acns}, http.StatusCreated, &w)
	var reg struct {
		Secret string `json:"secret"`
	}
	call(t, "POST", srv.base+"/v1/watches/"+w.ID+"/webhook", acct.AccountKey, map[string]string{"url": rcv.srv.URL + "/hook"}, http.StatusCreated, &reg)
	rcv.mu.Lock()
	rcv.secret = reg.Secret
	rcv.mu.Unlock()

	// 40 matching notices and 10 of another company, loaded by a separate
	// `noticesd ingest` process while serve runs.
	const matching = 40
	var noticeACNs []string
	for i := 0; i < matching+10; i++ {
		acn := acns[i%companies]
		if i >= matching {
			acn = "999999990"
		}
		noticeACNs = append(noticeACNs, acn)
	}
	ingestNotices(t, bin, env, dir, "7E", "CRASH TEST PTY LTD", noticeACNs)

	// Some are delivered, then four requests hang (in flight), the rest
	// wait behind them; kill the server then.
	testbin.WaitFor(t, 30*time.Second, "deliveries in flight", func() bool {
		u, hung, _ := rcv.state()
		return u >= 3 && hung >= 4
	})
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = srv.cmd.Wait()
	before, _, _ := rcv.state()
	if before >= matching {
		t.Fatalf("all %d delivered before the kill; the test did not catch deliveries in flight", before)
	}
	rcv.mu.Lock()
	rcv.hang = false
	rcv.mu.Unlock()
	close(rcv.release)

	srv = startServe(t, bin, env)
	t.Logf("killed with %d of %d delivered and %d requests hanging", before, matching, rcv.hung)
	// Leases outlast several 30 s timeouts: only recovery at start, not
	// lease expiry, can deliver the interrupted ones within 45 s.
	testbin.WaitFor(t, 45*time.Second, "every eligible notice delivered after restart", func() bool {
		u, _, _ := rcv.state()
		return u >= matching
	})
	unique, _, bad := rcv.state()
	if unique != matching || bad != 0 {
		t.Fatalf("receiver accepted %d distinct deliveries (bad signatures %d); want %d", unique, bad, matching)
	}
	notices := map[string]bool{}
	rcv.mu.Lock()
	for _, id := range rcv.seen {
		notices[id] = true
	}
	rcv.mu.Unlock()
	if len(notices) != matching {
		t.Fatalf("%d distinct notices delivered, want %d", len(notices), matching)
	}

	// The delivery records agree: every one delivered, none stuck.
	testbin.WaitFor(t, 10*time.Second, "every record delivered", func() bool {
		var list struct {
			Data []struct {
				Status    string `json:"status"`
				NextAt    any    `json:"next_attempt_at"`
				Delivered any    `json:"delivered_at"`
			} `json:"data"`
		}
		call(t, "GET", srv.base+"/v1/watches/"+w.ID+"/deliveries?limit=100", acct.AccountKey, nil, http.StatusOK, &list)
		if len(list.Data) != matching {
			t.Fatalf("%d delivery records, want %d", len(list.Data), matching)
		}
		for _, r := range list.Data {
			if r.Status != "delivered" || r.NextAt != nil || r.Delivered == nil {
				return false
			}
		}
		return true
	})

	// A clean stop.
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM\n%s", err, srv.stderr)
		}
	case <-ctx.Done():
		t.Fatal("serve did not stop within 30 s of SIGTERM")
	}
}
