package redisstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/secretbox"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/sqlite"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/internal/watch"
)

// composite is the Ingest write path over the fixture's SQLite notice store.
type composite struct {
	notices *sqlite.Store
	rs      *Store
}

func (c composite) ingest() Ingest {
	return Ingest{Notices: storetest.Publishing{Unpublished: c.notices, Log: c.rs.log}, Redis: c.rs}
}

// UpsertNotices goes through Ingest.
func (c composite) UpsertNotices(ctx context.Context, batch []notice.Notice) (store.UpsertResult, error) {
	return c.ingest().UpsertNotices(ctx, batch)
}

// BeginRegister goes through Ingest.
func (c composite) BeginRegister(ctx context.Context) (store.RegisterLoad, error) {
	return c.ingest().BeginRegister(ctx)
}

// liveTarget, when set, is the Redis the fixtures use instead of
// testservers.Redis (TestSecuredRedis: TLS and an ACL user).
var liveTarget *config.Config

// suite is a live test, run by name as a subtest.
type suite struct {
	name string
	run  func(*testing.T)
}

// runOn runs suites as subtests of t with every fixture connected to
// target (liveTarget).
func runOn(t *testing.T, target config.Config, suites ...suite) {
	liveTarget = &target
	defer func() { liveTarget = nil }()
	for _, s := range suites {
		t.Run(s.name, s.run)
	}
}

// redisClient returns a client on the test Redis.
func redisClient(t testing.TB) redis.UniversalClient {
	t.Helper()
	target := liveTarget
	if target == nil {
		target = &config.Config{RedisURL: testservers.Redis(t)}
	}
	rdb, err := Dial(*target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// dropNamespace removes every key of a namespace (the publish log's keys
// are under {ns}:, each account's under {ns:a:<id>}:), on every master of
// a Redis Cluster.
func dropNamespace(t testing.TB, rdb redis.UniversalClient, ns string) {
	if ns[0] != '{' {
		dropNamespace(t, rdb, "{"+ns+"}")
		dropKeys(rdb, "{"+ns+":*")
	}
	dropKeys(rdb, ns+":*")
}

// dropKeys unlinks the keys matching pattern on every master, one command
// a key (keys of several slots may match).
func dropKeys(rdb redis.UniversalClient, pattern string) {
	ctx := context.Background()
	_ = ForEachMaster(ctx, rdb, func(ctx context.Context, m *redis.Client) error {
		iter := m.Scan(ctx, 0, pattern, 1000).Iterator()
		p := m.Pipeline()
		for iter.Next(ctx) {
			p.Unlink(ctx, iter.Val())
			if p.Len() == 1000 {
				_, _ = p.Exec(ctx)
			}
		}
		_, _ = p.Exec(ctx)
		return nil
	})
}

// fixture is a Redis store over a fresh namespace composed with a fresh
// SQLite notice store.
type fixture struct {
	rs      *Store
	notices *sqlite.Store
	rdb     redis.UniversalClient
	ns      string
	clock   *storetest.Clock
}

func newFixture(t testing.TB, o Options) fixture {
	t.Helper()
	rdb := redisClient(t)
	ns := testservers.Namespace(t)
	clock := storetest.NewClock(storetest.Start)
	sq, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "notices.db"), sqlite.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	if o.Clock == nil {
		o.Clock = clock.Now
	}
	if o.Secrets == nil {
		o.Secrets = testBox(t)
	}
	rs, err := New(rdb, ns, sq, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropNamespace(t, rdb, ns) })
	if o.ScreenCopy {
		// Every screen of a fixture keeping the register copy is answered
		// from it (backend and screen go through copyScreens).
		t.Cleanup(func() {
			if _, fromRedis := rs.ScreenCopy().Counts(); fromRedis > 0 {
				t.Errorf("%d screens read Redis instead of the waiting in-memory copy", fromRedis)
			}
		})
	}
	return fixture{rs: rs, notices: sq, rdb: rdb, ns: ns, clock: clock}
}

func (f fixture) backend() storetest.WatchBackend {
	c := composite{notices: f.notices, rs: f.rs}
	var w store.Watches = f.rs
	if f.rs.screenCopy.keepReg {
		w = copyScreens{f.rs}
	}
	return storetest.WatchBackend{
		Backend:  storetest.Backend{Notices: f.notices, Writer: c, Register: c, Clock: f.clock},
		Watches:  w,
		Accounts: f.rs,
	}
}

// screen is the fixture store's Screen, through copyScreens when it keeps
// the register copy (copyOptions).
func (f fixture) screen(ctx context.Context, ids []ident.ID, flt notice.Filter) (watch.ScreenResult, error) {
	if f.rs.screenCopy.keepReg {
		return copyScreens{f.rs}.Screen(ctx, ids, flt)
	}
	return f.rs.Screen(ctx, ids, flt)
}

// copyScreens is a store whose screens first bring its in-memory copy up
// to date, as a serve replica's loader does within a second of a change,
// so that each is answered from the copy.
type copyScreens struct{ *Store }

// Screen refreshes the copy (the notices and the register), then screens.
func (c copyScreens) Screen(ctx context.Context, ids []ident.ID, flt notice.Filter) (watch.ScreenResult, error) {
	if _, _, err := c.screenCopy.refresh(ctx); err != nil {
		return watch.ScreenResult{}, err
	}
	return c.Store.Screen(ctx, ids, flt)
}

// testBox is a secret box under a fixed test key.
func testBox(t testing.TB) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(bytes.Repeat([]byte{7}, 32), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// copyOptions are the options of a store keeping the register copy; a
// fixture's screens then answer from it (copyScreens).
var copyOptions = Options{ScreenCopy: true}

// forScreenModes runs test with the screen reading Redis and with it
// answering from the in-memory copy.
func forScreenModes(t *testing.T, test func(t *testing.T, o Options)) {
	t.Run("redis", func(t *testing.T) { test(t, Options{}) })
	t.Run("copy", func(t *testing.T) { test(t, copyOptions) })
}

// hook registers a webhook on the watch, so its matches are owed
// deliveries.
func (f fixture) hook(t testing.TB, accountID, watchID string) {
	t.Helper()
	if _, err := f.rs.SetWebhook(context.Background(), accountID, watchID, "https://hooks.example.com/"+watchID, "whsec_test", f.clock.Now()); err != nil {
		t.Fatal(err)
	}
}

// deliveredPairs counts the delivery records of each (watch, notice_seq)
// pair of the watches, keyed "<watch>/<seq>".
func deliveredPairs(t testing.TB, f fixture, watchIDs ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, id := range watchIDs {
		for _, r := range recordsOf(t, f, id) {
			out[fmt.Sprint(id, "/", r.NoticeSeq)]++
		}
	}
	return out
}

// recordsOf reads every delivery record of the watch.
func recordsOf(t testing.TB, f fixture, watchID string) []delivery.Record {
	t.Helper()
	recs, err := f.rdb.HVals(context.Background(), f.wkey(t, recordsKey, watchID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]delivery.Record, len(recs))
	for i, raw := range recs {
		if err := json.Unmarshal([]byte(raw), &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// wkey is the key of a watch's family (w, dr, wm...) under its account,
// which the directory must name.
func (f fixture) wkey(t testing.TB, family, watchID string, parts ...string) string {
	t.Helper()
	a, err := f.rs.accountOf(context.Background(), watchID)
	if err != nil || a == "" {
		t.Fatalf("the directory names no account of watch %s (%v)", watchID, err)
	}
	return f.rs.akey(a, append([]string{family, watchID}, parts...)...)
}
