//go:build deployrun

package deployrun

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/test/testbin"
)

// quickstartProject is the compose project of TestQuickstartOperator.
const quickstartProject = project + "quick"

// composeShim is put before each block of docs/quickstart-operator.md. It
// runs the block as written but for what this engine needs: `docker
// compose` goes to docker-compose (v1, when installed) with the project
// name, the files of COMPOSE_FILE (from the environment or .env, as compose
// reads it) and the host-network overrides after them (the engine has no
// bridge network); `--build` becomes `--no-build` (make test-deploy built
// noticesd:local from the Dockerfile just before). Every other docker
// command runs as it is.
const composeShim = `set -euo pipefail
docker() {
  if [ "${1:-}" != compose ]; then command docker "$@"; return; fi
  shift
  local client=(docker-compose) files=() args=() a f
  command -v docker-compose >/dev/null || client=(command docker compose)
  if [ "${1:-}" = version ]; then "${client[@]}" version; return; fi
  IFS=: read -ra f <<<"${COMPOSE_FILE:-$(sed -n 's/^COMPOSE_FILE=//p' .env 2>/dev/null | tail -n 1)}"
  [ ${#f[@]} -gt 0 ] || f=(compose.yaml)
  for a in "${f[@]}"; do files+=(-f "$a"); done
  for a in "$@"; do [ "$a" = --build ] && a=--no-build; args+=("$a"); done
  "${client[@]}" -p "$QUICKSTART_PROJECT" "${files[@]}" \
    -f test/deployrun/compose.hostnet.yaml -f test/deployrun/compose.secured-hostnet.yaml \
    -f test/deployrun/compose.replicated-hostnet.yaml "${args[@]}"
}
`

// checkout copies the repository's tracked files, as they are in the work
// tree, into dir: the checkout the quickstart starts from.
func checkout(t *testing.T, dir string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root(), "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root(), name)
		st, err := os.Stat(src)
		if err != nil {
			continue // deleted in the work tree
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestQuickstartOperator runs every command of docs/quickstart-operator.md,
// block by block, in a copy of the checkout (composeShim says what changes
// for this engine): the secrets made by scripts/compose-secrets.sh,
// compose.yaml with compose.secured.yaml and compose.replicated.yaml (two
// Elasticsearch nodes with security on, HTTPS, TLS between them and the
// file-realm user of the least-privilege role; Redis on TLS only with the
// default user off and the ACL user, a replica and three Sentinels), the
// demo's first search and screen, the inspect, the CLI's check and the
// replication checks, a node stopped, then production: fresh volumes, an
// account, the register and notices loaded from files, and down. Between
// the blocks it checks what the page promises: every service healthy, the
// search and the screen answering, the cluster green on 2 nodes, the
// replica online, the Sentinels naming the primary, searches answering with
// elasticsearch2 stopped (yellow), every production index with one replica,
// Elasticsearch refusing a request without credentials over HTTPS verified
// against the compose CA, and no password in `docker inspect`.
func TestQuickstartOperator(t *testing.T) {
	client := composeClient(t)
	blocks := testbin.ShellBlocks(t, "docs/quickstart-operator.md", "")
	if len(blocks) == 0 {
		t.Fatal("docs/quickstart-operator.md has no sh block")
	}
	dir := filepath.Join(t.TempDir(), "noticesd")
	checkout(t, dir)
	// The containers' users read the bind-mounted files below it.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// compose.yaml without api's published port (hostComposeFile says why).
	file := hostComposeFile(t)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The files the page's step 6 loads, made by the image's own `noticesd sample`
	// (into a directory its user can write) and moved beside the checkout's files.
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(in, 0o777); err != nil {
		t.Fatal(err)
	}
	docker(t, "run", "--rm", "--network", "none", "-v", in+":/out", "noticesd:local",
		"sample", "--notices", "300", "--companies", "1500", "--out", "/out")
	for from, to := range map[string]string{"company_register.tsv": "COMPANY_202611.tsv", "notices.jsonl.gz": "notices-2026-11.jsonl.gz"} {
		if err := os.Rename(filepath.Join(in, from), filepath.Join(dir, to)); err != nil {
			t.Fatal(err)
		}
	}

	secrets := filepath.Join(dir, "secrets")
	esPort, apiPort, redisPort := freePort(t), freePort(t), freePort(t)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "NOTICES_") || strings.HasPrefix(kv, "DEMO=") ||
			strings.HasPrefix(kv, "COMPOSE_") || strings.HasPrefix(kv, "SAMPLE_")
	})
	env = append(env,
		"QUICKSTART_PROJECT="+quickstartProject, "NOTICES_SECRETS_DIR="+secrets,
		"NOTICES_PORT="+strconv.Itoa(apiPort),
		"TEST_ES_PORT="+strconv.Itoa(esPort), "TEST_ES_TRANSPORT_PORT="+strconv.Itoa(freePort(t)),
		"TEST_REDIS_PORT="+strconv.Itoa(redisPort), "TEST_API_PORT="+strconv.Itoa(apiPort),
		"TEST_API_METRICS_PORT="+strconv.Itoa(freePort(t)),
		"TEST_WORKER1_METRICS_PORT="+strconv.Itoa(freePort(t)), "TEST_WORKER2_METRICS_PORT="+strconv.Itoa(freePort(t)),
		"TEST_CA_FILE="+filepath.Join(secrets, "tls", "ca.pem"), "TEST_NOFILE="+nofile(t),
		"TEST_ES2_PORT="+strconv.Itoa(freePort(t)), "TEST_ES2_TRANSPORT_PORT="+strconv.Itoa(freePort(t)),
		"TEST_REDIS2_PORT="+strconv.Itoa(freePort(t)), "TEST_SENTINEL1_PORT="+strconv.Itoa(freePort(t)),
		"TEST_SENTINEL2_PORT="+strconv.Itoa(freePort(t)), "TEST_SENTINEL3_PORT="+strconv.Itoa(freePort(t)),
	)
	s := &stack{t: t, client: client, env: env, base: fmt.Sprintf("http://127.0.0.1:%d", apiPort),
		file: filepath.Join(dir, "compose.yaml"), project: quickstartProject, dir: dir,
		overrides: []string{"compose.secured.yaml", "compose.replicated.yaml", "test/deployrun/compose.hostnet.yaml",
			"test/deployrun/compose.secured-hostnet.yaml", "test/deployrun/compose.replicated-hostnet.yaml"},
		services: []string{"elasticsearch", "elasticsearch2", "redis", "redis-replica", "redis-sentinel1", "redis-sentinel2",
			"redis-sentinel3", "api", "worker", "worker2"}}
	_, _ = s.composeErr("down", "-v", "--remove-orphans")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service logs at the failure:\n%s", s.logs())
		}
		if out, err := s.composeErr("down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("compose down -v: %v\n%s", err, out)
		}
	})

	// runAt runs block i, after every block before it, and returns its output.
	ran := make([]bool, len(blocks))
	runAt := func(i int, what string) string {
		t.Helper()
		for j := range i {
			if !ran[j] {
				t.Fatalf("block %d of docs/quickstart-operator.md has not run before block %d (%s): the test runs them in order", j+1, i+1, what)
			}
		}
		start := time.Now()
		cmd := exec.Command("bash", "-c", composeShim+blocks[i]+"\n")
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("docs/quickstart-operator.md, block %d, failed: %v\n--- the block:\n%s\n--- its output:\n%s", i+1, err, blocks[i], out)
		}
		ran[i] = true
		t.Logf("block %d (%s) ran in %s:\n%s", i+1, what, time.Since(start).Round(time.Second), out)
		return string(out)
	}
	// run runs the one block that contains marker.
	run := func(marker string) string {
		t.Helper()
		i := -1
		for j, b := range blocks {
			if strings.Contains(b, marker) {
				if i >= 0 {
					t.Fatalf("two blocks of docs/quickstart-operator.md contain %q", marker)
				}
				i = j
			}
		}
		if i < 0 {
			t.Fatalf("no block of docs/quickstart-operator.md contains %q", marker)
		}
		return runAt(i, marker)
	}

	run("docker compose version")
	run("compose-secrets.sh")
	start := time.Now()
	run("DEMO=on")
	s.waitHealthy("quickstart demo")
	t.Logf("quickstart: %s from the demo's `up` to every service healthy", time.Since(start).Round(time.Second))
	if out := run("/v1/match"); !strings.Contains(out, `"id":"ntc_`) || !strings.Contains(out, `"matched":[{`) ||
		!strings.Contains(out, `"unresolved":["123456780"]`) {
		t.Fatalf("the quickstart's first search printed no notice, or its screen did not match the notice's company and find 123456780 unresolved (not an ACN):\n%s", out)
	}
	out := run("accounts list")
	for _, want := range []string{"https://noticesd@", "rediss://noticesd@", "/run/secrets/es_password", "/run/secrets/redis_password",
		"NOTICES_REDIS_SENTINELS=", "/run/secrets/redis_sentinel_password"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the quickstart's inspect does not show %q (the URLs with the user, the Sentinels and the password files):\n%s", want, out)
		}
	}
	// Replicated: two nodes and every copy assigned, the primary with its
	// replica online, the Sentinels naming the primary (127.0.0.1 and its port here).
	for _, want := range []string{`"number_of_nodes" : 2`, `"status" : "green"`, "connected_slaves:1", "state=online",
		fmt.Sprintf("127.0.0.1\n%d\n", redisPort)} {
		if !strings.Contains(out, want) {
			t.Fatalf("the quickstart's replication checks do not show %q:\n%s", want, out)
		}
	}
	// One node lost: searches answer, the cluster is yellow on the node left.
	if out := run("stop elasticsearch2"); !strings.Contains(out, "search: HTTP 200") ||
		!strings.Contains(out, `"status":"yellow"`) || !strings.Contains(out, `"number_of_nodes":1`) {
		t.Fatalf("with elasticsearch2 stopped, the quickstart's search did not answer 200 or the cluster was not yellow on one node:\n%s", out)
	}
	if out := run("accounts create"); !strings.Contains(out, `"read_key"`) ||
		!strings.Contains(out, "register: read 1500 inserted 1500 updated 0 rejected 0") ||
		!strings.Contains(out, "notices: read 300 inserted 300 updated 0 rejected 0") {
		t.Fatalf("the quickstart's production block did not create an account and load the 1,500 register rows and 300 notices:\n%s", out)
	}
	s.waitHealthy("quickstart production")

	// Security really on: Elasticsearch asks for credentials over HTTPS.
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
	t.Logf("quickstart: Elasticsearch answers HTTPS (certificate of the compose CA) and 401 without credentials")
	// Production's indices (made by the ingest run in api) have their replica
	// on the other node: both nodes green, every index with one replica.
	esPassword, err := os.ReadFile(filepath.Join(secrets, "es_password"))
	if err != nil {
		t.Fatal(err)
	}
	esGet := func(path string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", esPort, path), nil)
		req.SetBasicAuth("noticesd", strings.TrimSpace(string(esPassword)))
		res, err := (&http.Client{Timeout: 150 * time.Second, Transport: hc.Transport}).Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d: %s", path, res.StatusCode, b)
		}
		return string(b)
	}
	if h := esGet("/_cluster/health?wait_for_status=green&timeout=120s"); !strings.Contains(h, `"number_of_nodes":2`) || !strings.Contains(h, `"status":"green"`) {
		t.Fatalf("after production's up, the cluster is not green on two nodes: %s", h)
	}
	replicas := esGet("/notices-*/_settings/index.number_of_replicas?flat_settings=true")
	if n, ones := strings.Count(replicas, `"index.number_of_replicas"`), strings.Count(replicas, `"index.number_of_replicas":"1"`); n < 2 || n != ones {
		t.Fatalf("production's indices: want each (notices and register at least) with number_of_replicas 1, got %s", replicas)
	}
	t.Logf("quickstart: production's cluster green on 2 nodes, every index with one replica: %s", replicas)
	for _, f := range []string{"es_password", "redis_password", "redis_sentinel_password"} {
		pw, err := os.ReadFile(filepath.Join(secrets, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, svc := range []string{"api", "worker", "elasticsearch", "elasticsearch2", "redis", "redis-replica", "redis-sentinel1"} {
			if out := docker(t, "inspect", s.container(svc)); strings.Contains(out, strings.TrimSpace(string(pw))) {
				t.Fatalf("docker inspect %s shows the content of %s", svc, f)
			}
		}
	}
	t.Logf("quickstart: docker inspect of api, worker, both Elasticsearch nodes, the Redis primary, its replica and a Sentinel shows no password")

	last := blocks[len(blocks)-1]
	if strings.TrimSpace(last) != "docker compose down" {
		t.Fatalf("the quickstart's last block is %q, want the stop (docker compose down) after the checks", last)
	}
	runAt(len(blocks)-1, "the stop")
	if ids := strings.Fields(s.compose("ps", "-q")); len(ids) != 0 {
		t.Fatalf("after the quickstart's docker compose down, containers remain: %v", ids)
	}
	for i, ok := range ran {
		if !ok {
			t.Errorf("block %d of docs/quickstart-operator.md was not run:\n%s", i+1, blocks[i])
		}
	}
}
