package redisstore

import (
	"bufio"
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
)

// keyFamilies reads testdata/keyfamilies.txt: the key patterns of a
// namespace, as docs/redis.md's key table spells them.
func keyFamilies(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("testdata/keyfamilies.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// docKeyFamilies returns the patterns in the first column of the key table
// of docs/redis.md ("| Key | Type | Holds | Bound, and who trims it |"),
// and those of its rows whose bound says they are no longer written (left
// by older versions).
func docKeyFamilies(t *testing.T) (all, retired []string) {
	t.Helper()
	b, err := os.ReadFile("../../../docs/redis.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "| Key | Type | Holds | Bound, and who trims it |")
	if i < 0 {
		t.Fatal(`docs/redis.md has no key table headed "| Key | Type | Holds | Bound, and who trims it |"`)
	}
	table, _, _ := strings.Cut(doc[i:], "\n\n")
	tick := regexp.MustCompile("`([^`]+)`")
	for _, row := range strings.Split(table, "\n")[2:] {
		first, _, _ := strings.Cut(strings.TrimPrefix(row, "| "), " | ")
		cells := strings.Split(row, " | ")
		gone := strings.Contains(cells[len(cells)-1], "no longer written")
		for _, m := range tick.FindAllStringSubmatch(first, -1) {
			p := strings.ReplaceAll(m[1], `\|`, "|")
			all = append(all, p)
			if gone {
				retired = append(retired, p)
			}
		}
	}
	return all, retired
}

// familyPattern turns a documented key pattern of namespace ns into a
// regular expression: ns for the namespace, <...> one part without ':',
// * anything.
func familyPattern(ns, p string) *regexp.Regexp {
	p = strings.ReplaceAll(strings.ReplaceAll(p, "{ns}:", "{\x00}:"), "ns:", "\x00:")
	q := regexp.QuoteMeta(p)
	q = regexp.MustCompile(`<[^>]*>`).ReplaceAllString(q, `[^:]+`)
	q = strings.ReplaceAll(q, `\*`, `.*`)
	q = strings.ReplaceAll(q, "\x00", regexp.QuoteMeta(ns))
	return regexp.MustCompile("^" + q + "$")
}

// TestKeyFamiliesDocumented: every key a representative workload leaves in
// its namespace (accounts, a register load, notices, watches, arrival
// matching, deliveries delivered, failed and dead, a deactivation and its
// alert, a delete stopped after its first step) belongs to a family of
// docs/redis.md's key table, and testdata/keyfamilies.txt lists exactly
// that table's families, so a new key family without its row (and its
// bound) fails here. No key belongs to a family the table says is no
// longer written.
func TestKeyFamiliesDocumented(t *testing.T) {
	families := keyFamilies(t)
	doc, retired := docKeyFamilies(t)
	if !slices.Equal(families, doc) {
		t.Fatalf("testdata/keyfamilies.txt and docs/redis.md's key table differ:\n fixture %q\n doc     %q", families, doc)
	}
	ctx := context.Background()
	f := newFixture(t, Options{})
	familyWorkload(t, f)

	patterns := make([]*regexp.Regexp, len(families))
	for i, p := range families {
		patterns[i] = familyPattern(f.ns, p)
	}
	seen := map[string]bool{}
	var keys []string
	for _, pat := range []string{f.ns + ":*", "{" + f.ns + "}:*", "{" + f.ns + ":*}:*"} {
		iter := f.rdb.Scan(ctx, 0, pat, 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		i := slices.IndexFunc(patterns, func(re *regexp.Regexp) bool { return re.MatchString(k) })
		if i < 0 {
			t.Errorf("key %s belongs to no family of docs/redis.md's key table: add its row, with its bound", k)
			continue
		}
		seen[families[i]] = true
		if slices.Contains(retired, families[i]) {
			t.Errorf("key %s is of %s, which docs/redis.md's key table says is no longer written", k, families[i])
		}
	}
	// The workload must reach most families, or the test says little.
	if len(seen) < 30 {
		t.Errorf("the workload left keys of only %d families: %v", len(seen), seen)
	}
	t.Logf("%d of %d documented families seen", len(seen), len(families))
}

// familyWorkload leaves keys of most families in f's namespace: accounts,
// a register load, notices, watches, arrival matching, deliveries
// delivered, failed and dead, a deactivation and its alert, a delete
// stopped after its first step.
func familyWorkload(t *testing.T, f fixture) {
	t.Helper()
	ctx := context.Background()
	storetest.Load(t, f.backend().Backend)
	accountID, watchID := f.alphaWatch(t)
	f.failDeliveries(t, accountID, watchID) // ten dead notices: deactivation, alert mail
	otherAccount, other := f.alphaWatch(t)
	f.failDeliveriesN(t, otherAccount, other, 0)
	f.deliver(t, other, "KEYS-OK", true)
	f.deliver(t, other, "KEYS-RETRY", false)
	if _, err := f.rs.MatchArrivals(ctx, 500); err != nil {
		t.Fatal(err)
	}
	plan := account.DefaultPlans()["enterprise"]
	doomed, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: append(idsOf(t, storetest.ACNAlpha),
		ident.ID{Kind: ident.ACN, Value: acn(3)})}, accountID, f.clock.Now()), plan)
	if err != nil {
		t.Fatal(err)
	}
	restore := killAt(f.rdb, after(deleteScript))
	if err := f.rs.DeleteWatch(ctx, accountID, doomed.ID); !errors.Is(err, errKilled) {
		t.Fatalf("delete: %v, want killed after its first step", err)
	}
	restore()
}

// TestKeysShareOneSlot: every key the families workload, a request's rate
// token and a held heavy slot leave for the namespace starts with its
// prefix {ns}: or an account's {ns:a:<id>}: and hashes to the one Redis
// Cluster slot of that tag, but the register's ids strings, each under the
// slot group of its number (idsKey); none is left under the old prefix
// "ns:" (or the rate buckets' old "rate:ns:").
func TestKeysShareOneSlot(t *testing.T) {
	ctx := context.Background()
	f, l, c, want := newGateFixture(t, 2, "One Slot Co")
	familyWorkload(t, f)
	_, taken, _, slot, err := f.rs.SlotGate(l)(ctx, c.ReadKey, want, "read", limit.Rate{PerSecond: 1, Burst: 5}, 1)
	if err != nil || !taken || !slot.Decision.Allowed {
		t.Fatalf("gate: taken %v, slot %+v, %v", taken, slot, err)
	}
	defer slot.Release()
	accts, err := f.rs.ListAccounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	for _, a := range accts {
		ours[keyspace.Account(f.ns, a.ID)] = true
	}

	prefix := keyspace.Prefix(f.ns)
	n, na := 0, 0
	iter := f.rdb.Scan(ctx, 0, "*"+f.ns+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if strings.HasPrefix(k, "asynq:") {
			continue // asynq's own keys, tagged by queue
		}
		n++
		tag := prefix
		if acct, _, ok := strings.Cut(strings.TrimPrefix(k, "{"+f.ns+":a:"), "}:"); ok && strings.HasPrefix(k, "{"+f.ns+":a:") {
			tag = keyspace.Account(f.ns, acct)
			if !ours[tag] {
				t.Errorf("key %s is under the tag of an account the workload did not create", k)
			}
			na++
		}
		if m := idsKeyRE.FindStringSubmatch(k); m != nil {
			if b, _ := strconv.Atoi(m[2]); k != f.rs.idsKey(m[1], uint32(b)) {
				t.Errorf("ids string %s is not in the slot group of its number: want %s", k, f.rs.idsKey(m[1], uint32(b)))
			}
		} else if !strings.HasPrefix(k, tag) {
			t.Errorf("key %s is not under %s", k, tag)
		} else if keyspace.Slot(k) != keyspace.Slot(tag) {
			t.Errorf("key %s hashes to slot %d, not its tag's %d", k, keyspace.Slot(k), keyspace.Slot(tag))
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 40 || na < 3*len(accts) {
		t.Errorf("the workload left only %d keys, %d of them accounts' (%d accounts)", n, na, len(accts))
	}
	for _, k := range append(limit.HeavyKeys(f.ns, want.Account.ID), limit.RateKey(f.ns, want.Account.ID, "read")) {
		if f.rdb.Exists(ctx, k).Val() != 1 {
			t.Errorf("%s was not written: the test did not reach the limiter's keys", k)
		}
	}
}

// idsKeyRE matches the key of an ids string: its generation and number.
var idsKeyRE = regexp.MustCompile(`^\{[^}]*\}:reg:(\d+):ids:(\d+)$`)
