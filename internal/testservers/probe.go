package testservers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"
	"github.com/redis/go-redis/v9"
)

func esClient(url string) (*elasticsearch.Client, error) {
	return elasticsearch.NewClient(elasticsearch.Config{Addresses: []string{url}})
}

// esDo performs req and decodes a 2xx JSON answer into out (when not nil).
func esDo(ctx context.Context, es *elasticsearch.Client, req esapi.Request, out any) error {
	res, err := req.Do(ctx, es)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.IsError() {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return fmt.Errorf("%s: %s", res.Status(), strings.TrimSpace(string(body)))
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		return nil
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// probeElasticsearch waits (up to a second) for yellow cluster health and
// returns the node's version. (The test zip has no GET /: that lives in the
// rest-root module, so the version comes from _cat/nodes.)
func probeElasticsearch(ctx context.Context, url string) (string, error) {
	es, err := esClient(url)
	if err != nil {
		return "", err
	}
	var health struct {
		Status string `json:"status"`
	}
	err = esDo(ctx, es, esapi.ClusterHealthRequest{WaitForStatus: "yellow", Timeout: time.Second}, &health)
	if err != nil {
		return "", fmt.Errorf("cluster health: %w", err)
	}
	if health.Status != "yellow" && health.Status != "green" {
		return "", fmt.Errorf("cluster health is %q", health.Status)
	}
	var nodes []struct {
		Version string `json:"version"`
	}
	if err := esDo(ctx, es, esapi.CatNodesRequest{H: []string{"version"}, Format: "json"}, &nodes); err != nil {
		return "", fmt.Errorf("version: %w", err)
	}
	if len(nodes) == 0 || nodes[0].Version == "" {
		return "", errors.New("version: _cat/nodes named no node")
	}
	return "Elasticsearch " + nodes[0].Version, nil
}

func redisClient(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opt), nil
}

// probeRedis returns the server's version.
func probeRedis(ctx context.Context, url string) (string, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return "", err
	}
	opt.MaxRetries, opt.DialerRetries = -1, 1 // one try: the caller retries if it wants to
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return "Redis " + v, nil
		}
	}
	return "", errors.New("INFO server named no redis_version")
}

// clean deletes what a test left under namespace ns on the servers this test
// binary has obtained: indices (with their aliases) and index templates on
// Elasticsearch, keys and asynq queue names on Redis. Failures are logged,
// not fatal: the namespace is unique, so leftovers never leak into other tests.
func clean(t testing.TB, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cleanServers(ctx, ns, cleanRedisMaxKeys); err != nil {
		t.Logf("testservers: cleaning namespace %s: %v", ns, err)
	}
}

// Drop deletes the indices, index templates and Redis keys under namespace
// ns (from Namespace) now, instead of when the test ends, and fails t if it
// cannot: for a scratch namespace whose data must not stay on the servers
// for the rest of the test, such as a benchmark's warm-up load. Unlike the
// clean-up at the end of a test, it scans a Redis keyspace of any size.
func Drop(t testing.TB, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := cleanServers(ctx, ns, 0); err != nil {
		t.Fatalf("testservers: dropping namespace %s: %v", ns, err)
	}
}

// cleanServers deletes namespace ns's data from the servers this test
// binary has obtained (cleanRedis's maxKeys), trying both whatever fails.
func cleanServers(ctx context.Context, ns string, maxKeys int64) error {
	var errs []error
	if s := esKind.resolved(); s != nil {
		if err := cleanElasticsearch(ctx, s.url, ns); err != nil {
			errs = append(errs, fmt.Errorf("on Elasticsearch: %w", err))
		}
	}
	if s := redisKind.resolved(); s != nil {
		if err := cleanRedis(ctx, s.url, ns, maxKeys); err != nil {
			errs = append(errs, fmt.Errorf("on Redis: %w", err))
		}
	}
	if s := redisClusterKind.resolved(); s != nil {
		if err := cleanRedisCluster(ctx, s.url, ns, maxKeys); err != nil {
			errs = append(errs, fmt.Errorf("on the Redis Cluster: %w", err))
		}
	}
	return errors.Join(errs...)
}

func cleanElasticsearch(ctx context.Context, url, ns string) error {
	es, err := esClient(url)
	if err != nil {
		return err
	}
	// Deleting by wildcard is refused (action.destructive_requires_name), so
	// resolve the names first.
	var found struct {
		Indices []struct {
			Name string `json:"name"`
		} `json:"indices"`
	}
	if err := esDo(ctx, es, esapi.IndicesResolveIndexRequest{Name: []string{ns + "*"}}, &found); err != nil {
		return fmt.Errorf("resolve %s*: %w", ns, err)
	}
	var names []string
	for _, ix := range found.Indices {
		names = append(names, ix.Name)
	}
	if len(names) > 0 {
		if err := esDo(ctx, es, esapi.IndicesDeleteRequest{Index: names}, nil); err != nil {
			return fmt.Errorf("delete indices %v: %w", names, err)
		}
	}
	var templates struct {
		IndexTemplates []struct {
			Name string `json:"name"`
		} `json:"index_templates"`
	}
	res, err := esapi.IndicesGetIndexTemplateRequest{Name: ns + "*"}.Do(ctx, es)
	if err != nil {
		return fmt.Errorf("index templates %s*: %w", ns, err)
	}
	defer res.Body.Close()
	// (A pattern that matches nothing answers 404 with an empty list.)
	if res.StatusCode != 404 && res.StatusCode != 200 {
		return fmt.Errorf("index templates %s*: %s", ns, res.Status())
	}
	if err := json.NewDecoder(res.Body).Decode(&templates); err != nil {
		return fmt.Errorf("index templates %s*: %w", ns, err)
	}
	for _, tpl := range templates.IndexTemplates {
		if err := esDo(ctx, es, esapi.IndicesDeleteIndexTemplateRequest{Name: tpl.Name}, nil); err != nil {
			return fmt.Errorf("delete index template %s: %w", tpl.Name, err)
		}
	}
	return nil
}

// cleanRedisMaxKeys bounds the keyspace cleanRedis scans: SCAN walks every
// key, and a shared development server may hold millions.
const cleanRedisMaxKeys = 100_000

// cleanRedis deletes the keys and asynq queue names of namespace ns, unless
// the keyspace holds more than maxKeys keys (0: whatever its size).
func cleanRedis(ctx context.Context, url, ns string, maxKeys int64) error {
	rdb, err := redisClient(url)
	if err != nil {
		return err
	}
	defer rdb.Close()
	return cleanRedisClient(ctx, rdb, ns, maxKeys)
}

// cleanRedisClient is cleanRedis on the server rdb is a client of.
func cleanRedisClient(ctx context.Context, rdb *redis.Client, ns string, maxKeys int64) error {
	if err := cleanRedisKeys(ctx, rdb, ns, maxKeys); err != nil {
		return err
	}
	return cleanQueueNames(ctx, rdb, ns)
}

// cleanRedisKeys deletes the keys of namespace ns on the server rdb is a
// client of (one master of a cluster: the keys it holds).
func cleanRedisKeys(ctx context.Context, rdb *redis.Client, ns string, maxKeys int64) error {
	if n, err := rdb.DBSize(ctx).Result(); err != nil || (maxKeys > 0 && n > maxKeys) {
		return err // too big to scan per test; the namespace keeps the keys apart anyway
	}
	// Keys start with the namespace; asynq's keys hold the queue name
	// (asynq:{ns...}:pending), so match it anywhere.
	iter := rdb.Scan(ctx, 0, "*"+ns+"*", 10_000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			if err := unlinkEach(ctx, rdb, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	if len(batch) > 0 {
		return unlinkEach(ctx, rdb, batch)
	}
	return nil
}

// unlinkEach unlinks keys one a command, in one pipeline: on a cluster
// master, a namespace's keys are under several hash tags (the namespace's
// and its accounts'), and one UNLINK of keys of several slots is refused.
func unlinkEach(ctx context.Context, rdb *redis.Client, keys []string) error {
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Unlink(ctx, k)
		}
		return nil
	})
	return err
}

// cleanQueueNames removes namespace ns's queues from asynq's set of queue
// names.
func cleanQueueNames(ctx context.Context, rdb redis.Cmdable, ns string) error {
	queues, err := rdb.SMembers(ctx, "asynq:queues").Result()
	if err != nil {
		return err
	}
	for _, q := range queues {
		if strings.HasPrefix(q, ns) {
			if err := rdb.SRem(ctx, "asynq:queues", q).Err(); err != nil {
				return err
			}
		}
	}
	return nil
}
