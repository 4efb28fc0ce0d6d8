//go:build deployrun

package deployrun

import (
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

	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

// TestComposeCluster: compose.yaml with compose.cluster.yaml, on the host
// network (compose.hostnet.yaml, compose.cluster-hostnet.yaml): six Redis
// nodes joined by the one-shot redis-cluster into three masters with a
// replica each, noticesd on NOTICES_REDIS_CLUSTER_URL. init loads the demo,
// everything turns healthy, /health lists the three masters, and a search
// and a bulk screen answer 200.
func TestComposeCluster(t *testing.T) {
	client := composeClient(t)
	if out, err := exec.Command("docker", "image", "inspect", "noticesd:local").CombinedOutput(); err != nil {
		t.Fatalf("no noticesd:local image on the engine at %s (make test-deploy builds it): %v\n%s", os.Getenv("DOCKER_HOST"), err, out)
	}
	rcv := testbin.NewReceiver(t) // compose.hostnet.yaml mounts a webhook CA
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	rcv.WriteCA(t, caFile, 0o644)
	keyFile := filepath.Join(dir, "notices_secret_key")
	if err := os.WriteFile(keyFile, []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	named := map[string]int{}
	var used []int
	for _, v := range []string{"TEST_ES_PORT", "TEST_ES_TRANSPORT_PORT", "TEST_API_PORT", "TEST_API_METRICS_PORT", "TEST_WORKER1_METRICS_PORT", "TEST_WORKER2_METRICS_PORT"} {
		named[v] = freePort(t)
		used = append(used, named[v])
	}
	nodes, err := testservers.ClusterPorts(6, used)
	if err != nil {
		t.Fatal(err)
	}
	named["TEST_REDIS_PORT"] = nodes[0]
	for i, p := range nodes[1:] {
		named[fmt.Sprintf("TEST_REDIS_NODE%d_PORT", i+2)] = p
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "NOTICES_") || strings.HasPrefix(kv, "DEMO=") || strings.HasPrefix(kv, "COMPOSE_")
	})
	env = append(env, "NOTICES_SECRET_KEY_PATH="+keyFile, "DEMO=on", "SAMPLE_NOTICES=2000", "SAMPLE_COMPANIES=8000",
		"TEST_CA_FILE="+caFile, "TEST_NOFILE="+nofile(t))
	for k, v := range named {
		env = append(env, k+"="+strconv.Itoa(v))
	}
	s := &stack{t: t, client: client, env: env, base: fmt.Sprintf("http://127.0.0.1:%d", named["TEST_API_PORT"]), file: hostComposeFile(t),
		project:   project + "cluster",
		overrides: []string{"compose.cluster.yaml", "test/deployrun/compose.hostnet.yaml", "test/deployrun/compose.cluster-hostnet.yaml"},
		services: []string{"elasticsearch", "redis", "redis-node2", "redis-node3", "redis-node4", "redis-node5", "redis-node6",
			"api", "worker", "worker2"}}
	_, _ = s.composeErr("down", "-v", "--remove-orphans")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service logs at the failure:\n%s", s.logs())
		}
		if out, err := s.composeErr("down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("compose down -v: %v\n%s", err, out)
		}
	})
	t.Logf("Redis Cluster nodes on 127.0.0.1 ports %v (bus ports +10000)", nodes)

	start := time.Now()
	s.compose("up", "-d", "--no-build")
	s.waitHealthy("up on the cluster")
	t.Logf("up: %s from `up` to all healthy", time.Since(start).Round(time.Second))
	made := docker(t, "logs", s.container("redis-cluster"))
	if !strings.Contains(made, "every node reports cluster_state:ok") {
		t.Fatalf("redis-cluster's log does not say the cluster was made:\n%s", made)
	}
	info := docker(t, "exec", s.container("redis"), "redis-cli", "-p", strconv.Itoa(nodes[0]), "cluster", "info")
	for _, want := range []string{"cluster_state:ok", "cluster_known_nodes:6", "cluster_size:3"} {
		if !strings.Contains(info, want) {
			t.Fatalf("CLUSTER INFO lacks %s:\n%s", want, info)
		}
	}
	t.Logf("redis-cluster made the cluster: cluster_state:ok, 6 nodes, 3 masters")

	initLog := docker(t, "logs", s.container("init"))
	keys := map[string]string{}
	for _, m := range keyField.FindAllStringSubmatch(initLog, -1) {
		keys[m[1]] = m[2]
	}
	if keys["read_key"] == "" {
		t.Fatalf("init's log has no demo account keys:\n%s", initLog)
	}
	var health struct {
		Redis struct {
			Primary string `json:"primary"`
			Masters []struct {
				Node      string `json:"node"`
				Reachable bool   `json:"reachable"`
			} `json:"masters"`
		} `json:"redis"`
	}
	s.api("", "GET", "/health", nil, http.StatusOK, &health)
	if len(health.Redis.Masters) != 3 || health.Redis.Primary == "" {
		t.Fatalf("/health's redis block: %+v, want the 3 masters and the namespace's", health.Redis)
	}
	for _, m := range health.Redis.Masters {
		if !m.Reachable {
			t.Fatalf("/health: master %s not reachable", m.Node)
		}
	}
	t.Logf("/health: 3 masters, all reachable; the namespace's is %s", health.Redis.Primary)

	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	s.api(keys["read_key"], "GET", "/v1/notices?state=VIC,NSW&sort=published_desc&limit=20", nil, http.StatusOK, &page)
	if len(page.Data) == 0 {
		t.Fatal("search: no notices in the demo sample")
	}
	var candidates []string
	for n := 100_000; n < 120_000; n++ {
		candidates = append(candidates, acn(n))
	}
	var screen struct {
		Matched   []any    `json:"matched"`
		Unmatched []string `json:"unmatched"`
	}
	s.api(keys["read_key"], "POST", "/v1/match", map[string]any{"identifiers": candidates}, http.StatusOK, &screen)
	if len(screen.Matched) == 0 || len(screen.Unmatched) == 0 {
		t.Fatalf("screen of %d ACNs: %d matches, %d unmatched; want some of each", len(candidates), len(screen.Matched), len(screen.Unmatched))
	}
	t.Logf("on the cluster: a search answered 200 with %d notices, a screen of %d ACNs 200 with %d matches and %d registered without notices",
		len(page.Data), len(candidates), len(screen.Matched), len(screen.Unmatched))
}
