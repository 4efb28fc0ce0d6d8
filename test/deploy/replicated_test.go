package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestComposeReplicatedFile: compose.replicated.yaml gives noticesd both
// Elasticsearch nodes with one replica of every index and the three
// Sentinels (no password in the environment), runs the second node with
// the first's security (HTTPS, TLS between the nodes), the Redis replica
// with TLS, the ACL file and AOF, and three Sentinels with quorum 2; keys go
// in as secrets, certificates read-only.
func TestComposeReplicatedFile(t *testing.T) {
	cf := loadOverride(t, "compose.replicated.yaml")
	for _, name := range []string{"init", "api", "worker"} {
		s := cf.Services[name]
		checkNoticesdEnv(t, name, s)
		if urls := strings.Split(s.Environment["NOTICES_ELASTICSEARCH_URL"], ","); len(urls) < 2 || !strings.HasPrefix(urls[1], "https://noticesd@") {
			t.Errorf("%s: NOTICES_ELASTICSEARCH_URL=%q, want every node's https:// URL", name, s.Environment["NOTICES_ELASTICSEARCH_URL"])
		}
		if got := s.Environment["NOTICES_ELASTICSEARCH_REPLICAS"]; got != "1" {
			t.Errorf("%s: NOTICES_ELASTICSEARCH_REPLICAS=%q, want 1 (each index created with a copy on the other node)", name, got)
		}
		if n := len(strings.Split(s.Environment["NOTICES_REDIS_SENTINELS"], ",")); n != 3 || s.Environment["NOTICES_REDIS_MASTER"] == "" {
			t.Errorf("%s: want the 3 Sentinels and the master name, got %v", name, s.Environment)
		}
		if !strings.HasPrefix(s.Environment["NOTICES_REDIS_SENTINEL_PASSWORD_FILE"], "/run/secrets/") {
			t.Errorf("%s: NOTICES_REDIS_SENTINEL_PASSWORD_FILE=%q, want a compose secret", name, s.Environment["NOTICES_REDIS_SENTINEL_PASSWORD_FILE"])
		}
		for _, sec := range []string{"notices_secret_key", "es_password", "redis_password", "redis_sentinel_password"} {
			if !slices.Contains(s.Secrets, sec) {
				t.Errorf("%s: secrets %v lack %s (an override's list replaces the others' in some clients)", name, s.Secrets, sec)
			}
		}
		for _, dep := range []string{"elasticsearch2", "redis-replica", "redis-sentinel1", "redis-sentinel2", "redis-sentinel3"} {
			if s.DependsOn[dep].Condition != "service_healthy" {
				t.Errorf("%s: depends on %s with condition %q, want service_healthy", name, dep, s.DependsOn[dep].Condition)
			}
		}
	}
	for _, name := range []string{"elasticsearch", "elasticsearch2"} {
		env := cf.Services[name].Environment
		if env["xpack.security.transport.ssl.enabled"] != "true" || env["discovery.type"] != "multi-node" || env["cluster.name"] == "" {
			t.Errorf("%s: want one multi-node cluster with TLS between the nodes, got %v", name, env)
		}
	}
	if env := cf.Services["elasticsearch2"].Environment; env["xpack.security.enabled"] != "true" || env["xpack.security.http.ssl.enabled"] != "true" {
		t.Errorf("elasticsearch2: want security and HTTPS on, as on the first node, got %v", env)
	}
	replica := strings.Join(cf.Services["redis-replica"].Command, " ")
	for _, want := range []string{"--port 0", "--tls-replication yes", "--replicaof redis ", "--aclfile /run/secrets/", "--appendonly yes", "--include /run/secrets/"} {
		if !strings.Contains(replica, want) {
			t.Errorf("redis-replica command %q lacks %q", replica, want)
		}
	}
	if primary := strings.Join(cf.Services["redis"].Command, " "); !strings.Contains(primary, "--tls-replication yes") || !strings.Contains(primary, "--include /run/secrets/") {
		t.Errorf("redis command %q: want TLS replication and the replica login (after a failover it is a replica)", primary)
	}
	monitor := regexp.MustCompile(`sentinel monitor noticesd \S+ \S+ 2\n`)
	for _, name := range []string{"redis-sentinel1", "redis-sentinel2", "redis-sentinel3"} {
		s := cf.Services[name]
		script := strings.Join(s.Command, "\n")
		if !monitor.MatchString(script) || !strings.Contains(script, "tls-port") || !strings.Contains(script, "requirepass $$(cat /run/secrets/") {
			t.Errorf("%s: want a Sentinel on TLS with its password from a secret monitoring noticesd with quorum 2, got %q", name, script)
		}
		if len(s.Volumes) == 0 || !strings.HasSuffix(s.Volumes[0], ":/data") {
			t.Errorf("%s: volumes %v, want a named volume at /data first (it keeps what it learns)", name, s.Volumes)
		}
	}
	checkSecretFiles(t, cf)
}

// TestComposeSecretsScript runs scripts/compose-secrets.sh in an empty
// directory (with the Elasticsearch user file made beforehand, so that no
// Docker engine is needed) and checks that it makes every file
// compose.secured.yaml and compose.replicated.yaml name under
// ${NOTICES_SECRETS_DIR:-./secrets}, and certificates good for both ends of
// TLS between nodes (server and client use).
func TestComposeSecretsScript(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skipf("NOT RUN: no openssl: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "secrets")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "es_users"), []byte("noticesd:$2a$10$x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root(t), "scripts", "compose-secrets.sh"), dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compose-secrets.sh: %v\n%s", err, out)
	}
	ref := regexp.MustCompile(`\$\{NOTICES_SECRETS_DIR:-\./secrets\}/([A-Za-z0-9_./-]+)`)
	for _, f := range []string{"compose.secured.yaml", "compose.replicated.yaml"} {
		raw, err := os.ReadFile(filepath.Join(root(t), f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ref.FindAllStringSubmatch(string(raw), -1) {
			if st, err := os.Stat(filepath.Join(dir, m[1])); err != nil || st.Size() == 0 {
				t.Errorf("%s names %s, which compose-secrets.sh did not make: %v", f, m[1], err)
			}
		}
	}
	for _, c := range []string{"elasticsearch", "elasticsearch2", "redis", "redis-replica", "redis-sentinel"} {
		out, err := exec.Command("openssl", "x509", "-noout", "-ext", "extendedKeyUsage,subjectAltName", "-in", filepath.Join(dir, "tls", c+".pem")).CombinedOutput()
		if err != nil {
			t.Fatalf("openssl x509 %s: %v\n%s", c, err, out)
		}
		if !strings.Contains(string(out), "TLS Web Server Authentication") || !strings.Contains(string(out), "TLS Web Client Authentication") {
			t.Errorf("the certificate of %s is not for both server and client use (nodes dial each other with it):\n%s", c, out)
		}
		if !strings.Contains(string(out), "DNS:"+strings.TrimSuffix(c, "-sentinel")) {
			t.Errorf("the certificate of %s lacks its compose name:\n%s", c, out)
		}
	}
}
