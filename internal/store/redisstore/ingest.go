package redisstore

import (
	"cmp"
	"context"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// Ingest is scale mode's write path (store.NoticeWriter and
// store.RegisterWriter): notices and register loads go to the notice
// store, which publishes the notices it writes (package publog), and the
// Redis store's register generation and watch match keys follow.
type Ingest struct {
	Notices StoredWriter
	Redis   *Store
}

var (
	_ store.NoticeWriter   = Ingest{}
	_ store.RegisterWriter = Ingest{}
)

// DefaultNoticeBatch is the number of notices per write call of a load in
// scale mode. Each batch is written under the writer lease, made
// searchable with one Elasticsearch refresh and then published, so larger
// batches cost the node fewer refreshes and segment merges; 20,000 loaded
// about as fast as 40,000 with half the memory (docs/benchmarks.md).
const DefaultNoticeBatch = 20000

// NoticeBatch is DefaultNoticeBatch (store.BatchSizer).
func (c Ingest) NoticeBatch() int { return DefaultNoticeBatch }

// StoredWriter is the notice side scale mode writes through (the
// Elasticsearch store): it stores register loads, and stores notices and
// publishes them. StartNotices places a batch after every batch started
// before it and returns; wait answers once it is published.
type StoredWriter interface {
	store.RegisterWriter
	StartNotices(ctx context.Context, batch []notice.Notice) (wait func() (store.UpsertResult, error))
}

// StartNotices is UpsertNotices answered by wait: a load keeps two batches
// in flight (ingest).
func (c Ingest) StartNotices(ctx context.Context, batch []notice.Notice) (wait func() (store.UpsertResult, error)) {
	return c.Notices.StartNotices(ctx, batch)
}

// UpsertNotices stores and publishes the batch. When some notices were
// refused (a *store.BatchError), the ones written are still published and
// the error returned.
func (c Ingest) UpsertNotices(ctx context.Context, batch []notice.Notice) (store.UpsertResult, error) {
	return c.Notices.StartNotices(ctx, batch)()
}

// BeginRegister starts a register load on both stores.
func (c Ingest) BeginRegister(ctx context.Context) (store.RegisterLoad, error) {
	a, err := c.Notices.BeginRegister(ctx)
	if err != nil {
		return nil, err
	}
	b, err := c.Redis.BeginRegister(ctx)
	if err != nil {
		a.Rollback()
		return nil, err
	}
	return bothLoads{a, b}, nil
}

// bothLoads is a register load on the notice store and on Redis: rows go
// to both, the notice store commits first, then Redis switches generation.
type bothLoads struct {
	a store.RegisterLoad
	b *RegisterLoad
}

// Add sends rows to both at once: Redis writes its part while the notice
// store encodes and queues its own. Both must succeed.
func (l bothLoads) Add(ctx context.Context, rows []notice.RegisterRow) error {
	redisErr := make(chan error, 1)
	go func() { redisErr <- l.b.Add(ctx, rows) }()
	err := l.a.Add(ctx, rows)
	return cmp.Or(err, <-redisErr)
}

// Commit commits the notice store's side, then Redis's. With an
// Elasticsearch load (one that names its index) a marker written first
// lets a restart finish a load whose process died between the two
// (regpending.go).
func (l bothLoads) Commit(ctx context.Context) error {
	s := l.b.s
	if ix, ok := l.a.(interface{ Index() string }); ok {
		stop, err := l.b.markPending(ctx, ix.Index())
		if err != nil {
			l.Rollback()
			return err
		}
		defer stop()
	}
	// A loader that stalled past its lease may have had its load dropped
	// (CompleteRegister): then the alias must not move.
	if l.b.marked {
		if ok, err := l.b.pending(ctx, "check"); !ok {
			l.Rollback()
			return cmp.Or(err, s.staleLoad(l.b.v))
		}
	}
	if err := l.a.Commit(ctx); err != nil {
		l.b.Rollback() // and its marker
		return err
	}
	return l.b.Commit(ctx)
}

func (l bothLoads) Rollback() error {
	return cmp.Or(l.a.Rollback(), l.b.Rollback())
}
