package redisstore

import (
	"cmp"
	"context"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/keyspace"
)

// shardedState is what namespace ns holds once an upgrade moved the keys
// it held before (their values and times to live) to the sharded layout,
// written out here, apart from layoutRules (docs/redis.md, "Upgrading to
// the sharded layout"). A watch's keys go under its account (its w:<id>'s
// account field, or an unfinished delete's trash:<id>:acct), named in the
// directory wacct; the shared queues are split by the account of each
// member's watch (a member of a watch with no account, or of a mail job
// gone, is dropped), and each account with a member in a queue of a wake
// set is noted there at its earliest one.
func shardedState(t *testing.T, ns string, before map[string]keyState) map[string]keyState {
	t.Helper()
	p := keyspace.Prefix(ns)
	under := func(acct, rest string) string { return "{" + ns + ":a:" + acct + "}:" + rest }
	acctOf := map[string]string{} // watch -> account
	for k, s := range before {
		switch parts := strings.Split(strings.TrimPrefix(k, p), ":"); {
		case len(parts) == 2 && parts[0] == "w":
			acctOf[parts[1]] = s.value.(map[string]string)["account"]
		case len(parts) == 3 && parts[0] == "trash" && parts[2] == "acct":
			acctOf[parts[1]] = s.value.(string)
		}
	}
	ownerOf := func(rest, m string) string { // the account of a shared queue's member
		switch rest {
		case "dq", "ddue", "dlease":
			return acctOf[strings.Split(m, "|")[0]]
		case "mq", "mdead":
			job, ok := before[p+"mail:"+m]
			if !ok {
				return ""
			}
			return acctOf[job.value.(map[string]string)["watch"]]
		}
		return acctOf[m]
	}
	out := map[string]keyState{}
	wakes := map[string]map[string]float64{}
	put := func(k string, s keyState) {
		if was, ok := out[k]; ok && !reflect.DeepEqual(was.value, s.value) {
			t.Fatalf("two keys of the old layout go to %s: %v and %v", k, was.value, s.value)
		}
		out[k] = s
	}
	for k, s := range before {
		rest, ok := strings.CutPrefix(k, p)
		if !ok {
			put(k, s)
			continue
		}
		parts := strings.Split(rest, ":")
		switch family := parts[0]; {
		case len(parts) == 2 && family == "acct" && parts[1] != "seq" && parts[1] != "lapsed":
			put(under(parts[1], "acct"), s)
		case len(parts) == 3 && family == "acct" && (parts[2] == "watches" || parts[2] == "companies"):
			put(under(parts[1], parts[2]), s)
		case len(parts) == 2 && family == "apikey":
			acct := s.value.(map[string]string)["account"]
			if acct == "" {
				t.Fatalf("%s has no account", k)
			}
			put(k, s)
			put(under(acct, rest), s)
		case len(parts) == 4 && family == "reg" && parts[2] == "ids":
			b, err := strconv.Atoi(parts[3])
			if err != nil {
				t.Fatal(err)
			}
			put("{"+ns+":g"+strconv.Itoa(b%64)+"}:"+rest, s)
		case strings.HasPrefix(rest, "limit:rate:"), strings.HasPrefix(rest, "limit:heavy:"),
			rest == "watches", rest == "winactive", rest == "dstat",
			family == "stage", family == "trash" && len(parts) == 3 && parts[2] == "acct":
			// deleted
		case slices.Contains([]string{"w", "wm", "dr", "dl", "df", "mpd"}, family) && len(parts) <= 3,
			family == "trash" && len(parts) == 3:
			acct := acctOf[parts[1]]
			if acct == "" {
				t.Fatalf("%s: its watch has no account", k)
			}
			put(under(acct, rest), s)
		case family == "mail":
			if acct := acctOf[s.value.(map[string]string)["watch"]]; acct != "" {
				put(under(acct, rest), s)
			}
		case slices.Contains([]string{"dq", "ddue", "dlease", "wpend", "trash", "mq", "mdead"}, rest):
			split := map[string][]redis.Z{}
			for _, z := range s.value.([]redis.Z) {
				acct := ownerOf(rest, z.Member.(string))
				if acct == "" {
					continue
				}
				split[acct] = append(split[acct], z)
				if slices.Contains([]string{"dq", "dlease", "mq", "wpend", "trash"}, rest) {
					if wakes[rest] == nil {
						wakes[rest] = map[string]float64{}
					}
					if at, ok := wakes[rest][acct]; !ok || z.Score < at {
						wakes[rest][acct] = z.Score
					}
				}
			}
			for acct, zs := range split {
				put(under(acct, rest), keyState{zs, -1})
			}
		case rest == "wrel":
			split := map[string][]string{}
			for _, m := range s.value.([]string) {
				if acct := ownerOf(rest, m); acct != "" {
					split[acct] = append(split[acct], m)
				}
			}
			for acct, ms := range split {
				put(under(acct, rest), keyState{ms, -1})
			}
		case rest == "wdeact":
			split := map[string]map[string]string{}
			for f, v := range s.value.(map[string]string) {
				if acct := ownerOf(rest, f); acct != "" {
					if split[acct] == nil {
						split[acct] = map[string]string{}
					}
					split[acct][f] = v
				}
			}
			for acct, h := range split {
				put(under(acct, rest), keyState{h, -1})
			}
		default:
			put(k, s)
		}
	}
	if len(acctOf) > 0 {
		put(p+"wacct", keyState{acctOf, -1})
	}
	for q, accts := range wakes {
		var zs []redis.Z
		for acct, at := range accts {
			zs = append(zs, redis.Z{Score: at, Member: acct})
		}
		slices.SortFunc(zs, func(a, b redis.Z) int {
			return cmp.Or(cmp.Compare(a.Score, b.Score), strings.Compare(a.Member.(string), b.Member.(string)))
		})
		put(p+"wake:"+q, keyState{zs, -1})
	}
	return out
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
