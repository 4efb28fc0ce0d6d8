package testservers

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"
	"github.com/redis/go-redis/v9"
)

func TestNamespaceIsUniqueAndSafe(t *testing.T) {
	safe := regexp.MustCompile(`^t-[a-z0-9-]+-[0-9a-f]{8}$`)
	seen := map[string]bool{}
	for _, name := range []string{"Plain", "With Spaces/And_Symbols!", strings.Repeat("Long", 30)} {
		t.Run(name, func(t *testing.T) {
			for i := 0; i < 3; i++ {
				ns := Namespace(t)
				if !safe.MatchString(ns) || len(ns) > 2+40+1+8 {
					t.Fatalf("Namespace = %q: not a safe index prefix", ns)
				}
				if seen[ns] {
					t.Fatalf("Namespace %q handed out twice", ns)
				}
				seen[ns] = true
			}
		})
	}
}

// A URL that was set but does not answer is an error naming the variable,
// not a reason to look elsewhere.
func TestEnvURLThatDoesNotAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, k := range []*kind{
		{name: "Elasticsearch", envVar: "NOTICES_TEST_ELASTICSEARCH_URL", probe: probeElasticsearch},
		{name: "Redis", envVar: "NOTICES_TEST_REDIS_URL", probe: probeRedis},
	} {
		t.Run(k.name, func(t *testing.T) {
			scheme := map[string]string{"Elasticsearch": "http://", "Redis": "redis://"}[k.name]
			_, err := k.fromEnv(scheme + addr)
			if err == nil || !strings.Contains(err.Error(), k.envVar+"="+scheme+addr+" does not answer") {
				t.Fatalf("fromEnv(dead URL) error = %v", err)
			}
		})
	}
}

// Without an engine the Docker probe fails, so that the local fallback runs;
// an engine that accepts but never answers is given up after the timeout.
func TestDockerProbeWithoutEngine(t *testing.T) {
	t.Run("no socket", func(t *testing.T) {
		t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "docker.sock"))
		start := time.Now()
		if _, err := probeDocker(dockerProbeTimeout); err == nil {
			t.Fatal("probeDocker found an engine behind a socket that does not exist")
		}
		t.Logf("probe failed after %s", time.Since(start))
	})
	t.Run("silent engine", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() { // accept, then say nothing
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		t.Setenv("DOCKER_HOST", "tcp://"+ln.Addr().String())
		start := time.Now()
		if _, err := probeDocker(200 * time.Millisecond); err == nil {
			t.Fatal("probeDocker took a silent listener for an engine")
		}
		t.Logf("probe gave up after %s", time.Since(start))
	})
}

// What a test leaves under its namespace is deleted when it ends.
func TestNamespaceCleanup(t *testing.T) {
	es, rdb := liveClients(t)
	ctx := context.Background()
	var ns string
	t.Run("leaves data behind", func(t *testing.T) {
		ns = Namespace(t)
		esMust(t, es, esapi.IndicesCreateRequest{Index: ns + "-a", Body: strings.NewReader(noticeMapping)}, nil)
		esMust(t, es, esapi.IndicesCreateRequest{Index: ns + "-b", Body: strings.NewReader(noticeMapping)}, nil)
		esMust(t, es, esapi.IndicesPutAliasRequest{Index: []string{ns + "-a"}, Name: ns + "-alias"}, nil)
		for _, k := range []string{ns + ":k", "asynq:{" + ns + ":q}:pending"} {
			if err := rdb.Set(ctx, k, "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := rdb.SAdd(ctx, "asynq:queues", ns+":q").Err(); err != nil {
			t.Fatal(err)
		}
	})
	res, err := es.Indices.Exists([]string{ns + "-a"})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("index %s-a still exists after its test ended (HEAD: %s)", ns, res.Status())
	}
	if n := rdb.DBSize(ctx).Val(); n > cleanRedisMaxKeys {
		t.Logf("Redis holds %d keys, more than cleanup scans: its Redis half is not checked here", n)
		rdb.Del(ctx, ns+":k", "asynq:{"+ns+":q}:pending")
		rdb.SRem(ctx, "asynq:queues", ns+":q")
		return
	}
	if keys := rdb.Keys(ctx, "*"+ns+"*").Val(); len(keys) != 0 {
		t.Errorf("keys left after the test ended: %v", keys)
	}
	if rdb.SIsMember(ctx, "asynq:queues", ns+":q").Val() {
		t.Errorf("asynq queue %s:q still registered", ns)
	}
}

// Drop deletes a namespace's data at once, while its test still runs,
// whatever the size of the Redis keyspace.
func TestDrop(t *testing.T) {
	es, rdb := liveClients(t)
	ctx := context.Background()
	ns, other := Namespace(t), Namespace(t)
	for _, n := range []string{ns, other} {
		esMust(t, es, esapi.IndicesCreateRequest{Index: n + "-a", Body: strings.NewReader(noticeMapping)}, nil)
		if err := rdb.Set(ctx, n+":k", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// More keys than the end-of-test clean-up scans, under the other
	// namespace (dropped below, so they do not outlive the test).
	pairs := make([]any, 0, 2000)
	for i := 0; i <= cleanRedisMaxKeys; i++ {
		pairs = append(pairs, fmt.Sprintf("%s:fill:%d", other, i), "1")
		if len(pairs) == cap(pairs) || i == cleanRedisMaxKeys {
			if err := rdb.MSet(ctx, pairs...).Err(); err != nil {
				t.Fatal(err)
			}
			pairs = pairs[:0]
		}
	}
	Drop(t, ns)
	for _, c := range []struct {
		ns   string
		want int // HEAD status of the index
	}{{ns, 404}, {other, 200}} {
		res, err := es.Indices.Exists([]string{c.ns + "-a"})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("index %s-a: HEAD %s after Drop(%s), want %d", c.ns, res.Status(), ns, c.want)
		}
	}
	if n := rdb.Exists(ctx, ns+":k").Val(); n != 0 {
		t.Errorf("key %s:k still there after Drop", ns)
	}
	if n := rdb.Exists(ctx, other+":k").Val(); n != 1 {
		t.Errorf("key %s:k of another namespace gone after Drop(%s)", other, ns)
	}
	Drop(t, other)
	if n := rdb.Exists(ctx, other+":k", other+":fill:0", fmt.Sprintf("%s:fill:%d", other, cleanRedisMaxKeys)).Val(); n != 0 {
		t.Errorf("%d of %s's keys still there after Drop", n, other)
	}
}

// liveClients are clients of the test's Elasticsearch and Redis (closed when
// the test ends).
func liveClients(t *testing.T) (*elasticsearch.Client, *redis.Client) {
	t.Helper()
	es, err := esClient(Elasticsearch(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := redisClient(Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return es, rdb
}
