//go:build deployrun

package deployrun

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestComposeSecured runs compose.yaml with compose.secured.yaml (on the
// host network: compose.hostnet.yaml and compose.secured-hostnet.yaml)
// with what scripts/compose-secrets.sh makes: Elasticsearch with security
// on, HTTPS and the noticesd file-realm user of the least-privilege role,
// Redis on TLS only with the default user off and the noticesd ACL user.
// init loads a small demo, every service turns healthy, the tour's first
// search answers 200 with notices, Elasticsearch refuses a request without
// credentials, and `docker inspect` shows no password.
func TestComposeSecured(t *testing.T) {
	if os.Getenv("DOCKER_HOST") == "" {
		t.Fatal("DOCKER_HOST is not set: run these tests through make test-deploy (scripts/test-deploy.sh), which starts the engine they use")
	}
	client := []string{"docker-compose"}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		client = []string{"docker", "compose"}
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	secrets := filepath.Join(dir, "secrets")
	start := time.Now()
	cmd := exec.Command(filepath.Join(root(), "scripts", "compose-secrets.sh"), secrets)
	cmd.Env = append(os.Environ(), "ES_IMAGE=docker.elastic.co/elasticsearch/elasticsearch:8.19.21")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/compose-secrets.sh: %v\n%s", err, out)
	}
	t.Logf("scripts/compose-secrets.sh made the CA, certificates, passwords, ACL and user files in %s", time.Since(start).Round(time.Second))
	keyFile := filepath.Join(dir, "notices_secret_key")
	if err := os.WriteFile(keyFile, []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	esPort, apiPort := freePort(t), freePort(t)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "NOTICES_") || strings.HasPrefix(kv, "DEMO=") || strings.HasPrefix(kv, "COMPOSE_")
	})
	env = append(env,
		"NOTICES_SECRET_KEY_PATH="+keyFile, "NOTICES_SECRETS_DIR="+secrets,
		"DEMO=on", "SAMPLE_NOTICES=500", "SAMPLE_COMPANIES=2000",
		"TEST_ES_PORT="+strconv.Itoa(esPort), "TEST_ES_TRANSPORT_PORT="+strconv.Itoa(freePort(t)),
		"TEST_REDIS_PORT="+strconv.Itoa(freePort(t)), "TEST_API_PORT="+strconv.Itoa(apiPort),
		"TEST_API_METRICS_PORT="+strconv.Itoa(freePort(t)),
		"TEST_WORKER1_METRICS_PORT="+strconv.Itoa(freePort(t)), "TEST_WORKER2_METRICS_PORT="+strconv.Itoa(freePort(t)),
		"TEST_CA_FILE="+filepath.Join(secrets, "tls", "ca.pem"), "TEST_NOFILE="+nofile(t),
	)
	s := &stack{t: t, client: client, env: env, base: fmt.Sprintf("http://127.0.0.1:%d", apiPort), file: hostComposeFile(t),
		project: project + "secured", overrides: []string{"compose.secured.yaml", "test/deployrun/compose.hostnet.yaml", "test/deployrun/compose.secured-hostnet.yaml"}}
	_, _ = s.composeErr("down", "-v", "--remove-orphans")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service logs at the failure:\n%s", s.logs())
		}
		if out, err := s.composeErr("down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("compose down -v: %v\n%s", err, out)
		}
	})

	start = time.Now()
	s.compose("up", "-d", "--no-build")
	s.waitHealthy("secured up")
	t.Logf("secured: %s from `up` to all healthy (HTTPS Elasticsearch with the noticesd user, TLS-only Redis with the ACL user)", time.Since(start).Round(time.Second))
	keys := map[string]string{}
	for _, m := range keyField.FindAllStringSubmatch(docker(t, "logs", s.container("init")), -1) {
		keys[m[1]] = m[2]
	}
	if keys["read_key"] == "" {
		t.Fatal("init's log has no demo read key")
	}
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	s.api(keys["read_key"], "GET", "/v1/notices?q=liquidator&limit=3", nil, http.StatusOK, &page)
	if len(page.Data) == 0 {
		t.Fatal("GET /v1/notices?q=liquidator: no notices on the secured stack")
	}
	t.Logf("secured: the tour's search GET /v1/notices?q=liquidator&limit=3 answered 200 with %d notices", len(page.Data))

	// Security really on: Elasticsearch asks for credentials.
	pem, err := os.ReadFile(filepath.Join(secrets, "tls", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	res, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/_cluster/health", esPort))
	if err != nil {
		t.Fatalf("HTTPS to Elasticsearch with the compose CA: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Elasticsearch without credentials: HTTP %d, want 401", res.StatusCode)
	}
	t.Logf("secured: Elasticsearch answers HTTPS (certificate of the compose CA) and 401 without credentials")

	for _, f := range []string{"es_password", "redis_password"} {
		pw, err := os.ReadFile(filepath.Join(secrets, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, svc := range []string{"api", "worker", "elasticsearch", "redis"} {
			if out := docker(t, "inspect", s.container(svc)); strings.Contains(out, strings.TrimSpace(string(pw))) {
				t.Fatalf("docker inspect %s shows the content of %s", svc, f)
			}
		}
	}
	t.Logf("secured: docker inspect of api, worker, elasticsearch and redis shows neither password")
}
