package storetest

import (
	"cmp"
	"context"
	"fmt"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/publog"
)

// Unpublished is a notice store that does not publish what it stores (the
// SQLite store) and can read a stored notice back.
type Unpublished interface {
	store.NoticeWriter
	store.RegisterWriter
	Notice(ctx context.Context, id string) (notice.Notice, error)
}

// Publishing is an Unpublished notice store that publishes what it stores
// on Log, as the Elasticsearch store does: the notice store scale mode's
// write path (redisstore.Ingest) takes, over SQLite in tests.
type Publishing struct {
	Unpublished
	Log *publog.Log
}

// StartNotices is UpsertNotices answered by wait (redisstore.StoredWriter).
func (p Publishing) StartNotices(ctx context.Context, batch []notice.Notice) (wait func() (store.UpsertResult, error)) {
	r, err := p.UpsertNotices(ctx, batch)
	return func() (store.UpsertResult, error) { return r, err }
}

// UpsertNotices stores the batch, reads each notice back and publishes
// them, all under the writer lease, as the notice store hands seqs out
// when it stores: a writer publishing a later seq before another's stored
// one would raise Published past a notice arrival matching has not seen,
// and a matches poller would step over it (TestIngestPublishesInSeqOrder).
func (p Publishing) UpsertNotices(ctx context.Context, batch []notice.Notice) (store.UpsertResult, error) {
	le, err := p.Log.Acquire(ctx)
	if err != nil {
		return store.UpsertResult{}, err
	}
	r, err := p.Unpublished.UpsertNotices(ctx, batch)
	stored := make([]notice.Notice, len(batch))
	for i := 0; i < len(batch) && err == nil; i++ {
		stored[i], err = p.Notice(ctx, cmp.Or(batch[i].ID, notice.IDFor(batch[i].SourceID)))
	}
	if err == nil {
		err = publishStored(ctx, le, stored)
	}
	le.Release(ctx, err == nil)
	return r, err
}

// PublishStored publishes on log, as new notices under the writer lease,
// notices an Unpublished store has stored (seqs set).
func PublishStored(ctx context.Context, log *publog.Log, ns []notice.Notice) error {
	le, err := log.Acquire(ctx)
	if err != nil {
		return err
	}
	err = publishStored(ctx, le, ns)
	le.Release(ctx, err == nil)
	return err
}

// publishStored publishes ns as new notices under le.
func publishStored(ctx context.Context, le *publog.Lease, ns []notice.Notice) error {
	var through int64
	kinds := make([]publog.Kind, len(ns))
	for i := range ns {
		if ns[i].Seq <= 0 {
			return fmt.Errorf("storetest: publish notice %s: it has no notice_seq; publish notices as stored", ns[i].ID)
		}
		kinds[i] = publog.KindNew
		through = max(through, ns[i].Seq)
	}
	return le.Publish(ctx, ns, kinds, through)
}
