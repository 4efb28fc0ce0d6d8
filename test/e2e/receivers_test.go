package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/webhook"
	"github.com/noticesd/noticesd/test/testbin"
)

// receiverExamples are the receivers of examples/receivers, each with the
// interpreter that runs it.
var receiverExamples = []struct{ lang, interpreter, file string }{
	{"Python", "python3", "receiver.py"},
	{"Node.js", "node", "receiver.js"},
}

// TestReceiverExamples runs each example receiver of examples/receivers
// as its own process, serving https with a certificate of the test's,
// against a running `noticesd serve`: the server's test delivery (POST
// /v1/watches/{id}/webhook/test) and a real notice delivery are accepted
// (2xx, and the receiver logs each with its delivery id), and a request
// whose body was changed after signing is refused with 401.
func TestReceiverExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := testbin.Build(t)
	dir := t.TempDir()
	cert, key, pool := selfSignedLoopback(t, dir)
	env := []string{
		"NOTICES_DATA_DIR=" + filepath.Join(dir, "data"),
		"NOTICES_WEBHOOK_ALLOW_PRIVATE=true", // the receivers listen on loopback
		"NOTICES_WEBHOOK_CA_FILE=" + cert,
		"NOTICES_SOURCE=none",
		"NOTICES_SECRET_KEY=" + config.DevelopmentSecretKey,
	}
	acct := createAccount(t, bin, env, "Receivers", "enterprise")
	srv := startServe(t, bin, env)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	_, self, _, _ := runtime.Caller(0)
	examples := filepath.Join(filepath.Dir(self), "..", "..", "examples", "receivers")

	for i, ex := range receiverExamples {
		t.Run(ex.lang, func(t *testing.T) {
			if _, err := exec.LookPath(ex.interpreter); err != nil {
				t.Fatalf("%s is not installed, so the %s receiver example cannot run: %v", ex.interpreter, ex.lang, err)
			}
			acn := []string{"004085616", "000000019"}[i]
			var w struct {
				ID string `json:"id"`
			}
			call(t, "POST", srv.base+"/v1/watches", acct.AccountKey, map[string]any{"identifiers": []string{acn}}, http.StatusCreated, &w)
			addr := testbin.FreeAddr(t)
			_, port, _ := net.SplitHostPort(addr)
			url := "https://" + addr + "/notices"
			var reg struct {
				Secret string `json:"secret"`
			}
			call(t, "POST", srv.base+"/v1/watches/"+w.ID+"/webhook", acct.AccountKey, map[string]string{"url": url}, http.StatusCreated, &reg)

			out := &testbin.LockedBuffer{}
			cmd := exec.Command(ex.interpreter, filepath.Join(examples, ex.file))
			cmd.Env = append(os.Environ(), "NOTICES_WEBHOOK_SECRET="+reg.Secret, "PORT="+port, "TLS_CERT="+cert, "TLS_KEY="+key)
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			})
			testbin.WaitFor(t, 15*time.Second, ex.file+" listening", func() bool { return strings.Contains(out.String(), "listening on "+port) })

			// The server's test delivery.
			var res struct {
				OK         bool    `json:"ok"`
				StatusCode *int    `json:"status_code"`
				Error      *string `json:"error"`
				DeliveryID string  `json:"delivery_id"`
			}
			call(t, "POST", srv.base+"/v1/watches/"+w.ID+"/webhook/test", acct.AccountKey, nil, http.StatusOK, &res)
			if !res.OK || res.StatusCode == nil || *res.StatusCode != http.StatusNoContent {
				t.Fatalf("test delivery outcome %+v (error %v), want ok with 204; receiver output:\n%s", res, res.Error, out)
			}
			logged(t, out, "test "+res.DeliveryID+" "+w.ID)

			// A real notice delivery.
			ingestNotices(t, bin, env, dir, fmt.Sprintf("RCV%d", i), "RECEIVER EXAMPLE PTY LTD", []string{acn})
			var rec struct {
				ID       string `json:"id"`
				NoticeID string `json:"notice_id"`
				Status   string `json:"status"`
			}
			testbin.WaitFor(t, 30*time.Second, "the notice delivered", func() bool {
				var list struct {
					Data []struct {
						ID       string `json:"id"`
						NoticeID string `json:"notice_id"`
						Status   string `json:"status"`
					} `json:"data"`
				}
				call(t, "GET", srv.base+"/v1/watches/"+w.ID+"/deliveries", acct.AccountKey, nil, http.StatusOK, &list)
				if len(list.Data) == 1 {
					rec = list.Data[0]
				}
				return rec.Status == "delivered"
			})
			logged(t, out, "notice "+rec.ID+" "+rec.NoticeID)

			// A body changed after it was signed is refused; the same
			// request unchanged is accepted.
			body, err := webhook.TestEventPayload(w.ID, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			sig := webhook.Sign(reg.Secret, body)
			tampered := bytes.Replace(body, []byte(w.ID), []byte("wch_someoneelseswatchxxxxxxx"), 1)
			for _, c := range []struct {
				name string
				body []byte
				want int
			}{{"tampered", tampered, http.StatusUnauthorized}, {"genuine", body, http.StatusNoContent}} {
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(c.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Notices-Signature", sig)
				req.Header.Set("X-Notices-Delivery", "dlv_test_"+c.name)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != c.want {
					t.Errorf("%s request: HTTP %d, want %d; receiver output:\n%s", c.name, resp.StatusCode, c.want, out)
				}
			}
			logged(t, out, "rejected dlv_test_tampered bad signature")
		})
	}
}

// selfSignedLoopback writes a self-signed certificate for 127.0.0.1 and
// its key as PEM files in dir and returns their paths and a pool holding
// the certificate.
func selfSignedLoopback(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "receiver example"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "receiver-cert.pem"), filepath.Join(dir, "receiver-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(c)
	return certFile, keyFile, pool
}

// logged waits for the receiver's output to hold want: the receiver prints
// (and flushes) before it answers, but its output reaches out through a
// pipe that the test reads on its own goroutine, which may lag the answer.
func logged(t *testing.T, out *testbin.LockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Errorf("receiver output lacks %q:\n%s", want, out)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
