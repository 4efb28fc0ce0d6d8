package redisstore

import (
	"context"
	"fmt"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/publog"
)

// Redis keeps nothing per notice for the bulk screen: the publish script
// (package publog) appends each published notice's summary to the publish
// log, and each replica's screen copy (screencopy.go) loads the summaries
// from the notice source and then follows the log.

// PublishStored publishes notices a notice store has stored (seqs set) but
// does not publish itself, under the writer lease, as new notices: for a
// notice store other than Elasticsearch (the SQLite store, as tests use
// it). The Elasticsearch store publishes what it writes.
func (s *Store) PublishStored(ctx context.Context, ns []notice.Notice) error {
	le, err := s.log.Acquire(ctx)
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
			return fmt.Errorf("redisstore: publish notice %s: it has no notice_seq; publish notices as stored", ns[i].ID)
		}
		kinds[i] = publog.KindNew
		through = max(through, ns[i].Seq)
	}
	return le.Publish(ctx, ns, kinds, through)
}

// Log returns the namespace's writer lease and publish log.
func (s *Store) Log() *publog.Log { return s.log }
