package testservers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// RedisCluster returns a Redis Cluster URL in go-redis's cluster form
// (redis://host:port?addr=host:port&addr=host:port, for
// NOTICES_REDIS_CLUSTER_URL) of a running cluster of 3 masters, each with
// one replica: NOTICES_TEST_REDIS_CLUSTER_URL when set (`make test` starts
// one through scripts/services.sh), else one started for this test binary
// by scripts/services.sh (no Docker image makes one). Without one, t fails
// under CI=true and is skipped loudly otherwise, as Redis is.
func RedisCluster(t testing.TB) string {
	t.Helper()
	return redisClusterKind.url(t)
}

var redisClusterKind = &kind{
	name: "Redis Cluster", envVar: "NOTICES_TEST_REDIS_CLUSTER_URL",
	probe: probeRedisCluster,
	// docker is nil: no Docker image is used for a Redis Cluster, even
	// under make test-deploy; it is started as local processes.
	local: func(ctx context.Context) (*server, error) { return localStart(ctx, "redis-cluster", probeRedisCluster) },
}

// probeRedisCluster checks that the cluster at url is ok on every master
// and returns the servers' version.
func probeRedisCluster(ctx context.Context, url string) (string, error) {
	rdb, err := redisClusterClient(url)
	if err != nil {
		return "", err
	}
	defer rdb.Close()
	var mu sync.Mutex
	var version string
	masters := 0
	err = rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		info, err := m.Info(ctx, "server", "cluster").Result()
		if err != nil {
			return fmt.Errorf("%s: %w", m.Options().Addr, err)
		}
		state, err := m.ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(state, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state is not ok (%v)", m.Options().Addr, err)
		}
		mu.Lock()
		defer mu.Unlock()
		masters++
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				version = v
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Redis Cluster %s (%d masters)", version, masters), nil
}

func redisClusterClient(url string) (*redis.ClusterClient, error) {
	opt, err := redis.ParseClusterURL(url)
	if err != nil {
		return nil, err
	}
	return redis.NewClusterClient(opt), nil
}

// cleanRedisCluster deletes namespace ns's keys and asynq queue names from
// every master of the cluster at url.
func cleanRedisCluster(ctx context.Context, url, ns string, maxKeys int64) error {
	rdb, err := redisClusterClient(url)
	if err != nil {
		return err
	}
	defer rdb.Close()
	err = rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return cleanRedisKeys(ctx, m, ns, maxKeys)
	})
	if err != nil {
		return err
	}
	return cleanQueueNames(ctx, rdb, ns)
}

// CommandCalls is how many times each master of the Redis Cluster rdb is a
// client of has run the command name (INFO commandstats, cmdstat_<name>
// calls), by address: to see where the client sent a command.
func CommandCalls(tb testing.TB, rdb *redis.ClusterClient, name string) map[string]int64 {
	tb.Helper()
	var mu sync.Mutex
	out := map[string]int64{}
	err := rdb.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		info, err := m.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		var n int64
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+name+":calls="); ok {
				n, _ = strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			}
		}
		mu.Lock()
		out[m.Options().Addr] = n
		mu.Unlock()
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
