package api

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/secretbox"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/testservers"
)

// scaleWatches makes newWatchFixture wire scale mode's watch backend: the
// Redis store (accounts, watches, screen) over a live Redis, with the
// fixture's SQLite store as its notice source. Set only by
// TestWatchesScaleMode, which runs the watch and match tests again.
var scaleWatches bool

// scaleRedisURL, when set, is the Redis scaleStores uses instead of
// testservers.Redis (TestAcknowledgedWriteIsOnReplica: a primary with a
// replica).
var scaleRedisURL string

// TestWatchesScaleMode runs the API tests of watches and POST /v1/match
// against the Redis backend: the same requests must give the same answers
// as with the embedded store.
func TestWatchesScaleMode(t *testing.T) {
	testservers.Redis(t)
	scaleWatches = true
	defer func() { scaleWatches = false }()
	for _, c := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"WatchCreate", TestWatchCreate},
		{"WatchCreateValidation", TestWatchCreateValidation},
		{"WatchQuota", TestWatchQuota},
		{"WatchConcurrentCreates", TestWatchConcurrentCreates},
		{"WatchAccess", TestWatchAccess},
		{"WatchIsolation", TestWatchIsolation},
		{"WatchPatch", TestWatchPatch},
		{"WatchDelete", TestWatchDelete},
		{"WatchMatches", TestWatchMatches},
		{"WatchMatchesPolling", TestWatchMatchesPolling},
		{"Screen", TestScreen},
		{"ScreenValidation", TestScreenValidation},
		{"ScreenLimits", TestScreenLimits},
		{"ScreenCSV", TestScreenCSV},
		{"ScreenCSVValidation", TestScreenCSVValidation},
		{"ScreenCSVFormulas", TestScreenCSVFormulas},
		{"ScreenCSVJoinBack", TestScreenCSVJoinBack},
		{"ScreenCSVQueryFilters", TestScreenCSVQueryFilters},
		{"CSVByteOrderMark", TestCSVByteOrderMark},
		{"ScreenClient", TestScreenClient},
		{"ScreenClientRetryAfter", TestScreenClientRetryAfter},
		{"PythonScreenExample", TestPythonScreenExample},
		{"LongIDShortError", TestLongIDShortError},
	} {
		t.Run(c.name, c.run)
	}
}

// scaleStores builds the Redis store over a fresh namespace for the seeded
// fixture f: its notices and register recorded in Redis, and its accounts
// re-created there (f's keys are replaced by the Redis ones).
func scaleStores(t *testing.T, f *fixture) (store.Watches, store.Accounts, store.NoticeWriter) {
	t.Helper()
	rs, rdb, ns := scaleRedisStore(t, f)
	return rs, rs, redisstore.Ingest{Notices: storetest.Publishing{Unpublished: f.store, Log: publog.New(rdb, ns, publog.Options{})}, Redis: rs}
}

// scaleRedisStore is scaleStores's Redis store, with its client and
// namespace (for a limit.Redis beside it, as cmd/noticesd wires them).
func scaleRedisStore(t *testing.T, f *fixture) (*redisstore.Store, redis.UniversalClient, string) {
	t.Helper()
	ctx := context.Background()
	url := scaleRedisURL
	if url == "" {
		url = testservers.Redis(t)
	}
	rdb, err := redisstore.Dial(config.Config{RedisURL: url})
	if err != nil {
		t.Fatal(err)
	}
	ns := testservers.Namespace(t)
	t.Cleanup(func() {
		for _, pattern := range []string{ns + ":*", keyspace.Prefix(ns) + "*", "{" + ns + ":a:*"} {
			iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
			for iter.Next(ctx) {
				rdb.Unlink(ctx, iter.Val())
			}
		}
		rdb.Close()
	})
	box, err := secretbox.New(bytes.Repeat([]byte{7}, secretbox.KeySize), nil) // webhook secrets sealed at rest
	if err != nil {
		t.Fatal(err)
	}
	rs, err := redisstore.New(rdb, ns, f.store, redisstore.Options{Plans: testPlans(), Clock: func() time.Time { return fixedNow }, Secrets: box})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := f.store.NoticesAfter(ctx, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := storetest.PublishStored(ctx, publog.New(rdb, ns, publog.Options{}), stored); err != nil {
		t.Fatal(err)
	}
	var rows []notice.RegisterRow
	readJSON(t, "testdata/register.json", &rows)
	load, err := rs.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := load.Add(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := load.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	active, err := rs.CreateAccount(ctx, "Active Co", "standard")
	if err != nil {
		t.Fatal(err)
	}
	lapsed, err := rs.CreateAccount(ctx, "Lapsed Co", "free")
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.SetSubscription(ctx, lapsed.AccountID, false); err != nil {
		t.Fatal(err)
	}
	f.read, f.acct = active.ReadKey, active.AccountKey
	f.lapsedRead, f.lapsedAcct = lapsed.ReadKey, lapsed.AccountKey
	return rs, rdb, ns
}

// TestScaleModeRedisDown: with the watch backend's Redis unreachable, a
// request answers 503 backend_unavailable in the SPEC error shape, fast.
func TestScaleModeRedisDown(t *testing.T) {
	testservers.Redis(t)
	f := newFixture(t)
	rdb, err := redisstore.Dial(config.Config{RedisURL: "redis://127.0.0.1:1/0"}) // nothing listens on port 1
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	rs, err := redisstore.New(rdb, "down", f.store, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = New(config.Default(), Deps{Notices: f.store, Accounts: rs, Watches: rs, Now: func() time.Time { return fixedNow },
		Logger: slog.New(slog.NewTextHandler(f.logs, nil))})
	r := f.do(t, "GET", "/v1/watches", "nk_acct_0000")
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	if r.status != 503 || body.Error.Code != "backend_unavailable" || body.Error.Message == "" {
		t.Errorf("status %d, body %s; want 503 backend_unavailable", r.status, r.body)
	}
	if got := r.header.Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After %q, want 2 on a 503 backend_unavailable", got)
	}
}
