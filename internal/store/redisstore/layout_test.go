package redisstore

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/keyspace"
)

// shardedNames is where the sharded layout keeps key k of namespace ns
// (written out here, apart from layoutRules): its names, none when it is
// deleted; an API key's hash is read from rdb (its account field).
func shardedNames(t *testing.T, rdb redis.UniversalClient, ns, k string) []string {
	rest := strings.TrimPrefix(k, keyspace.Prefix(ns))
	parts := strings.Split(rest, ":")
	switch {
	case len(parts) == 2 && parts[0] == "acct" && parts[1] != "seq" && parts[1] != "lapsed":
		return []string{"{" + ns + ":a:" + parts[1] + "}:acct"}
	case len(parts) == 2 && parts[0] == "apikey":
		acct := rdb.HGet(context.Background(), k, "account").Val()
		if acct == "" {
			t.Fatalf("%s has no account", k)
		}
		return []string{k, "{" + ns + ":a:" + acct + "}:" + rest}
	case len(parts) == 4 && parts[0] == "reg" && parts[2] == "ids":
		b, err := strconv.Atoi(parts[3])
		if err != nil {
			t.Fatal(err)
		}
		return []string{"{" + ns + ":g" + strconv.Itoa(b%64) + "}:" + rest}
	case strings.HasPrefix(rest, "limit:rate:"), strings.HasPrefix(rest, "limit:heavy:"):
		return nil
	}
	return []string{k}
}

// keyState is a key's value (typedValue) and time to live.
type keyState struct {
	value any
	ttl   time.Duration
}

// snapshot reads every key of keys.
func snapshot(t *testing.T, rdb redis.UniversalClient, keys []string) map[string]keyState {
	t.Helper()
	ctx := context.Background()
	out := map[string]keyState{}
	for _, k := range keys {
		v, err := typedValue(ctx, rdb, k)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = keyState{v, rdb.PTTL(ctx, k).Val()}
	}
	return out
}

// namespaceKeys lists every key of namespace ns, under any of its tags, on
// every master.
func namespaceKeys(t *testing.T, rdb redis.UniversalClient, ns string) []string {
	t.Helper()
	var out []string
	for _, p := range []string{keyspace.Prefix(ns), "{" + ns + ":", keyspace.OldPrefix(ns)} {
		if err := scanKeys(context.Background(), rdb, globEscape(p)+"*", 1000, func(keys []string) error {
			out = append(out, keys...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
