// Package deploy checks what operators deploy (compose.yaml, Dockerfile,
// .dockerignore) against the binary itself: every NOTICES_* variable the
// stack sets is one the binary reads (config.Settings), every command and
// flag it runs is one the built binary's --help lists, and the parts the
// operating guide promises (health checks, replicas, AOF, a non-root image)
// are there. No Docker engine is needed; `docker compose config` (or
// docker-compose) validates the file where a client is installed.
package deploy

import (
	"bytes"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/test/testbin"
)

// root is the repository's top directory.
func root(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// composeFile is the part of compose.yaml the tests read.
type composeFile struct {
	Services map[string]service `yaml:"services"`
	Volumes  map[string]any     `yaml:"volumes"`
	Secrets  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
}

type service struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Deploy struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"deploy"`
	Volumes  []string       `yaml:"volumes"`
	Ports    []string       `yaml:"ports"`
	Restart  string         `yaml:"restart"`
	Secrets  secretRefs     `yaml:"secrets"`
	MemLimit string         `yaml:"mem_limit"`
	Ulimits  map[string]any `yaml:"ulimits"`
}

// secretRefs are a service's secrets by name: compose's short form (a
// name) or long form ({source, target}).
type secretRefs []string

// UnmarshalYAML reads either form.
func (r *secretRefs) UnmarshalYAML(n *yaml.Node) error {
	for _, item := range n.Content {
		if item.Kind == yaml.ScalarNode {
			*r = append(*r, item.Value)
			continue
		}
		var long struct {
			Source string `yaml:"source"`
		}
		if err := item.Decode(&long); err != nil {
			return err
		}
		*r = append(*r, long.Source)
	}
	return nil
}

func loadCompose(t *testing.T) (composeFile, []byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root(t), "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(raw, &cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return cf, raw
}

// help is the built binary's `--help` and each command's `COMMAND --help`.
type help struct {
	bin      string
	commands map[string]bool
	mu       sync.Mutex
	flags    map[string]string // command -> its --help text
}

var (
	helpOnce sync.Once
	helpVal  *help
)

func binaryHelp(t *testing.T) *help {
	t.Helper()
	helpOnce.Do(func() {
		bin := testbin.Build(t)
		out := testbin.Run(t, bin, nil, "--help")
		h := &help{bin: bin, commands: map[string]bool{}, flags: map[string]string{}}
		in := false
		for _, line := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(line, "Commands:"):
				in = true
			case in && strings.TrimSpace(line) == "":
				in = len(h.commands) == 0
			case in:
				h.commands[strings.Fields(line)[0]] = true
			}
		}
		if len(h.commands) == 0 {
			t.Fatalf("no commands in noticesd --help:\n%s", out)
		}
		helpVal = h
	})
	if helpVal == nil {
		t.Fatal("building the binary failed in an earlier test")
	}
	return helpVal
}

// commandHelp is `noticesd CMD --help` (printed on stderr, exit 0).
func (h *help) commandHelp(t *testing.T, cmd string) string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.flags[cmd]; ok {
		return s
	}
	c := exec.Command(h.bin, cmd, "--help")
	var b bytes.Buffer
	c.Stdout, c.Stderr = &b, &b
	if err := c.Run(); err != nil {
		t.Fatalf("noticesd %s --help: %v\n%s", cmd, err, b.String())
	}
	h.flags[cmd] = b.String()
	return b.String()
}

// checkInvocation checks one noticesd command line: the command is in
// --help, and each --flag is in the command's own --help.
func checkInvocation(t *testing.T, where string, args []string) {
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s: no noticesd command", where)
		return
	}
	h := binaryHelp(t)
	if !h.commands[args[0]] {
		t.Errorf("%s runs `noticesd %s`, which is not a command of the binary (its --help lists %v)", where, args[0], keys(h.commands))
		return
	}
	usage := h.commandHelp(t, args[0])
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.Contains(usage, "-"+name+" ") && !strings.Contains(usage, "-"+name+"\n") {
			t.Errorf("%s runs `noticesd %s` with --%s, which `noticesd %s --help` does not list:\n%s", where, strings.Join(args, " "), name, args[0], usage)
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// settingKnown reports whether name is one of config.Settings, matching the
// NOTICES_PLAN_<PLAN>_* patterns.
func settingKnown(name string) bool {
	for _, s := range config.Settings {
		if s.Name == name {
			return true
		}
		if pre, post, ok := strings.Cut(s.Name, "<PLAN>"); ok && strings.HasPrefix(name, pre) && strings.HasSuffix(name, post) {
			plan := strings.TrimSuffix(strings.TrimPrefix(name, pre), post)
			if slices.Contains([]string{"FREE", "STANDARD", "ENTERPRISE"}, plan) {
				return true
			}
		}
	}
	return false
}

// TestComposeSettings: every NOTICES_* variable compose.yaml sets is one the
// binary reads; the noticesd services run the scale backend against the
// stack's own Elasticsearch and Redis, and the secret key comes from the
// operator's environment (required, never a default in the file).
func TestComposeSettings(t *testing.T) {
	cf, raw := loadCompose(t)
	noticesd := 0
	for name, s := range cf.Services {
		for k := range s.Environment {
			if strings.HasPrefix(k, "NOTICES_") && !settingKnown(k) {
				t.Errorf("service %s sets %s, which is not in config.Settings (noticesd --help)", name, k)
			}
		}
		if s.Environment["NOTICES_BACKEND"] == "" {
			continue
		}
		noticesd++
		for k, want := range map[string]string{
			"NOTICES_BACKEND":           "scale",
			"NOTICES_ELASTICSEARCH_URL": "http://elasticsearch:9200",
			"NOTICES_REDIS_URL":         "redis://redis:6379/0",
		} {
			if got := s.Environment[k]; got != want {
				t.Errorf("service %s: %s = %q, want %q", name, k, got, want)
			}
		}
		if got, ok := s.Environment["NOTICES_SECRET_KEY"]; ok {
			t.Errorf("service %s sets NOTICES_SECRET_KEY (%q): docker inspect would show it; use the compose secret (NOTICES_SECRET_KEY_FILE)", name, got)
		}
		if got := s.Environment["NOTICES_SECRET_KEY_FILE"]; got != "/run/secrets/notices_secret_key" || !slices.Contains(s.Secrets, "notices_secret_key") {
			t.Errorf("service %s: NOTICES_SECRET_KEY_FILE = %q, secrets %v; want /run/secrets/notices_secret_key from the compose secret notices_secret_key", name, got, s.Secrets)
		}
	}
	if f := cf.Secrets["notices_secret_key"].File; !strings.HasPrefix(f, "${NOTICES_SECRET_KEY_PATH:?") {
		t.Errorf("secret notices_secret_key's file is %q, want it required from the environment (${NOTICES_SECRET_KEY_PATH:?message})", f)
	}
	if noticesd < 3 {
		t.Errorf("%d services run noticesd with NOTICES_BACKEND set, want api, worker and init", noticesd)
	}
	// No key material in the file: a base64 32-byte key is 44 characters.
	if m := regexp.MustCompile(`[A-Za-z0-9+/]{43}=`).Find(raw); m != nil {
		t.Errorf("compose.yaml holds what looks like a key: %s", m)
	}
}

// TestComposeServices: the parts and their order, health checks, the
// worker's two replicas, Redis' AOF and the volumes.
func TestComposeServices(t *testing.T) {
	cf, _ := loadCompose(t)
	for _, name := range []string{"elasticsearch", "redis", "api", "worker", "init"} {
		if _, ok := cf.Services[name]; !ok {
			t.Fatalf("compose.yaml has no service %q", name)
		}
	}
	es, redis, api, worker, initSvc := cf.Services["elasticsearch"], cf.Services["redis"], cf.Services["api"], cf.Services["worker"], cf.Services["init"]

	if !regexp.MustCompile(`^docker\.elastic\.co/elasticsearch/elasticsearch:8\.19\.\d+$`).MatchString(es.Image) {
		t.Errorf("elasticsearch image %q, want the official 8.19.x image", es.Image)
	}
	if es.Environment["discovery.type"] != "single-node" || es.Environment["xpack.security.enabled"] != "false" {
		t.Errorf("elasticsearch: want discovery.type=single-node and xpack.security.enabled=false, got %v", es.Environment)
	}
	if !strings.Contains(es.Environment["ES_JAVA_OPTS"], "-Xmx") || es.Environment["path.repo"] == "" {
		t.Errorf("elasticsearch: want a heap setting (ES_JAVA_OPTS -Xmx) and path.repo for snapshots, got %v", es.Environment)
	}
	if !regexp.MustCompile(`^redis:7(\.|$)`).MatchString(redis.Image) {
		t.Errorf("redis image %q, want redis:7", redis.Image)
	}
	if i := slices.Index(redis.Command, "--appendonly"); i < 0 || i+1 >= len(redis.Command) || redis.Command[i+1] != "yes" {
		t.Errorf("redis command %q: want --appendonly yes (accounts, watches and deliveries live only there)", redis.Command)
	}
	for name, s := range map[string]service{"elasticsearch": es, "redis": redis} {
		if len(s.Volumes) == 0 {
			t.Errorf("%s has no volume: its data would go with the container", name)
		}
		for _, v := range s.Volumes {
			vol, _, _ := strings.Cut(v, ":")
			if _, ok := cf.Volumes[vol]; !ok {
				t.Errorf("%s mounts %q, which is not a named volume of the file", name, vol)
			}
		}
	}
	for name, s := range map[string]service{"elasticsearch": es, "redis": redis, "api": api} {
		if s.Healthcheck == nil || len(s.Healthcheck.Test) < 2 {
			t.Errorf("%s has no health check", name)
		}
	}
	if hc := strings.Join(api.Healthcheck.Test, " "); !strings.Contains(hc, "/ready") && !strings.Contains(hc, "/health") {
		t.Errorf("api health check %q probes neither /ready nor /health", hc)
	}

	for name, s := range map[string]service{"api": api, "worker": worker, "init": initSvc} {
		for _, dep := range []string{"elasticsearch", "redis"} {
			if s.DependsOn[dep].Condition != "service_healthy" {
				t.Errorf("%s depends on %s with condition %q, want service_healthy", name, dep, s.DependsOn[dep].Condition)
			}
		}
	}
	for name, s := range map[string]service{"api": api, "worker": worker} {
		if s.DependsOn["init"].Condition != "service_completed_successfully" {
			t.Errorf("%s should start after init completed (condition service_completed_successfully), got %q", name, s.DependsOn["init"].Condition)
		}
	}
	for name, s := range map[string]service{"api": api, "worker": worker, "init": initSvc} {
		if s.Image != "noticesd:local" || s.Build != "." {
			t.Errorf("%s: image %q build %v, want the image built from the Dockerfile here (build: ., image: noticesd:local)", name, s.Image, s.Build)
		}
	}
	if initSvc.Restart != "no" {
		t.Errorf("init restart %q, want \"no\" (a one-shot)", initSvc.Restart)
	}
	if worker.Deploy.Replicas != 2 {
		t.Errorf("worker replicas = %d, want 2", worker.Deploy.Replicas)
	}
	if !slices.Equal(api.Ports, []string{"${NOTICES_PUBLISH_IP:-127.0.0.1}:${NOTICES_PORT:-8080}:8080"}) || api.Environment["NOTICES_ADDR"] != ":8080" {
		t.Errorf("api: want port 8080 published on 127.0.0.1 by default (NOTICES_PUBLISH_IP opens it) and NOTICES_ADDR=:8080, got ports %v, addr %q", api.Ports, api.Environment["NOTICES_ADDR"])
	}
	// /metrics is off the published port: api serves it on a port of its
	// own (NOTICES_METRICS_ADDR), which no service publishes.
	_, apiMetricsPort, err := net.SplitHostPort(api.Environment["NOTICES_METRICS_ADDR"])
	if err != nil || apiMetricsPort == "8080" {
		t.Errorf("api: NOTICES_METRICS_ADDR = %q, want a listen address of its own (not the API's :8080), so the published port answers /metrics 404", api.Environment["NOTICES_METRICS_ADDR"])
	}
	for name, s := range cf.Services {
		for _, p := range s.Ports {
			if i := strings.LastIndexByte(p, ':'); i >= 0 && (p[i+1:] == apiMetricsPort || p[i+1:] == "9464") {
				t.Errorf("service %s publishes %q, a metrics port: /metrics must not be published", name, p)
			}
		}
		if name != "api" && len(s.Ports) > 0 {
			t.Errorf("service %s publishes %v: only the API is published", name, s.Ports)
		}
		if s.MemLimit == "" {
			t.Errorf("service %s has no mem_limit", name)
		}
		if _, ok := s.Ulimits["memlock"]; ok && s.Environment["bootstrap.memory_lock"] != "true" {
			t.Errorf("service %s raises the memlock ulimit without bootstrap.memory_lock=true", name)
		}
	}
	// The heap is half of Elasticsearch's memory limit.
	heap := regexp.MustCompile(`-Xmx(\d+)([gm])`).FindStringSubmatch(es.Environment["ES_JAVA_OPTS"])
	limit := regexp.MustCompile(`^\$\{ES_MEM_LIMIT:-(\d+)([gm])\}$`).FindStringSubmatch(es.MemLimit)
	mb := func(n, unit string) int {
		v, _ := strconv.Atoi(n)
		if unit == "g" {
			v *= 1024
		}
		return v
	}
	if heap == nil || limit == nil || 2*mb(heap[1], heap[2]) != mb(limit[1], limit[2]) {
		t.Errorf("elasticsearch: heap %q and mem_limit %q: want the heap at half the limit", es.Environment["ES_JAVA_OPTS"], es.MemLimit)
	}
	// A production `up` loads no synthetic notices: the demo is opt-in.
	if got := initSvc.Environment["DEMO"]; got != "${DEMO:-off}" {
		t.Errorf("init DEMO = %q, want ${DEMO:-off} (the demo opt-in)", got)
	}
}

// TestComposeCommands: every noticesd command line in compose.yaml (the
// services' commands, the health check, the init script) is a command of the
// built binary with flags it lists.
func TestComposeCommands(t *testing.T) {
	cf, _ := loadCompose(t)
	if got := cf.Services["api"].Command; !slices.Equal(got, []string{"serve"}) {
		t.Errorf("api command %q, want [serve]", got)
	}
	if got := cf.Services["worker"].Command; !slices.Equal(got, []string{"worker"}) {
		t.Errorf("worker command %q, want [worker]", got)
	}
	checkInvocation(t, "service api", cf.Services["api"].Command)
	checkInvocation(t, "service worker", cf.Services["worker"].Command)
	hc := cf.Services["api"].Healthcheck.Test
	if len(hc) < 3 || hc[0] != "CMD" || hc[1] != "noticesd" {
		t.Fatalf("api health check %q, want [CMD noticesd health ...]", hc)
	}
	checkInvocation(t, "the api health check", hc[2:])

	script := strings.Join(cf.Services["init"].Command, "\n")
	lines := noticesdLines(script)
	var ran []string
	for _, args := range lines {
		checkInvocation(t, "service init", args)
		ran = append(ran, strings.Join(args[:min(2, len(args))], " "))
	}
	for _, want := range []string{"sample --notices", "ingest register", "ingest notices", "accounts create"} {
		if !slices.Contains(ran, want) {
			t.Errorf("init does not run `noticesd %s` (it runs %q)", want, ran)
		}
	}
}

// TestComposeInitScript runs init's script as compose runs it (sh -ec, $$
// read as $), with the built binary as noticesd on PATH and an embedded
// data directory standing in for the namespace: the first run loads the
// sample and makes the demo account; a second run loads nothing; with
// DEMO=off it does nothing; into a namespace that has another account
// (real use) it loads nothing. Every `up` and every `docker compose run`
// of api starts init, so it must never load the sample into real data.
func TestComposeInitScript(t *testing.T) {
	bin := testbin.Build(t) // binaryHelp's binary lives in the first test's directory
	cf, _ := loadCompose(t)
	script := strings.ReplaceAll(strings.Join(cf.Services["init"].Command, "\n"), "$$", "$")
	if !strings.Contains(script, "/tmp/sample") {
		t.Fatalf("init's script no longer writes its sample to /tmp/sample; update this test:\n%s", script)
	}
	bindir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(bindir, "noticesd")); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, data string, env ...string) (string, string) {
		t.Helper()
		sampleDir := filepath.Join(data, "sample-out")
		c := exec.Command("/bin/sh", "-ec", strings.ReplaceAll(script, "/tmp/sample", sampleDir))
		c.Env = append([]string{"PATH=" + bindir + ":/usr/bin:/bin", "HOME=" + data, "NOTICES_BACKEND=embedded",
			"NOTICES_DATA_DIR=" + data, "SAMPLE_NOTICES=200", "SAMPLE_COMPANIES=300", "DEMO=on"}, env...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("init's script: %v\n%s", err, out)
		}
		return string(out), sampleDir
	}
	accounts := func(t *testing.T, data string) string {
		t.Helper()
		return string(testbin.Run(t, bin, []string{"NOTICES_BACKEND=embedded", "NOTICES_DATA_DIR=" + data}, "accounts", "list"))
	}
	t.Run("fresh namespace, then again", func(t *testing.T) {
		data := t.TempDir()
		out, sampleDir := run(t, data)
		if !strings.Contains(out, "init: demo account") || !strings.Contains(out, "200") {
			t.Fatalf("the first run did not load the sample and make the demo account:\n%s", out)
		}
		if _, err := os.Stat(sampleDir); err != nil {
			t.Fatalf("no sample written: %v", err)
		}
		if err := os.RemoveAll(sampleDir); err != nil {
			t.Fatal(err)
		}
		out, _ = run(t, data)
		if !strings.Contains(out, "the demo account exists already") {
			t.Fatalf("the second run:\n%s", out)
		}
		if _, err := os.Stat(sampleDir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the second run wrote a sample again (%v)", err)
		}
	})
	t.Run("DEMO=off", func(t *testing.T) {
		data := t.TempDir()
		out, sampleDir := run(t, data, "DEMO=off")
		if !strings.Contains(out, "DEMO=off") {
			t.Fatalf("with DEMO=off:\n%s", out)
		}
		if _, err := os.Stat(sampleDir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("with DEMO=off a sample was written (%v)", err)
		}
		if a := accounts(t, data); strings.Contains(a, "account_id") {
			t.Fatalf("with DEMO=off init made an account:\n%s", a)
		}
	})
	t.Run("namespace in real use", func(t *testing.T) {
		data := t.TempDir()
		testbin.Run(t, bin, []string{"NOTICES_BACKEND=embedded", "NOTICES_DATA_DIR=" + data}, "accounts", "create", "--name", "acme", "--plan", "standard")
		out, sampleDir := run(t, data)
		if !strings.Contains(out, "in real use") {
			t.Fatalf("init on a namespace with an account:\n%s", out)
		}
		if _, err := os.Stat(sampleDir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("init loaded the sample into a namespace in real use (%v)", err)
		}
		if a := accounts(t, data); strings.Contains(a, `"demo"`) {
			t.Fatalf("init made a demo account in a namespace in real use:\n%s", a)
		}
	})
}

// noticesdLines extracts the argument lists of every `noticesd ...` in a
// shell script (up to a pipe, ; or the end of the line).
func noticesdLines(script string) [][]string {
	var out [][]string
	for _, line := range strings.Split(script, "\n") {
		for {
			i := strings.Index(line, "noticesd ")
			if i < 0 {
				break
			}
			rest := line[i+len("noticesd "):]
			end := strings.IndexAny(rest, "|;&)")
			if end < 0 {
				end = len(rest)
			}
			out = append(out, strings.Fields(rest[:end]))
			line = rest[end:]
		}
	}
	return out
}

// TestDockerfile checks what can be checked without an engine: a cgo build
// stage with the build tag, a slim runtime as a non-root user, noticesd as
// the entrypoint, a health check that is a real noticesd command, and a
// .dockerignore that keeps local state out but the sources in.
func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := strings.ReplaceAll(string(raw), "\\\n", " ")
	var from, users []string
	var entrypoint, healthcheck, build string
	for _, line := range strings.Split(df, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			from = append(from, f[1])
		case "USER":
			users = append(users, f[1])
		case "ENTRYPOINT":
			entrypoint = strings.Join(f[1:], " ")
		case "HEALTHCHECK":
			healthcheck = strings.Join(f[1:], " ")
		case "RUN":
			if strings.Contains(line, "go build") {
				build = line
			}
		}
	}
	if len(from) != 2 || !strings.HasPrefix(from[0], "golang:1.26") || !strings.Contains(from[0], "bookworm") || from[1] != "debian:bookworm-slim" {
		t.Errorf("stages %q, want golang:1.26-bookworm then debian:bookworm-slim", from)
	}
	if !strings.Contains(build, "-tags sqlite_fts5") || !strings.Contains(build, "CGO_ENABLED=1") || !strings.Contains(build, "./cmd/noticesd") {
		t.Errorf("build step %q: want CGO_ENABLED=1 go build -tags sqlite_fts5 ./cmd/noticesd", build)
	}
	if len(users) == 0 || strings.HasPrefix(users[len(users)-1], "root") || strings.HasPrefix(users[len(users)-1], "0") {
		t.Errorf("USER %q: the runtime must not run as root", users)
	}
	if !strings.Contains(df, "ca-certificates") {
		t.Error("the runtime lacks ca-certificates (webhooks over HTTPS)")
	}
	if entrypoint != `["noticesd"]` {
		t.Errorf("ENTRYPOINT %s, want [\"noticesd\"]", entrypoint)
	}
	i := strings.Index(healthcheck, "CMD ")
	if i < 0 {
		t.Fatalf("HEALTHCHECK %q has no CMD", healthcheck)
	}
	var argv []string
	if err := yaml.Unmarshal([]byte(healthcheck[i+4:]), &argv); err != nil || len(argv) < 2 || argv[0] != "noticesd" {
		t.Fatalf("HEALTHCHECK CMD %q, want the exec form [\"noticesd\", ...] (err %v)", healthcheck[i+4:], err)
	}
	checkInvocation(t, "the Dockerfile's HEALTHCHECK", argv[1:])

	ign, err := os.ReadFile(filepath.Join(root(t), ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	pats := strings.Fields(string(ign))
	for _, want := range []string{".git", "data", "bin", ".cache", "secrets", ".env"} { // secrets: compose.yaml's key file
		if !slices.Contains(pats, want) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
	for _, p := range pats {
		for _, needed := range []string{"go.mod", "go.sum", "cmd", "internal", "docs", "mappings", "api"} {
			if p == needed || p == needed+"/" {
				t.Errorf(".dockerignore excludes %s, which the build needs", needed)
			}
		}
	}
}

// composeClient returns the argv of a compose client that can run `config`:
// `docker compose` (v2 plugin) or docker-compose (v1).
func composeClient() ([]string, error) {
	if out, err := exec.Command("docker", "compose", "version").CombinedOutput(); err == nil && bytes.Contains(out, []byte("version")) {
		return []string{"docker", "compose"}, nil
	}
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}, nil
	}
	return nil, errors.New("neither `docker compose` (the v2 plugin) nor docker-compose is installed (apt-get install docker-compose)")
}

// TestComposeConfig: the compose client accepts the file with the secret key
// set, refuses it without (naming the variable), and refuses a broken copy,
// which shows it really validates.
func TestComposeConfig(t *testing.T) {
	client, err := composeClient()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skipf("NOT RUN: `docker compose config`: %v", err)
	}
	dir := root(t)
	run := func(file string, env ...string) (string, error) {
		c := exec.Command(client[0], append(client[1:], "-f", file, "config", "-q")...)
		c.Dir = dir
		c.Env = append(slices.DeleteFunc(os.Environ(), func(s string) bool { return strings.HasPrefix(s, "NOTICES_SECRET_KEY") }), env...)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	compose := filepath.Join(dir, "compose.yaml")
	keyFile := filepath.Join(t.TempDir(), "notices_secret_key")
	if err := os.WriteFile(keyFile, []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(compose, "NOTICES_SECRET_KEY_PATH="+keyFile); err != nil {
		t.Errorf("%s config: %v\n%s", strings.Join(client, " "), err, out)
	}
	if out, err := run(compose); err == nil || !strings.Contains(out, "NOTICES_SECRET_KEY_PATH") {
		t.Errorf("config without NOTICES_SECRET_KEY_PATH: err %v, want a failure naming the variable; output:\n%s", err, out)
	}
	// The secured override validates on top of compose.yaml.
	secured := exec.Command(client[0], append(client[1:], "-f", compose, "-f", filepath.Join(dir, "compose.secured.yaml"), "config", "-q")...)
	secured.Dir = dir
	secured.Env = append(os.Environ(), "NOTICES_SECRET_KEY_PATH="+keyFile, "NOTICES_SECRETS_DIR="+t.TempDir())
	if out, err := secured.CombinedOutput(); err != nil {
		t.Errorf("%s -f compose.yaml -f compose.secured.yaml config: %v\n%s", strings.Join(client, " "), err, out)
	}
	// And the replicated one on top of both.
	replicated := exec.Command(client[0], append(client[1:], "-f", compose, "-f", filepath.Join(dir, "compose.secured.yaml"),
		"-f", filepath.Join(dir, "compose.replicated.yaml"), "config", "-q")...)
	replicated.Dir = dir
	replicated.Env = secured.Env
	if out, err := replicated.CombinedOutput(); err != nil {
		t.Errorf("%s -f compose.yaml -f compose.secured.yaml -f compose.replicated.yaml config: %v\n%s", strings.Join(client, " "), err, out)
	}
	// The Redis Cluster one on top of compose.yaml.
	cluster := exec.Command(client[0], append(client[1:], "-f", compose, "-f", filepath.Join(dir, "compose.cluster.yaml"), "config", "-q")...)
	cluster.Dir = dir
	cluster.Env = append(os.Environ(), "NOTICES_SECRET_KEY_PATH="+keyFile)
	if out, err := cluster.CombinedOutput(); err != nil {
		t.Errorf("%s -f compose.yaml -f compose.cluster.yaml config: %v\n%s", strings.Join(client, " "), err, out)
	}
	raw, err := os.ReadFile(compose)
	if err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(t.TempDir(), "compose.yaml")
	if err := os.WriteFile(broken, bytes.Replace(raw, []byte("    command: [\"worker\"]\n"), []byte("    command: [\"worker\"]\n    replicas_typo: 2\n"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(broken, "NOTICES_SECRET_KEY_PATH="+keyFile); err == nil {
		t.Errorf("config accepted a service with an unknown key (replicas_typo): it does not validate\n%s", out)
	}
}

// loadOverride reads one of the override files beside compose.yaml.
func loadOverride(t *testing.T, name string) composeFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root(t), name))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(raw, &cf); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return cf
}

// checkNoticesdEnv: every variable an override gives the noticesd service
// name is a setting the binary reads, and no URL carries a password.
func checkNoticesdEnv(t *testing.T, name string, s service) {
	t.Helper()
	for k, v := range s.Environment {
		if !settingKnown(k) {
			t.Errorf("%s sets %s, which is not in config.Settings", name, k)
		}
		if u, err := url.Parse(v); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				t.Errorf("%s: %s=%q carries a password in the environment", name, k, v)
			}
		}
	}
}

// TestComposeSecuredFile: compose.secured.yaml sets only settings the
// binary reads, gives noticesd no password in an environment variable (the
// URLs name the user only; the passwords are *_PASSWORD_FILE secrets), puts
// Elasticsearch on HTTPS with security on and Redis on TLS only with an ACL
// file, and mounts private keys as secrets and certificates read-only.
func TestComposeSecuredFile(t *testing.T) {
	cf := loadOverride(t, "compose.secured.yaml")
	for _, name := range []string{"init", "api", "worker"} {
		s := cf.Services[name]
		checkNoticesdEnv(t, name, s)
		for _, k := range []string{"NOTICES_ELASTICSEARCH_PASSWORD_FILE", "NOTICES_REDIS_PASSWORD_FILE"} {
			if !strings.HasPrefix(s.Environment[k], "/run/secrets/") {
				t.Errorf("%s: %s=%q, want a compose secret under /run/secrets", name, k, s.Environment[k])
			}
		}
		if !strings.HasPrefix(s.Environment["NOTICES_ELASTICSEARCH_URL"], "https://") || !strings.HasPrefix(s.Environment["NOTICES_REDIS_URL"], "rediss://") ||
			s.Environment["NOTICES_ELASTICSEARCH_CA_FILE"] == "" || s.Environment["NOTICES_REDIS_CA_FILE"] == "" {
			t.Errorf("%s: want https:// and rediss:// URLs with their CA files, got %v", name, s.Environment)
		}
		if !slices.Contains(s.Secrets, "notices_secret_key") {
			t.Errorf("%s: secrets %v lack notices_secret_key (an override's list replaces compose.yaml's in some clients)", name, s.Secrets)
		}
	}
	es, redis := cf.Services["elasticsearch"], cf.Services["redis"]
	if es.Environment["xpack.security.enabled"] != "true" || es.Environment["xpack.security.http.ssl.enabled"] != "true" {
		t.Errorf("elasticsearch: want security and HTTPS on, got %v", es.Environment)
	}
	cmd := strings.Join(redis.Command, " ")
	for _, want := range []string{"--port 0", "--tls-port", "--aclfile /run/secrets/", "--appendonly yes"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("redis command %q lacks %q", cmd, want)
		}
	}
	checkSecretFiles(t, cf)
}

// checkSecretFiles: an override mounts files of the host (TLS material)
// read-only, private keys only as secrets, and takes every secret from
// ${NOTICES_SECRETS_DIR:-./secrets}, where scripts/compose-secrets.sh makes them.
func checkSecretFiles(t *testing.T, cf composeFile) {
	t.Helper()
	for name, s := range cf.Services {
		for _, v := range s.Volumes {
			if strings.HasPrefix(v, "${") && !strings.HasSuffix(v, ":ro") {
				t.Errorf("%s mounts %q read-write; TLS material is mounted read-only", name, v)
			}
			if strings.Contains(v, "key") {
				t.Errorf("%s mounts %q as a volume; a private key goes in as a secret", name, v)
			}
		}
	}
	for name, sec := range cf.Secrets {
		if !strings.HasPrefix(sec.File, "${NOTICES_SECRETS_DIR:-./secrets}/") {
			t.Errorf("secret %s is the file %q, want one under ${NOTICES_SECRETS_DIR:-./secrets} (scripts/compose-secrets.sh)", name, sec.File)
		}
	}
}
