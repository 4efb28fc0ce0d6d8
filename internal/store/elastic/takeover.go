package elastic

import (
	"context"
	"math"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/mappings"
)

// takeOver publishes what writers before le left written but unpublished
// (le.Dirty), from one search after a refresh (which documents it takes:
// docs/elasticsearch.md, "Takeover"). Publishing one again is harmless.
func (s *Store) takeOver(ctx context.Context, le *publog.Lease) error {
	if err := s.refresh(ctx, s.Alias(mappings.Notices)); err != nil {
		return err
	}
	should := []obj{{"range": obj{"notice_seq": obj{"gt": le.Published}}}}
	if le.Dirty.Epoch > 0 {
		since := le.Dirty.Since.Add(-writeGrace).UnixMilli()
		should = append(should, obj{"range": obj{"indexed_at": obj{"gte": since}}})
	}
	body := obj{"query": obj{"bool": obj{"should": should, "minimum_should_match": 1}},
		"sort": sortSeqAsc, "_source": noticeSource, "version": true}
	var ns []notice.Notice
	var kinds []publog.Kind
	err := pages(ctx, s, s.Alias(mappings.Notices), body, math.MaxInt, nil, func(hs []hitOf[noticeDoc]) error {
		for _, h := range hs {
			n := h.Source.notice()
			switch {
			case n.Seq > le.Published:
				ns, kinds = append(ns, n), append(kinds, publog.KindNew)
			case le.Dirty.Epoch > 0 && h.Version >= le.Dirty.Epoch:
				ns, kinds = append(ns, n), append(kinds, publog.KindAmended)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return le.Publish(ctx, ns, kinds, le.Allocated)
}
