package deploy

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

// clusterNodes are compose.cluster.yaml's Redis Cluster nodes: compose.yaml's
// redis and five more.
var clusterNodes = []string{"redis", "redis-node2", "redis-node3", "redis-node4", "redis-node5", "redis-node6"}

// TestComposeClusterFile: compose.cluster.yaml gives noticesd
// NOTICES_REDIS_CLUSTER_URL (seeds that are nodes of the file, no password)
// with NOTICES_REDIS_URL emptied, starts it after the one-shot that makes the
// cluster, runs six nodes with cluster mode and AOF on, each announcing its
// compose name and keeping its data in a volume of its own, and makes three
// masters with a replica each of all six. (TestComposeConfig has the
// compose client validate it on top of compose.yaml.)
func TestComposeClusterFile(t *testing.T) {
	cf := loadOverride(t, "compose.cluster.yaml")
	for _, name := range []string{"init", "api", "worker"} {
		s := cf.Services[name]
		checkNoticesdEnv(t, name, s)
		if v, ok := s.Environment["NOTICES_REDIS_URL"]; !ok || v != "" {
			t.Errorf("%s: NOTICES_REDIS_URL=%q (set %v), want it emptied (it excludes NOTICES_REDIS_CLUSTER_URL)", name, v, ok)
		}
		u, err := url.Parse(s.Environment["NOTICES_REDIS_CLUSTER_URL"])
		if err != nil || u.Scheme != "redis" {
			t.Fatalf("%s: NOTICES_REDIS_CLUSTER_URL=%q: %v", name, s.Environment["NOTICES_REDIS_CLUSTER_URL"], err)
		}
		seeds := append([]string{u.Host}, u.Query()["addr"]...)
		for _, seed := range seeds {
			if !slices.Contains(clusterNodes, strings.TrimSuffix(seed, ":6379")) {
				t.Errorf("%s: seed %s is not a node of the file on 6379", name, seed)
			}
		}
		if len(seeds) < 3 {
			t.Errorf("%s: %d seeds in NOTICES_REDIS_CLUSTER_URL, want 3 (any one node down must not stop a start)", name, len(seeds))
		}
		if s.DependsOn["redis-cluster"].Condition != "service_completed_successfully" {
			t.Errorf("%s: depends on redis-cluster with %q, want service_completed_successfully", name, s.DependsOn["redis-cluster"].Condition)
		}
	}
	volumes := map[string]bool{}
	for _, name := range clusterNodes {
		s := cf.Services[name]
		script := strings.Join(s.Entrypoint, " ")
		for _, want := range []string{"redis-server", "--cluster-enabled yes", "--cluster-config-file nodes.conf", "--appendonly yes",
			`--cluster-announce-hostname "$$NODE_HOST"`, "--cluster-preferred-endpoint-type hostname"} {
			if !strings.Contains(script, want) {
				t.Errorf("%s: entrypoint %q lacks %q", name, script, want)
			}
		}
		if s.Environment["NODE_HOST"] != name {
			t.Errorf("%s: NODE_HOST=%q, want its compose name", name, s.Environment["NODE_HOST"])
		}
		if name == "redis" {
			continue // compose.yaml's redis-data volume
		}
		if len(s.Volumes) != 1 || !strings.HasSuffix(s.Volumes[0], ":/data") || volumes[s.Volumes[0]] {
			t.Errorf("%s: volumes %v, want a named volume of its own at /data", name, s.Volumes)
		} else if v := strings.TrimSuffix(s.Volumes[0], ":/data"); cf.Volumes == nil || !hasKey(cf.Volumes, v) {
			t.Errorf("%s: volume %s is not declared", name, v)
		}
		volumes[s.Volumes[0]] = true
	}
	create := cf.Services["redis-cluster"]
	if script := strings.Join(create.Command, " "); !strings.Contains(script, "redis-cli --cluster create") || !strings.Contains(script, "--cluster-replicas 1") {
		t.Errorf("redis-cluster: command %q, want redis-cli --cluster create with --cluster-replicas 1", script)
	}
	if got := strings.Fields(create.Environment["CLUSTER_NODES"]); len(got) != len(clusterNodes) {
		t.Errorf("redis-cluster: CLUSTER_NODES %v, want the %d nodes", got, len(clusterNodes))
	}
	for _, n := range clusterNodes {
		if create.DependsOn[n].Condition != "service_healthy" || !strings.Contains(create.Environment["CLUSTER_NODES"], n+":6379") {
			t.Errorf("redis-cluster: want node %s in CLUSTER_NODES and healthy first, got %v", n, create.DependsOn)
		}
	}
	if create.Restart != "no" {
		t.Errorf("redis-cluster: restart %q, want no (a one-shot)", create.Restart)
	}

}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}
