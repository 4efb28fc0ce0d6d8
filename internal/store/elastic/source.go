package elastic

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/mappings"
)

// seqChunk is the most seqs or identifiers a terms query carries (the
// server's limit: 65,536).
const seqChunk = 10000

// LatestSeq returns the highest notice_seq published: every notice at or
// below it is searchable (redisstore.NoticeSource).
func (s *Store) LatestSeq(ctx context.Context) (int64, error) { return s.cfg.Log.Published(ctx) }

// NoticesBySeq returns the notices with the given seqs in that order; a
// seq no notice has is left out.
func (s *Store) NoticesBySeq(ctx context.Context, seqs []int64) ([]notice.Notice, error) {
	bySeq := make(map[int64]notice.Notice, len(seqs))
	for part := range slices.Chunk(seqs, seqChunk) {
		ns, err := s.scanNotices(ctx, obj{"terms": obj{"notice_seq": part}}, sortSeqAsc, len(part), nil)
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
// the notices passing f whose acn or abn is one of keys (keys nil: every
// notice passing f, for a filter-only watch).
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
		for part := range slices.Chunk(keys, seqChunk) {
			should = append(should, obj{"terms": obj{"acn": part}}, obj{"terms": obj{"abn": part}})
		}
		filter = append(filter, obj{"bool": obj{"should": should, "minimum_should_match": 1}})
	}
	body := obj{"query": obj{"bool": obj{"filter": filter}}, "sort": sortSeqAsc, "_source": false}
	out := make([]int64, 0, min(limit, 1024))
	err = pages(ctx, s, s.Alias(mappings.Notices), body, limit, nil, func(hs []hit) error {
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

// summaryFields are the fields the screen copy keeps (publog.EncodeSummary).
var summaryFields = []string{"notice.id", "notice.notice_seq", "notice.published_date", "notice.published_at",
	"notice.notice_type", "notice.notice_code", "notice.notice_purpose", "notice.appointment_type",
	"notice.state", "notice.status", "notice.acn", "notice.abn", "notice.company_name"}

// summaryPage is how many notices one step of NoticeSummaries reads (tests
// set it lower).
var summaryPage = 10000

// NoticeSummaries calls fn with every notice whose notice_seq is at most
// through, ascending, holding only summaryFields (the screen copy's load),
// from one point in time: a notice written meanwhile is seen whole or not
// at all. fn must copy what it keeps.
func (s *Store) NoticeSummaries(ctx context.Context, through int64, fn func(*notice.Notice) error) error {
	pit, err := s.openPIT(ctx, "the screen copy's load")
	if err != nil {
		return err
	}
	c := &cursor[noticeDoc]{s: s, pit: pit, size: summaryPage, max: math.MaxInt,
		body: obj{"query": obj{"range": obj{"notice_seq": obj{"lte": through}}}, "sort": sortSeqAsc, "_source": summaryFields}}
	defer c.close()
	return c.each(ctx, func(hs []hitOf[noticeDoc]) error {
		for i := range hs {
			if err := fn(&hs[i].Source.Notice); err != nil {
				return err
			}
		}
		return nil
	})
}

// CarriedIdentifiers returns which of ids (ACNs or ABNs) some stored
// notice carries as its acn or abn.
func (s *Store) CarriedIdentifiers(ctx context.Context, ids []string) (map[string]bool, error) {
	out := make(map[string]bool)
	for part := range slices.Chunk(ids, seqChunk) {
		agg := func(field string) obj {
			return obj{"terms": obj{"field": field, "include": part, "size": len(part)}}
		}
		body := obj{"size": 0, "track_total_hits": false,
			"query": obj{"bool": obj{"should": []obj{{"terms": obj{"acn": part}}, {"terms": obj{"abn": part}}}, "minimum_should_match": 1}},
			"aggs":  obj{"acn": agg("acn"), "abn": agg("abn")}}
		var ans aggsPage
		if err := s.searchRead(ctx, "/"+s.Alias(mappings.Notices)+"/_search", body, &ans); err != nil {
			return nil, err
		}
		for _, a := range ans.Aggregations {
			for _, b := range a.Buckets {
				out[bucketKey(b.Key, b.KeyAsString)] = true
			}
		}
	}
	return out, nil
}
