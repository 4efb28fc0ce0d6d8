//go:build deployrun

package deployrun

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/test/testbin"
)

const project = "noticesdtest"

// root is the repository's top directory.
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// stack is one compose project under test.
type stack struct {
	t      *testing.T
	client []string // docker-compose, or docker compose
	env    []string
	base   string // the API's URL
	file   string // compose.yaml without api's ports (hostComposeFile)
	// project is the compose project name; overrides are the files after
	// compose.yaml (repository paths), compose.hostnet.yaml among them.
	project   string
	overrides []string
	// dir is the project's directory, where the overrides are; the
	// repository's top directory when empty.
	dir string
	// services are the long-running services waitHealthy waits for
	// (besides init); compose.yaml's with the hostnet worker2 when nil.
	services []string
}

// publishedPort is api's `ports` entry in compose.yaml.
const publishedPort = "    ports:\n      - \"${NOTICES_PUBLISH_IP:-127.0.0.1}:${NOTICES_PORT:-8080}:8080\"\n"

// hostComposeFile writes compose.yaml without api's published port: the
// Python docker-compose refuses a published port on the host network
// ("host" network_mode is incompatible with port_bindings), and an override
// file can only add to a list. Everything else is the file as it is.
func hostComposeFile(t *testing.T) string {
	raw, err := os.ReadFile(filepath.Join(root(), "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), publishedPort); n != 1 {
		t.Fatalf("compose.yaml has %d copies of api's ports entry %q, want 1: update publishedPort", n, publishedPort)
	}
	file := filepath.Join(t.TempDir(), "compose.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(string(raw), publishedPort, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// compose runs the compose client on compose.yaml and the host-network
// override and returns its combined output; a failure fails the test.
func (s *stack) compose(args ...string) string {
	s.t.Helper()
	out, err := s.composeErr(args...)
	if err != nil {
		s.t.Fatalf("%s %s: %v\n%s", strings.Join(s.client, " "), strings.Join(args, " "), err, out)
	}
	return out
}

func (s *stack) composeErr(args ...string) (string, error) {
	dir := s.dir
	if dir == "" {
		dir = root()
	}
	full := append(slices.Clone(s.client[1:]), "-p", s.project, "--project-directory", dir, "-f", s.file)
	for _, o := range s.overrides {
		full = append(full, "-f", o)
	}
	cmd := exec.Command(s.client[0], append(full, args...)...)
	cmd.Dir = dir
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// container is the id of service's one container.
func (s *stack) container(service string) string {
	s.t.Helper()
	ids := strings.Fields(s.compose("ps", "-q", service))
	if len(ids) != 1 {
		s.t.Fatalf("service %s has %d containers (%v), want 1", service, len(ids), ids)
	}
	return ids[0]
}

// state is "status health exitcode" of a container, e.g. "running healthy 0".
func state(t *testing.T, id string) string {
	return docker(t, "inspect", "-f", "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}-{{end}} {{.State.ExitCode}}", id)
}

// waitHealthy waits until init has exited 0 and every long-running
// service's health check passes, and logs how long that took.
func (s *stack) waitHealthy(what string) {
	s.t.Helper()
	start := time.Now()
	services := s.services
	if services == nil {
		services = []string{"elasticsearch", "redis", "api", "worker", "worker2"}
	}
	deadline := start.Add(10 * time.Minute)
	for {
		var states []string
		ok := true
		if ids := strings.Fields(s.compose("ps", "-q", "init")); len(ids) == 1 {
			st := state(s.t, ids[0])
			states = append(states, "init "+st)
			if strings.HasPrefix(st, "exited") && !strings.HasSuffix(st, " 0") {
				s.t.Fatalf("%s: init failed (%s); its log:\n%s", what, st, docker(s.t, "logs", ids[0]))
			}
			ok = ok && strings.HasPrefix(st, "exited")
		} else {
			ok = false
			states = append(states, "init not created")
		}
		for _, svc := range services {
			ids := strings.Fields(s.compose("ps", "-q", svc))
			if len(ids) != 1 {
				ok = false
				states = append(states, svc+" not created")
				continue
			}
			st := state(s.t, ids[0])
			states = append(states, svc+" "+st)
			ok = ok && strings.HasPrefix(st, "running healthy")
		}
		if ok {
			s.t.Logf("%s: compose services healthy after %s: %s", what, time.Since(start).Round(time.Second), strings.Join(states, ", "))
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: not healthy within 10 minutes: %s\n%s", what, strings.Join(states, ", "), s.logs())
		}
		time.Sleep(2 * time.Second)
	}
}

// logs is the tail of every service's log, for a failure message.
func (s *stack) logs() string {
	out, _ := s.composeErr("logs", "--no-color", "--tail", "40")
	return out
}

// api calls the API with key and decodes a JSON answer into out; a status
// other than want fails the test.
func (s *stack) api(key, method, path string, body any, want int, out any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	req.Header.Set("X-API-Key", key)
	res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		s.t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, res.StatusCode, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// acn returns a valid ACN made from n (8 digits and the check digit).
func acn(n int) string {
	first8 := fmt.Sprintf("%08d", n)
	return fmt.Sprintf("%s%d", first8, ident.ACNCheckDigit(first8))
}

// ingest writes notices for acns (text has word) and loads them with
// `noticesd ingest notices` in the api container (docker compose exec).
func (s *stack) ingest(word string, acns []string) {
	s.t.Helper()
	var b bytes.Buffer
	now := time.Now().UTC()
	for i, a := range acns {
		line, _ := json.Marshal(map[string]any{
			"source_id": fmt.Sprintf("%s%05d", word, i), "published_at": now.Add(-time.Duration(i) * time.Second).Format(time.RFC3339),
			"acn": a, "company_name": "DEPLOY RUN TEST PTY LTD", "notice_type": "Appointment of liquidator",
			"notice_code": "APP", "notice_purpose": "Appointment", "state": "VIC", "status": "In Liquidation",
			"text": "compose deployment test " + word,
		})
		b.Write(line)
		b.WriteByte('\n')
	}
	file := filepath.Join(s.t.TempDir(), "arrivals.jsonl")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(file), 0o755); err != nil {
		s.t.Fatal(err)
	}
	// (compose run of api is refused on the host network: v1 links a one-off
	// container to its dependencies; exec in the running api is the same binary
	// with the same settings.)
	api := s.container("api")
	docker(s.t, "cp", file, api+":/tmp/"+word+".jsonl")
	s.compose("exec", "-T", "api", "noticesd", "ingest", "notices", "/tmp/"+word+".jsonl")
}

// searchIDs returns the ids of the notices whose text has word.
func (s *stack) searchIDs(key, word string, want int) []string {
	s.t.Helper()
	var res struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	s.api(key, "GET", "/v1/notices?q="+word+"&limit=100", nil, http.StatusOK, &res)
	var ids []string
	for _, n := range res.Data {
		ids = append(ids, n.ID)
	}
	if len(ids) != want {
		s.t.Fatalf("search q=%s: %d notices, want %d", word, len(ids), want)
	}
	return ids
}

// tourExports finds, through the API, what `noticesd demo` prints for the
// README's tour: a VIC/NSW company with several notices and one of its
// notices, another company's spaced ABN, and a registered company without
// notices (the screen's "unmatched").
func (s *stack) tourExports(readKey, accountKey string) []string {
	s.t.Helper()
	var page struct {
		Data []struct {
			ID  string  `json:"id"`
			ACN *string `json:"acn"`
		} `json:"data"`
	}
	s.api(readKey, "GET", "/v1/notices?state=VIC,NSW&sort=published_desc&limit=100", nil, http.StatusOK, &page)
	var acnFound, abnFound, noticeFound string
	for _, n := range page.Data {
		if n.ACN == nil || *n.ACN == acnFound || !ident.ValidACN(*n.ACN) {
			continue
		}
		var c struct {
			ABN         *string `json:"abn"`
			NoticeCount int     `json:"notice_count"`
		}
		s.api(readKey, "GET", "/v1/companies/"+*n.ACN, nil, http.StatusOK, &c)
		if c.NoticeCount < 2 || c.ABN == nil || len(*c.ABN) != 11 {
			continue
		}
		if acnFound == "" {
			acnFound, noticeFound = *n.ACN, n.ID
			continue
		}
		a := *c.ABN
		abnFound = a[:2] + " " + a[2:5] + " " + a[5:8] + " " + a[8:]
		break
	}
	// The sample numbers its companies from 00100000 up, one in each stride
	// of ACNs: the screen of a run of candidates says which are registered
	// without notices ("unmatched").
	var candidates []string
	for n := 100_000; n < 140_000; n++ {
		candidates = append(candidates, acn(n))
	}
	var screen struct {
		Unmatched []string `json:"unmatched"`
	}
	s.api(readKey, "POST", "/v1/match", map[string]any{"identifiers": candidates}, http.StatusOK, &screen)
	if acnFound == "" || abnFound == "" || noticeFound == "" || len(screen.Unmatched) == 0 {
		s.t.Fatalf("the sample lacks the tour's identifiers: ACN %q, ABN %q, NOTICE %q, %d registered companies without notices", acnFound, abnFound, noticeFound, len(screen.Unmatched))
	}
	return []string{
		fmt.Sprintf("export KEY=%s ACCT=%s BASE=%s", readKey, accountKey, s.base),
		fmt.Sprintf("export ACN='%s' ABN='%s' QUIET='%s' NOTICE='%s'", acnFound, abnFound, screen.Unmatched[0], noticeFound),
	}
}

// nofile is this process's hard limit of open files, which a container
// cannot exceed.
func nofile(t *testing.T) string {
	out, err := exec.Command("sh", "-c", "ulimit -Hn").Output()
	if err != nil {
		t.Fatal(err)
	}
	n := strings.TrimSpace(string(out))
	if n == "unlimited" || n == "" {
		return "65536"
	}
	return n
}

// composeClient is the compose client to run (docker-compose when
// installed, else docker compose); it fails the test without the engine
// make test-deploy starts.
func composeClient(t *testing.T) []string {
	t.Helper()
	if os.Getenv("DOCKER_HOST") == "" {
		t.Fatal("DOCKER_HOST is not set: run these tests through make test-deploy (scripts/test-deploy.sh), which starts the engine they use")
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		return []string{"docker", "compose"}
	}
	return []string{"docker-compose"}
}

var keyField = regexp.MustCompile(`"(account_key|read_key)":\s*"([^"]+)"`)

func TestComposeStack(t *testing.T) {
	client := composeClient(t)
	if out, err := exec.Command("docker", "image", "inspect", "noticesd:local").CombinedOutput(); err != nil {
		t.Fatalf("no noticesd:local image on the engine at %s (make test-deploy builds it): %v\n%s", os.Getenv("DOCKER_HOST"), err, out)
	}

	// The webhook receiver, TLS on loopback; its CA goes to the workers.
	rcv := testbin.NewReceiver(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	cert := rcv.Server.Certificate()
	rcv.WriteCA(t, caFile, 0o644)
	if _, err := x509.ParseCertificate(cert.Raw); err != nil {
		t.Fatal(err)
	}
	// The secret key as a compose secret: a file the container's user reads.
	keyFile := filepath.Join(dir, "notices_secret_key")
	if err := os.WriteFile(keyFile, []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	apiPort, apiMetricsPort := freePort(t), freePort(t)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "NOTICES_") || strings.HasPrefix(kv, "DEMO=") || strings.HasPrefix(kv, "COMPOSE_")
	})
	env = append(env,
		"NOTICES_SECRET_KEY_PATH="+keyFile,
		"DEMO=on", "SAMPLE_NOTICES=3000", "SAMPLE_COMPANIES=12000",
		"TEST_ES_PORT="+strconv.Itoa(freePort(t)), "TEST_ES_TRANSPORT_PORT="+strconv.Itoa(freePort(t)),
		"TEST_REDIS_PORT="+strconv.Itoa(freePort(t)), "TEST_API_PORT="+strconv.Itoa(apiPort), "TEST_API_METRICS_PORT="+strconv.Itoa(apiMetricsPort),
		"TEST_WORKER1_METRICS_PORT="+strconv.Itoa(freePort(t)), "TEST_WORKER2_METRICS_PORT="+strconv.Itoa(freePort(t)),
		"TEST_CA_FILE="+caFile, "TEST_NOFILE="+nofile(t),
	)
	s := &stack{t: t, client: client, env: env, base: fmt.Sprintf("http://127.0.0.1:%d", apiPort), file: hostComposeFile(t),
		project: project, overrides: []string{"test/deployrun/compose.hostnet.yaml"}}
	_, _ = s.composeErr("down", "-v", "--remove-orphans") // what a killed earlier run left
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service logs at the failure:\n%s", s.logs())
		}
		if out, err := s.composeErr("down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("compose down -v: %v\n%s", err, out)
		}
	})

	// ---- up: init loads the demo, everything turns healthy
	start := time.Now()
	s.compose("up", "-d", "--no-build")
	s.waitHealthy("first up")
	t.Logf("first up: %s from `up` to all healthy (init loaded 3,000 notices and 12,000 companies)", time.Since(start).Round(time.Second))
	initLog := docker(t, "logs", s.container("init"))
	keys := map[string]string{}
	for _, m := range keyField.FindAllStringSubmatch(initLog, -1) {
		keys[m[1]] = m[2]
	}
	if keys["account_key"] == "" || keys["read_key"] == "" {
		t.Fatalf("init's log has no demo account keys:\n%s", initLog)
	}
	t.Logf("init: demo account created, keys read from `docker logs` of init")
	if out := docker(t, "inspect", "-f", "{{json .Config.Env}}", s.container("api")); strings.Contains(out, "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY") || !strings.Contains(out, "NOTICES_SECRET_KEY_FILE=/run/secrets/notices_secret_key") {
		t.Fatalf("docker inspect api shows the secret key, or no NOTICES_SECRET_KEY_FILE: %s", out)
	}
	t.Logf("docker inspect api: NOTICES_SECRET_KEY_FILE set, the key itself not shown")
	checkMetricsPort(t, s.base, fmt.Sprintf("http://127.0.0.1:%d", apiMetricsPort))

	// ---- the README's tour against the stack
	t.Run("tour", func(t *testing.T) {
		// /metrics is on api's metrics port, not the API's (the reference's
		// example reads METRICS_BASE when set).
		exports := append(s.tourExports(keys["read_key"], keys["account_key"]), fmt.Sprintf("export METRICS_BASE=http://127.0.0.1:%d", apiMetricsPort))
		testbin.TourAt(t, exports)
		t.Logf("the README's tour and the reference's examples: every curl answered 2xx against the compose stack")
	})
	if t.Failed() {
		t.FailNow()
	}

	// ---- a webhook from a worker container to the receiver here
	acct := keys["account_key"]
	watched := []string{acn(93000001), acn(93000002)}
	var w struct {
		ID string `json:"id"`
	}
	s.api(acct, "POST", "/v1/watches", map[string]any{"identifiers": watched, "name": "compose test"}, http.StatusCreated, &w)
	var reg struct {
		Secret string `json:"secret"`
	}
	s.api(acct, "POST", "/v1/watches/"+w.ID+"/webhook", map[string]string{"url": rcv.Server.URL + "/hook"}, http.StatusCreated, &reg)
	rcv.SetSecret(reg.Secret)
	s.ingest("DEPLOYFIRST", slices.Repeat(watched, 3))
	first := s.searchIDs(acct, "DEPLOYFIRST", 6)
	testbin.WaitFor(t, 90*time.Second, "the 6 watched notices delivered to the receiver by the worker containers", func() bool {
		n, _ := rcv.Delivered(first)
		return n == len(first)
	})
	t.Logf("webhook: %d notices delivered, signed, from the worker containers to %s", len(first), rcv.Server.URL)

	// ---- down and up: the volumes keep accounts, watches, notices, deliveries
	deliveries := func() int {
		var list struct {
			Data []struct {
				Status string `json:"status"`
			} `json:"data"`
		}
		s.api(acct, "GET", "/v1/watches/"+w.ID+"/deliveries?limit=100", nil, http.StatusOK, &list)
		return len(list.Data)
	}
	testbin.WaitFor(t, 60*time.Second, "6 delivery records", func() bool { return deliveries() == 6 })
	start = time.Now()
	s.compose("down")
	if ids := strings.Fields(s.compose("ps", "-q")); len(ids) != 0 {
		t.Fatalf("after down, %d containers remain", len(ids))
	}
	s.compose("up", "-d", "--no-build")
	s.waitHealthy("up after down")
	t.Logf("down + up: %s", time.Since(start).Round(time.Second))
	if log := docker(t, "logs", s.container("init")); !strings.Contains(log, "the demo account exists already") {
		t.Fatalf("init after down/up did not find the demo account (the data was not kept?):\n%s", log)
	}
	var got struct {
		ID         string `json:"id"`
		WebhookURL string `json:"webhook_url"`
	}
	s.api(acct, "GET", "/v1/watches/"+w.ID, nil, http.StatusOK, &got) // the account key still works: accounts kept
	if got.WebhookURL != rcv.Server.URL+"/hook" {
		t.Fatalf("after down/up the watch's webhook_url is %q, want %q", got.WebhookURL, rcv.Server.URL+"/hook")
	}
	s.searchIDs(keys["read_key"], "DEPLOYFIRST", 6) // notices kept (Elasticsearch volume)
	if n := deliveries(); n != 6 {
		t.Fatalf("after down/up the watch has %d delivery records, want 6", n)
	}
	t.Logf("down/up kept the account (its key works), the watch and its webhook, the 6 notices and the 6 delivery records")

	// ---- a worker container killed mid-delivery loses nothing
	rcv.SetDelay(1500 * time.Millisecond)
	s.ingest("DEPLOYCRASH", slices.Repeat(watched, 12))
	crash := s.searchIDs(acct, "DEPLOYCRASH", 24)
	testbin.WaitFor(t, 90*time.Second, "deliveries of the crash batch under way", func() bool {
		n, _ := rcv.Delivered(crash)
		return n >= 2
	})
	victim := s.container("worker")
	docker(t, "kill", victim)
	before, _ := rcv.Delivered(crash)
	if before == len(crash) {
		t.Fatalf("all %d delivered before the kill: the test caught nothing in flight", before)
	}
	t.Logf("docker kill (SIGKILL) worker container %s with %d of %d deliveries made", victim[:12], before, len(crash))
	rcv.SetDelay(0)
	// The killed worker's attempts in flight come back through asynq's
	// recoverer (once a minute, after the 30 s lease): up to about two minutes.
	testbin.WaitFor(t, 300*time.Second, "every crash-batch notice delivered", func() bool {
		n, _ := rcv.Delivered(crash)
		return n == len(crash)
	})
	if _, dup := rcv.Delivered(append(slices.Clone(first), crash...)); len(dup) > 0 {
		t.Fatalf("notices delivered under more than one delivery id: %v", dup)
	}
	testbin.WaitFor(t, 300*time.Second, "every delivery record delivered", func() bool {
		var list struct {
			Data []struct {
				Status string `json:"status"`
			} `json:"data"`
		}
		s.api(acct, "GET", "/v1/watches/"+w.ID+"/deliveries?limit=100", nil, http.StatusOK, &list)
		if len(list.Data) != 6+len(crash) {
			return false
		}
		for _, d := range list.Data {
			if d.Status != "delivered" {
				return false
			}
		}
		return true
	})
	posts, bad := rcv.Counts()
	if bad != 0 {
		t.Fatalf("%d webhook requests had a bad signature", bad)
	}
	t.Logf("after the kill: all %d notices of the batch delivered (%d posts in all, none under a second delivery id), all %d records delivered", len(crash), posts, 6+len(crash))
}

// checkMetricsPort: the api container answers GET /metrics on its metrics
// port (NOTICES_METRICS_ADDR, which compose.yaml does not publish) and 404
// not_found on the API's port.
func checkMetricsPort(t *testing.T, base, metricsBase string) {
	t.Helper()
	get := func(url string) (int, string) {
		res, err := (&http.Client{Timeout: 30 * time.Second}).Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if status, body := get(metricsBase + "/metrics"); status != http.StatusOK || !strings.Contains(body, "noticesd_http_requests_total") {
		t.Fatalf("GET %s/metrics (api's NOTICES_METRICS_ADDR): HTTP %d, want 200 with noticesd_http_requests_total:\n%.500s", metricsBase, status, body)
	}
	status, body := get(base + "/metrics")
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); status != http.StatusNotFound || err != nil || e.Error.Code != "not_found" {
		t.Fatalf("GET %s/metrics (the API's port): HTTP %d %.300s, want 404 not_found", base, status, body)
	}
	t.Logf("metrics: api answers /metrics 200 on its metrics port %s and 404 not_found on the API's port %s", metricsBase, base)
}
