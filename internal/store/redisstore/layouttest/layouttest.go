// Package layouttest loads namespaces frozen in an older Redis key layout
// (internal/store/redisstore/testdata/layout-*.json, each written once by
// the store of that layout, never by a later one) for the tests of the
// migration to the current layout.
package layouttest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/notice"
)

// Fixture is a namespace frozen in an older layout: its keys, "{NS}" in
// their names standing for the namespace, and the reads it must answer.
type Fixture struct {
	Keys   []Key  `json:"keys"`
	Expect Expect `json:"expect"`
}

// Key is one key: its type, time to live (0 none) and value, each
// string base64 when Base64 says so.
type Key struct {
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

// Expect is what the fixture's namespace answered when it was
// written: its plaintext keys (valid false: rotated away), accounts, each
// account's watches and each watch's deliveries ("<id> <status>", newest
// first), the notices as stored (the notice source holds them, not
// Redis), the register rows, and a screen of IDs.
type Expect struct {
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

// Tagged is the namespace of the tagged layout (every key under "{ns}:",
// before issue 53 sharded it by account).
const Tagged = "layout-tagged.json"

// Load writes the keys of fixture file (Tagged) into namespace ns and
// returns the fixture.
func Load(t testing.TB, rdb redis.UniversalClient, ns, file string) Fixture {
	t.Helper()
	ctx := context.Background()
	_, self, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var fx Fixture
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
