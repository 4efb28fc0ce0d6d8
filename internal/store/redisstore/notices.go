package redisstore

import (
	"context"
	"fmt"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/publog"
)

// The notice side of the bulk screen, kept by the publish script (package
// publog) in the step that publishes each notice:
//
//	nidx     hash acn or abn value -> the comma-joined seqs of the notices
//	         carrying it
//	nsum     hash seq -> the notice's summary (publog.EncodeSummary): what
//	         the screen's filters and its latest_notice need
//
// A screen reads nidx and nsum with a few HMGETs of 10,000 fields each, or
// answers from the replica's in-memory copy (screencopy.go), which follows
// the publish log.

// PublishStored publishes notices a notice store has stored (seqs set) but
// does not publish itself, under the writer lease, as new notices: for a
// notice store other than Elasticsearch (the SQLite store, as tests use
// it). The Elasticsearch store publishes what it writes.
func (s *Store) PublishStored(ctx context.Context, ns []notice.Notice) error {
	le, err := s.log.Acquire(ctx)
	if err != nil {
		return err
	}
	var through int64
	kinds := make([]publog.Kind, len(ns))
	for i := range ns {
		if ns[i].Seq <= 0 {
			le.Release(ctx, true)
			return fmt.Errorf("redisstore: publish notice %s: it has no notice_seq; publish notices as stored", ns[i].ID)
		}
		kinds[i] = publog.KindNew
		through = max(through, ns[i].Seq)
	}
	if err := le.Publish(ctx, ns, kinds, through); err != nil {
		return err
	}
	le.Release(ctx, true)
	return nil
}

// Log returns the namespace's writer lease and publish log.
func (s *Store) Log() *publog.Log { return s.log }
