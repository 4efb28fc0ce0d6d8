package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/testservers"
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

// TestRedisProbeOnCluster: on a Redis Cluster, the store check of /health
// and /ready PINGs the master holding the namespace's keys, every time
// (the cluster client alone sends a keyless PING to the next master in
// turn), and the AOF warning names the masters without appendonly.
func TestRedisProbeOnCluster(t *testing.T) {
	st, cfg, _ := openClusterScale(t)
	ctx := context.Background()
	owner, err := redisstore.MasterFor(ctx, st.Client(), keyspace.Prefix(cfg.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	pings := func() map[string]int64 {
		return testservers.CommandCalls(t, st.Client().(*redis.ClusterClient), "ping")
	}
	probe := redisProbe(st, keyspace.Prefix(cfg.Namespace))
	before := pings()
	const calls = 9
	for range calls {
		if err := probe(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for addr, n := range pings() {
		got := n - before[addr]
		if addr == owner.Options().Addr && got < calls || addr != owner.Options().Addr && got > 0 {
			t.Errorf("master %s (the namespace's: %v) answered %d of the %d probes", addr, addr == owner.Options().Addr, got, calls)
		}
	}
	var logs bytes.Buffer
	warnWithoutAOF(ctx, st.Client(), slog.New(slog.NewTextHandler(&logs, nil)))
	if !strings.Contains(logs.String(), "appendonly no") || !strings.Contains(logs.String(), "masters=") {
		t.Errorf("the test cluster runs without appendonly; want a warning naming its masters, log %q", logs.String())
	}
}
