package redisstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/notice"
)

// layoutFixture is a namespace frozen in an older layout
// (testdata/layout-tagged.json: written once by the store of that layout,
// never by a later one): its keys, "{NS}" in their names standing for the
// namespace, and the reads it must answer.
type layoutFixture struct {
	Keys   []layoutKey  `json:"keys"`
	Expect layoutExpect `json:"expect"`
}

// layoutKey is one key: its type, time to live (0 none) and value, each
// string base64 when Base64 says so.
type layoutKey struct {
	Key    string            `json:"key"`
	Type   string            `json:"type"`
	PTTL   int64             `json:"pttl_ms"`
	Base64 bool              `json:"base64"`
	String *string           `json:"string"`
	Hash   map[string]string `json:"hash"`
	Set    []string          `json:"set"`
	List   []string          `json:"list"`
	ZSet   []struct {
		Member string  `json:"member"`
		Score  float64 `json:"score"`
	} `json:"zset"`
	Stream []struct {
		ID     string   `json:"id"`
		Fields []string `json:"fields"`
	} `json:"stream"`
	Groups []struct {
		Name   string `json:"name"`
		LastID string `json:"last_id"`
	} `json:"groups"`
}

// layoutExpect is what the fixture's namespace answered when it was
// written: its plaintext keys (valid false: rotated away), accounts, each
// account's watches and each watch's deliveries ("<id> <status>", newest
// first), the notices as stored (the notice source holds them, not
// Redis), the register rows, and a screen of IDs.
type layoutExpect struct {
	Keys []struct {
		Key, Account, Kind string
		Valid              bool
	} `json:"keys"`
	Accounts   []account.Account    `json:"accounts"`
	Watches    map[string][]string  `json:"watches"`
	Deliveries map[string][]string  `json:"deliveries"`
	Notices    []notice.Notice      `json:"notices"`
	Register   []notice.RegisterRow `json:"register"`
	Alpha      string               `json:"alpha"`
	Screen     struct {
		IDs    []string        `json:"ids"`
		Answer json.RawMessage `json:"answer"`
	} `json:"screen"`
}

// loadLayout writes the keys of testdata/file into namespace ns and
// returns the fixture.
func loadLayout(t *testing.T, rdb redis.UniversalClient, ns, file string) layoutFixture {
	t.Helper()
	ctx := context.Background()
	b, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var fx layoutFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, k := range fx.Keys {
		name := strings.ReplaceAll(k.Key, "{NS}", "{"+ns+"}")
		dec := func(s string) string {
			if !k.Base64 {
				return s
			}
			v, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				t.Fatalf("%s: %v", k.Key, err)
			}
			return string(v)
		}
		p := rdb.TxPipeline()
		p.Del(ctx, name)
		switch k.Type {
		case "string":
			p.Set(ctx, name, dec(*k.String), 0)
		case "hash":
			for f, v := range k.Hash {
				p.HSet(ctx, name, dec(f), dec(v))
			}
		case "set":
			for _, m := range k.Set {
				p.SAdd(ctx, name, dec(m))
			}
		case "list":
			for _, m := range k.List {
				p.RPush(ctx, name, dec(m))
			}
		case "zset":
			for _, z := range k.ZSet {
				p.ZAdd(ctx, name, redis.Z{Score: z.Score, Member: dec(z.Member)})
			}
		case "stream":
			for _, e := range k.Stream {
				vals := make([]any, len(e.Fields))
				for i, f := range e.Fields {
					vals[i] = dec(f)
				}
				p.XAdd(ctx, &redis.XAddArgs{Stream: name, ID: e.ID, Values: vals})
			}
			for _, g := range k.Groups {
				p.XGroupCreateMkStream(ctx, name, g.Name, g.LastID)
			}
		default:
			t.Fatalf("%s: type %s", k.Key, k.Type)
		}
		if k.PTTL > 0 {
			p.PExpire(ctx, name, time.Duration(k.PTTL)*time.Millisecond)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("load %s: %v", name, err)
		}
	}
	return fx
}

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
