package elastic

import (
	"context"
	"fmt"
	"strconv"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/mappings"
)

// seqChunk is the most seqs or identifiers one terms query carries (the
// server's default limit is 65,536).
const seqChunk = 10000

// LatestSeq is the highest notice_seq published (publog): every notice
// published at or below it is searchable. With NoticesAfter, NoticesBySeq
// and MatchingSeqs it makes the store the Redis backend's notice source.
func (s *Store) LatestSeq(ctx context.Context) (int64, error) { return s.Published(ctx) }

// Published returns the highest notice_seq published.
func (s *Store) Published(ctx context.Context) (int64, error) { return s.log.Published(ctx) }

// NoticesBySeq returns the notices with the given seqs in that order; a
// seq no notice has is left out.
func (s *Store) NoticesBySeq(ctx context.Context, seqs []int64) ([]notice.Notice, error) {
	bySeq := make(map[int64]notice.Notice, len(seqs))
	for start := 0; start < len(seqs); start += seqChunk {
		part := seqs[start:min(start+seqChunk, len(seqs))]
		ns, err := s.scanNotices(ctx, obj{"terms": obj{"notice_seq": part}}, sortSeqAsc, len(part))
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			bySeq[n.Seq] = n
		}
	}
	out := make([]notice.Notice, 0, len(seqs))
	for _, seq := range seqs {
		if n, ok := bySeq[seq]; ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// MatchingSeqs returns up to limit seqs in (after, through], ascending, of
// the notices passing f whose acn or abn is one of keys; with keys nil, of
// every notice passing f (a filter-only watch). Keys are split into terms
// queries of at most seqChunk values.
func (s *Store) MatchingSeqs(ctx context.Context, keys []string, f notice.Filter, after, through int64, limit int) ([]int64, error) {
	if limit <= 0 || through <= after || (keys != nil && len(keys) == 0) {
		return []int64{}, nil
	}
	fq, err := s.filterQuery(ctx, f)
	if err != nil {
		return nil, err
	}
	filter := []obj{fq, {"range": obj{"notice_seq": obj{"gt": after, "lte": through}}}}
	if keys != nil {
		var should []obj
		for start := 0; start < len(keys); start += seqChunk {
			part := keys[start:min(start+seqChunk, len(keys))]
			should = append(should, obj{"terms": obj{"acn": part}}, obj{"terms": obj{"abn": part}})
		}
		filter = append(filter, obj{"bool": obj{"should": should, "minimum_should_match": 1}})
	}
	body := obj{"query": obj{"bool": obj{"filter": filter}}, "sort": sortSeqAsc, "_source": false}
	out := make([]int64, 0, min(limit, 1024))
	err = s.pages(ctx, s.Alias(mappings.Notices), body, limit, func(hs []hit) error {
		for _, h := range hs {
			if len(h.Sort) == 0 {
				return fmt.Errorf("elastic: matching seqs: a hit without its sort value")
			}
			seq, err := sortInt(h.Sort[0])
			if err != nil {
				return err
			}
			out = append(out, seq)
		}
		return nil
	})
	return out, err
}

// sortInt reads a long sort value as decoded from JSON.
func sortInt(v any) (int64, error) {
	switch x := v.(type) {
	case float64:
		return int64(x), nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	default:
		return 0, fmt.Errorf("elastic: unexpected sort value %v (%T)", v, v)
	}
}
