package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/store/redisstore/layouttest"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestMigrateKeys: `noticesd migrate-keys` on a namespace written by the
// store of the tagged layout (on one Redis and on a cluster) prints its
// progress and a summary by family, moves the account hashes to their
// own tags and marks the namespace sharded; a second run says there is
// nothing to move. A wrong setting exits 2, a Redis that does not answer 1.
// (redisstore's TestMigrateTaggedLayout checks every key's new name.)
func TestMigrateKeys(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ setting, url string }{
		{"NOTICES_REDIS_URL", testservers.Redis(t)},
		{"NOTICES_REDIS_CLUSTER_URL", testservers.RedisCluster(t)},
	} {
		t.Run(c.setting, func(t *testing.T) {
			ns := testservers.Namespace(t)
			t.Setenv("NOTICES_BACKEND", "scale")
			t.Setenv("NOTICES_ELASTICSEARCH_URL", testservers.Elasticsearch(t))
			t.Setenv(c.setting, c.url)
			t.Setenv("NOTICES_NAMESPACE", ns)
			cfg, err := config.FromEnv()
			if err != nil {
				t.Fatal(err)
			}
			rdb, err := redisstore.Dial(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			defer dropAllTags(t, rdb, ns)
			fx := layouttest.Load(t, rdb, ns, layouttest.Tagged)

			var stdout, stderr bytes.Buffer
			if code := run([]string{"migrate-keys"}, &stdout, &stderr); code != 0 {
				t.Fatalf("migrate-keys: exit %d\n%s%s", code, stdout.String(), stderr.String())
			}
			families := "account watch lists 6, accounts 4, api keys 8, delete leases 1, deletes under way 4, deliveries 6, " +
				"delivery queues 13, heavy slots (deleted) 1, mail 2, mail queues 1, match logs 3, rate buckets (deleted) 1, " +
				"register identifier sets 3, shared watch sets (deleted) 3, watch directory 4, watches 9"
			if want := "now in the sharded layout; 69 keys, entries and members: " + families; !strings.Contains(stdout.String(), want) {
				t.Errorf("stdout %q lacks %q", stdout.String(), want)
			}
			// A line per batch that did something, the directory first.
			progress := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(progress) < 3 || !strings.HasPrefix(progress[0], "migrate-keys: watch directory ") ||
				len(slices.Compact(slices.Clone(progress))) != len(progress) || progress[len(progress)-1] != "migrate-keys: "+families {
				t.Errorf("progress on stderr: %q; want the watch directory first, each line once, the summary's counts last", stderr.String())
			}
			old, moved := keyspace.Prefix(ns)+"acct:"+fx.Expect.Alpha, keyspace.Account(ns, fx.Expect.Alpha)+"acct"
			if rdb.Exists(ctx, old).Val() != 0 || rdb.HGet(ctx, moved, "name").Val() != "Migrate Alpha" {
				t.Errorf("after migrate-keys: %s exists %d, %s name %q", old, rdb.Exists(ctx, old).Val(), moved, rdb.HGet(ctx, moved, "name").Val())
			}
			if m := rdb.Get(ctx, keyspace.Prefix(ns)+"layout").Val(); m != "sharded" {
				t.Errorf("layout mark %q", m)
			}
			stdout.Reset()
			if code := run([]string{"migrate-keys", "--quiet"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "already in the sharded layout, nothing to move") {
				t.Errorf("second migrate-keys: exit %d, %q", code, stdout.String())
			}
		})
	}
	t.Run("errors", func(t *testing.T) {
		t.Setenv("NOTICES_BACKEND", "scale")
		t.Setenv("NOTICES_ELASTICSEARCH_URL", testservers.Elasticsearch(t))
		t.Setenv("NOTICES_NAMESPACE", testservers.Namespace(t))
		t.Setenv("NOTICES_REDIS_URL", "redis://127.0.0.1:1/0")
		t.Setenv("NOTICES_REDIS_CLUSTER_URL", "redis://127.0.0.1:2")
		for _, c := range []struct {
			name, unset string
			code        int
			inStderr    string
		}{
			{"both Redis settings", "", 2, "NOTICES_REDIS_CLUSTER_URL"},
			{"no Redis answers", "NOTICES_REDIS_CLUSTER_URL", 1, "NOTICES_REDIS_URL"},
		} {
			if c.unset != "" {
				t.Setenv(c.unset, "")
			}
			var stdout, stderr bytes.Buffer
			if code := run([]string{"migrate-keys"}, &stdout, &stderr); code != c.code || !strings.Contains(stderr.String(), c.inStderr) {
				t.Errorf("%s: exit %d, %q; want %d naming %s", c.name, code, stderr.String(), c.code, c.inStderr)
			}
		}
	})
}

// dropAllTags deletes every key of namespace ns, under any of its tags.
func dropAllTags(t *testing.T, rdb redis.UniversalClient, ns string) {
	ctx := context.Background()
	_ = redisstore.ForEachMaster(ctx, rdb, func(ctx context.Context, m *redis.Client) error {
		for _, p := range []string{"{" + ns + "}:*", "{" + ns + ":*"} {
			iter := m.Scan(ctx, 0, p, 1000).Iterator()
			for iter.Next(ctx) {
				m.Del(ctx, iter.Val())
			}
		}
		return nil
	})
}
