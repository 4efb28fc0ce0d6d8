package securees

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

// TestSecuredStack: given only the settings of docs/operating.md's
// "Production" section, noticesd works against a TLS Elasticsearch with
// authentication (user:password in the URL, NOTICES_ELASTICSEARCH_CA_FILE)
// and a Redis over TLS with an ACL user (rediss://, NOTICES_REDIS_CA_FILE)
// as against unsecured ones: `noticesd demo` serves, the README's tour and
// every example of the API reference answer 2xx with the answers the README
// gives (the same test as TestScaleReadmeTour, every route), and a webhook
// is delivered, signed, by a `noticesd worker` on those backends.
func TestSecuredStack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a secured Elasticsearch node and a TLS Redis and builds the binary")
	}
	testservers.StartSecuredElasticsearch() // while the binary builds
	bin := testbin.Build(t)
	node := testservers.SecuredElasticsearch(t)
	rds := testservers.StartSecured(t)
	host := strings.TrimPrefix(node.URL, "https://")
	secured := func(t *testing.T) []string {
		return []string{
			"NOTICES_BACKEND=scale",
			"NOTICES_ELASTICSEARCH_URL=https://" + node.User + ":" + node.Password + "@" + host,
			"NOTICES_ELASTICSEARCH_CA_FILE=" + node.CAFile,
			"NOTICES_REDIS_URL=" + rds.URL,
			"NOTICES_REDIS_CA_FILE=" + rds.CAFile,
			"NOTICES_NAMESPACE=" + testservers.Namespace(t),
			"NOTICES_DATA_DIR=" + filepath.Join(t.TempDir(), "data"),
		}
	}

	t.Run("README tour and API reference", func(t *testing.T) {
		testbin.Tour(t, bin, secured(t))
	})

	t.Run("webhook delivered by a worker", func(t *testing.T) {
		rcv := testbin.NewReceiver(t)
		caFile := filepath.Join(t.TempDir(), "receiver-ca.pem")
		rcv.WriteCA(t, caFile, 0o600)
		env := append(secured(t), "NOTICES_SECRET_KEY="+config.DevelopmentSecretKey, "NOTICES_WEBHOOK_ALLOW_PRIVATE=true",
			"NOTICES_WEBHOOK_CA_FILE="+caFile, "NOTICES_DELIVERY_RETRY_UNIT=1s", "NOTICES_LOG_LEVEL=warn")
		var acct struct {
			AccountKey string `json:"account_key"`
		}
		if err := json.Unmarshal(testbin.Run(t, bin, env, "accounts", "create", "--name", "secured", "--plan", "standard"), &acct); err != nil || acct.AccountKey == "" {
			t.Fatalf("accounts create: %v", err)
		}
		addr := testbin.FreeAddr(t)
		base := "http://" + addr
		background(t, bin, append(env, "NOTICES_ADDR="+addr), "serve")
		background(t, bin, env, "worker")
		testbin.WaitFor(t, 90*time.Second, "serve on the secured backends to answer /ready 200", func() bool {
			res, err := http.Get(base + "/ready")
			if err != nil {
				return false
			}
			res.Body.Close()
			return res.StatusCode == http.StatusOK
		})
		call := func(method, path, body string, out any) {
			t.Helper()
			req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
			req.Header.Set("X-API-Key", acct.AccountKey)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode/100 != 2 {
				t.Fatalf("%s %s: HTTP %d %s", method, path, res.StatusCode, b)
			}
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s %s: %v in %s", method, path, err, b)
			}
		}
		const acn = "000000019"
		var w struct {
			ID string `json:"id"`
		}
		call("POST", "/v1/watches", `{"identifiers":["`+acn+`"],"name":"secured"}`, &w)
		var hook struct {
			Secret string `json:"secret"`
		}
		call("POST", "/v1/watches/"+w.ID+"/webhook", `{"url":"`+rcv.Server.URL+`/hook"}`, &hook)
		rcv.SetSecret(hook.Secret)

		line := fmt.Sprintf(`{"source_id":"SECURED-1","published_at":%q,"acn":%q,"company_name":"SECURED STACK PTY LTD","notice_type":"Appointment of Liquidator","notice_code":"APLQ","notice_purpose":"Appointment","state":"NSW","status":"In Liquidation","text":"secured stack"}`+"\n",
			time.Now().UTC().Format(time.RFC3339), acn)
		file := filepath.Join(t.TempDir(), "notice.jsonl")
		if err := os.WriteFile(file, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		testbin.Run(t, bin, env, "ingest", "notices", file)
		testbin.WaitFor(t, 90*time.Second, "the worker to deliver the new notice, signed",
			func() bool { return len(rcv.Notices()) > 0 })
		if _, bad := rcv.Counts(); bad > 0 {
			t.Errorf("%d deliveries had a signature that did not verify", bad)
		}
		if got := rcv.Notices()[0]; !strings.HasPrefix(got, "ntc_") {
			t.Errorf("delivered notice id %q, want an ntc_ id", got)
		}
	})
}

// background runs `noticesd args...` with env until the test ends; its
// stderr is shown when the test fails.
func background(t *testing.T, bin string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr := &testbin.LockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("noticesd %s stderr:\n%s", args[0], stderr.String())
		}
	})
}
