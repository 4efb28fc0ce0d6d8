package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedisClusterExclusive: NOTICES_REDIS_CLUSTER_URL beside
// NOTICES_REDIS_URL or a Sentinel setting stops the command with exit 2,
// naming both settings, before Redis is dialled.
func TestRedisClusterExclusive(t *testing.T) {
	for _, other := range []struct{ env, value string }{
		{"NOTICES_REDIS_URL", "redis://127.0.0.1:1/0"},
		{"NOTICES_REDIS_SENTINELS", "127.0.0.1:1"},
	} {
		t.Run(other.env, func(t *testing.T) {
			t.Setenv("NOTICES_DATA_DIR", filepath.Join(t.TempDir(), "data"))
			t.Setenv("NOTICES_BACKEND", "scale")
			t.Setenv("NOTICES_REDIS_CLUSTER_URL", "redis://127.0.0.1:1?addr=127.0.0.1:2")
			t.Setenv("NOTICES_REDIS_MASTER", map[bool]string{true: "noticesd"}[other.env == "NOTICES_REDIS_SENTINELS"])
			t.Setenv(other.env, other.value)
			var stdout, stderr bytes.Buffer
			code := run([]string{"accounts", "list"}, &stdout, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), "NOTICES_REDIS_CLUSTER_URL and "+other.env+" are both set") {
				t.Fatalf("exit %d, stderr %q; want %d naming NOTICES_REDIS_CLUSTER_URL and %s", code, stderr.String(), exitUsage, other.env)
			}
		})
	}
}
