package redisstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"

	"noticesd/internal/notice"
	"noticesd/internal/store"
	"noticesd/internal/store/sqlite"
	"noticesd/internal/store/storetest"
	"noticesd/internal/testservers"
)

// composite is scale mode's write path in miniature: notices stored in a
// real notice store (SQLite here, Elasticsearch in production) and recorded
// in the Redis identifier sets; register loads written to both.
type composite struct {
	notices *sqlite.Store
	rs      *Store
}

// UpsertNotices stores the batch, then records the stored notices (with
// their seqs) in Redis, as the scale-mode ingester does.
func (c composite) UpsertNotices(ctx context.Context, batch []notice.Notice) (store.UpsertResult, error) {
	r, err := c.notices.UpsertNotices(ctx, batch)
	if err != nil {
		return r, err
	}
	stored := make([]notice.Notice, 0, len(batch))
	for _, n := range batch {
		got, err := c.notices.Notice(ctx, n.ID)
		if err != nil {
			return r, err
		}
		stored = append(stored, got)
	}
	return r, c.rs.RecordNotices(ctx, stored)
}

// BeginRegister starts a register load on both stores.
func (c composite) BeginRegister(ctx context.Context) (store.RegisterLoad, error) {
	a, err := c.notices.BeginRegister(ctx)
	if err != nil {
		return nil, err
	}
	b, err := c.rs.BeginRegister(ctx)
	if err != nil {
		a.Rollback()
		return nil, err
	}
	return bothLoads{a, b}, nil
}

type bothLoads struct {
	a store.RegisterLoad
	b *RegisterLoad
}

func (l bothLoads) Add(ctx context.Context, rows []notice.RegisterRow) error {
	if err := l.a.Add(ctx, rows); err != nil {
		return err
	}
	return l.b.Add(ctx, rows)
}

func (l bothLoads) Commit(ctx context.Context) error {
	if err := l.a.Commit(ctx); err != nil {
		l.b.Rollback()
		return err
	}
	return l.b.Commit(ctx)
}

func (l bothLoads) Rollback() error {
	err := l.a.Rollback()
	if e := l.b.Rollback(); err == nil {
		err = e
	}
	return err
}

// redisClient returns a client on the test Redis.
func redisClient(t testing.TB) *redis.Client {
	t.Helper()
	rdb, err := Dial(testservers.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// dropNamespace removes every key of a namespace.
func dropNamespace(t testing.TB, rdb *redis.Client, ns string) {
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, ns+":*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 1000 {
			rdb.Unlink(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		rdb.Unlink(ctx, keys...)
	}
}

// fixture is a Redis store over a fresh namespace composed with a fresh
// SQLite notice store.
type fixture struct {
	rs      *Store
	notices *sqlite.Store
	rdb     *redis.Client
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
	rs, err := New(rdb, ns, sq, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropNamespace(t, rdb, ns) })
	return fixture{rs: rs, notices: sq, rdb: rdb, ns: ns, clock: clock}
}

func (f fixture) backend() storetest.WatchBackend {
	c := composite{notices: f.notices, rs: f.rs}
	return storetest.WatchBackend{
		Backend:  storetest.Backend{Notices: f.notices, Writer: c, Register: c, Clock: f.clock},
		Watches:  f.rs,
		Accounts: f.rs,
	}
}
