package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	gojson "github.com/goccy/go-json"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/mappings"
)

// window is Elasticsearch's max_result_window (a search pages no deeper);
// scanPage is how many hits one search_after step reads.
const window, scanPage = 10000, 1000

// Publication orders, as in the embedded store (ties on notice_seq desc).
var (
	sortPublishedDesc = []obj{{"published_date": "desc"}, {"published_at": "desc"}, {"notice_seq": "desc"}}
	sortPublishedAsc  = []obj{{"published_date": "asc"}, {"published_at": "asc"}, {"notice_seq": "desc"}}
	sortRelevance     = []obj{{"_score": "desc"}, {"notice_seq": "desc"}}
	sortSeqAsc        = []obj{{"notice_seq": "asc"}}
)

// searchPath is the _search path under prefix (an index, or "" in a point
// in time) for order: relevance is scored with the whole index's term
// statistics (dfs_query_then_fetch), whatever shard a notice is in.
func searchPath(prefix string, order []obj) string {
	if len(order) > 0 && order[0]["_score"] != nil {
		return prefix + "/_search?search_type=dfs_query_then_fetch"
	}
	return prefix + "/_search"
}

// noticeSource reads a hit's notice alone (fts and filter fields would double it).
var noticeSource = []string{"notice"}

// Search returns one page of matching notices and the exact total: one
// from/size search, inside Elasticsearch's result window (the API pages no
// deeper: api.MaxDepth equals window; deeper reads are the export's point
// in time).
func (s *Store) Search(ctx context.Context, q notice.SearchQuery) (notice.SearchPage, error) {
	order, err := sortFor(q.Sort, q.Q)
	if err != nil {
		return notice.SearchPage{}, err
	}
	limit, page := q.Limit, max(q.Page, 1)
	if limit <= 0 {
		limit = 20
	}
	query, err := s.filterQuery(ctx, q.Filter)
	if err != nil {
		return notice.SearchPage{}, err
	}
	offset := (page - 1) * limit
	if offset+limit > window {
		return notice.SearchPage{}, errs.New(errs.InvalidParameter, "result %d is past result %d, the deepest a search pages; narrow the search with filters (from, to, state, ...)", offset+limit, window)
	}
	var ans noticePage
	body := obj{"query": query, "sort": order, "track_total_hits": true, "size": limit, "from": offset, "_source": noticeSource}
	if err := s.searchRead(ctx, searchPath("/"+s.Alias(mappings.Notices), order), body, &ans); err != nil {
		return notice.SearchPage{}, err
	}
	return notice.SearchPage{Notices: notices(ans.Hits.Hits), Total: ans.Hits.Total.Value}, nil
}

// sortFor validates a sort key (relevance is published_desc unless ranked).
func sortFor(key string, q query.Node) ([]obj, error) {
	switch key {
	case notice.SortPublishedDesc, "":
		return sortPublishedDesc, nil
	case notice.SortPublishedAsc:
		return sortPublishedAsc, nil
	case notice.SortRelevance:
		if ranked(q) {
			return sortRelevance, nil
		}
		return sortPublishedDesc, nil
	}
	return nil, errs.New(errs.InvalidParameter, "sort %q is not one of %s, %s, %s", key,
		notice.SortPublishedDesc, notice.SortPublishedAsc, notice.SortRelevance)
}

func scanBody(query obj, order []obj) obj {
	return obj{"query": query, "sort": order, "_source": noticeSource}
}

// scanNotices returns the notices matching query in order (a sort ending
// on a unique field), up to max, with search_after (pages: first, if not
// nil, is the first page's answer).
func (s *Store) scanNotices(ctx context.Context, query obj, order []obj, max int, first *searchAnswer) ([]notice.Notice, error) {
	out := []notice.Notice{}
	err := pages(ctx, s, s.Alias(mappings.Notices), scanBody(query, order), max, first, func(hs []hit) error {
		for _, h := range hs {
			n, err := noticeOf(h.ID, h.Source)
			if err != nil {
				return err
			}
			out = append(out, n)
		}
		return nil
	})
	return out, err
}

// Notice returns one notice by its public id, or errs.NotFound.
func (s *Store) Notice(ctx context.Context, id string) (notice.Notice, error) {
	var ans struct { // _mget: a get refuses an alias of several indices
		Docs []struct {
			Found  bool            `json:"found"`
			Source json.RawMessage `json:"_source"`
		} `json:"docs"`
	}
	if err := s.do(ctx, s.timeout, http.MethodPost, "/"+s.Alias(mappings.Notices)+"/_mget?_source=notice",
		obj{"ids": []string{id}}, &ans); err != nil {
		return notice.Notice{}, err
	}
	if len(ans.Docs) == 0 || !ans.Docs[0].Found {
		return notice.Notice{}, errs.New(errs.NotFound, "no notice has id %s; ids look like ntc_ followed by 16 characters, as returned by search", errs.Quote(id))
	}
	return noticeOf(id, ans.Docs[0].Source)
}

// NoticesAfter returns up to limit published notices (notice_seq at most
// LatestSeq) with notice_seq > seq, ascending by notice_seq
// (deregistration notices included).
func (s *Store) NoticesAfter(ctx context.Context, seq int64, limit int) ([]notice.Notice, error) {
	wm, err := s.cfg.Log.Published(ctx)
	if err != nil {
		return nil, err
	}
	if limit <= 0 || wm <= seq {
		return []notice.Notice{}, nil
	}
	q := obj{"bool": obj{"filter": []obj{{"range": obj{"notice_seq": obj{"gt": seq, "lte": wm}}}}}}
	return s.scanNotices(ctx, q, sortSeqAsc, limit, nil)
}

// registerBody is the search registerRows pages through.
func registerBody(field, value string) obj {
	return obj{"query": obj{"term": obj{field: value}}, "sort": []obj{{"row": "asc"}}, "_source": []string{"data"}}
}

// registerRows returns the register rows whose field (acn or abn) is
// value, in file order (pages: first, if not nil, is the first page's
// answer).
func (s *Store) registerRows(ctx context.Context, field, value string, first *searchAnswer) ([]notice.RegisterRow, error) {
	var out []notice.RegisterRow
	if value == "" {
		return nil, nil
	}
	err := pages(ctx, s, s.Alias(mappings.Register), registerBody(field, value), window, first, func(hs []hit) error {
		for _, h := range hs {
			_, rows, err := registerRowsOf(h.Source, field, value)
			if err != nil {
				return fmt.Errorf("elastic: decode register document %s: %w", h.ID, err)
			}
			out = append(out, rows...)
		}
		return nil
	})
	return out, err
}

// facetFields are the filter fields, in FilterCounts order.
var facetFields = []string{"appointment_type", "notice_purpose", "notice_code", "state", "status"}

// maxBuckets sizes the terms aggregations so that every value comes back.
const maxBuckets = 10000

// termsAgg is a terms or date_histogram aggregation's answer, or a metric
// one's (max, sum: Value; missing: DocCount).
type termsAgg struct {
	Other   int64 `json:"sum_other_doc_count"`
	Buckets []struct {
		Key         json.RawMessage `json:"key"`
		KeyAsString string          `json:"key_as_string"`
		Count       int64           `json:"doc_count"`
	} `json:"buckets"`
	Value         *float64 `json:"value"`
	ValueAsString string   `json:"value_as_string"`
	DocCount      int64    `json:"doc_count"`
}

// aggsPage is a search answer with its total and its aggregations by name.
type aggsPage struct {
	noticePage
	Aggregations map[string]termsAgg `json:"aggregations"`
}

// counts sums a's buckets by key, but appointment_type's "" (none).
func (a termsAgg) counts(field string) map[string]int64 {
	m := map[string]int64{}
	for _, b := range a.Buckets {
		if k := bucketKey(b.Key, b.KeyAsString); k != "" || field != "appointment_type" {
			m[k] += b.Count
		}
	}
	return m
}

// aggregate runs one size-0 search of f with aggs.
func (s *Store) aggregate(ctx context.Context, f notice.Filter, aggs obj) (int64, map[string]termsAgg, error) {
	query, err := s.filterQuery(ctx, f)
	if err != nil {
		return 0, nil, err
	}
	var ans aggsPage
	body, err := gojson.Marshal(obj{"query": query, "size": 0, "track_total_hits": true, "aggs": aggs})
	if err != nil {
		return 0, nil, fmt.Errorf("elastic: encode an aggregation: %w", err)
	}
	version := int64(-1) // aggCache's, unknown when Redis is down
	if s.aggs != nil {
		if v, err := s.cfg.Log.DataVersion(ctx); err == nil {
			version = v
			if a, ok := s.aggs.get(v, string(body), s.cfg.Now()); ok {
				return a.total, a.aggs, nil
			}
		}
	}
	if err := s.searchRead(ctx, "/"+s.Alias(mappings.Notices)+"/_search", body, &ans); err != nil {
		return 0, nil, err
	}
	for name, a := range ans.Aggregations {
		if a.Other > 0 {
			return 0, nil, fmt.Errorf("elastic: %s has more than %d distinct values; the counts would be incomplete", name, maxBuckets)
		}
	}
	if version >= 0 {
		s.aggs.put(version, string(body), aggAnswer{total: ans.Hits.Total.Value, aggs: ans.Aggregations, at: s.cfg.Now()})
	}
	return ans.Hits.Total.Value, ans.Aggregations, nil
}

// bucketKey is a bucket's key as a string.
func bucketKey(raw json.RawMessage, asString string) string {
	if asString != "" {
		return asString
	}
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : n-1]) // a string without escapes, as keyword keys are
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// Filters counts each filter field's values among the matching notices.
func (s *Store) Filters(ctx context.Context, f notice.Filter) (notice.FilterCounts, error) {
	aggs := obj{}
	for _, fld := range facetFields {
		aggs[fld] = obj{"terms": obj{"field": fld, "size": maxBuckets}}
	}
	total, res, err := s.aggregate(ctx, f, aggs)
	if err != nil {
		return notice.FilterCounts{}, err
	}
	c := func(fld string) []notice.ValueCount { return notice.SortedCounts(res[fld].counts(fld)) }
	return notice.FilterCounts{Total: total, AppointmentType: c(facetFields[0]), NoticePurpose: c(facetFields[1]),
		NoticeCode: c(facetFields[2]), State: c(facetFields[3]), Status: c(facetFields[4])}, nil
}

// Stats counts the matching notices grouped by one field. Months are a
// date_histogram of published_date (a Sydney date, so UTC months are
// Sydney's), with extended_bounds over from..to for empty months.
func (s *Store) Stats(ctx context.Context, q notice.StatsQuery) (notice.Stats, error) {
	out := notice.Stats{GroupBy: q.GroupBy, Data: []notice.Bucket{}}
	if out.GroupBy == "" {
		out.GroupBy = "month"
	}
	var agg obj
	switch out.GroupBy {
	case "month":
		h := obj{"field": "published_date", "calendar_interval": "month", "format": "yyyy-MM", "min_doc_count": 1}
		if notice.FillsRange(q.From, q.To) {
			h["min_doc_count"] = 0
			h["extended_bounds"] = obj{"min": q.From[:7], "max": q.To[:7]}
		}
		agg = obj{"date_histogram": h}
	case "appointment_type", "notice_purpose", "state", "notice_code":
		agg = obj{"terms": obj{"field": out.GroupBy, "size": maxBuckets}}
	default:
		return notice.Stats{}, errs.New(errs.InvalidGroupBy, "group_by %q is not one of %s", q.GroupBy, strings.Join(notice.GroupByKeys, ", "))
	}
	total, res, err := s.aggregate(ctx, q.Filter, obj{"g": agg})
	if err != nil {
		return notice.Stats{}, err
	}
	out.Total = total
	if out.GroupBy == "month" { // one bucket per month, in order
		for _, b := range res["g"].Buckets {
			out.Data = append(out.Data, notice.Bucket{Key: bucketKey(b.Key, b.KeyAsString), Count: b.Count})
		}
		return out, nil
	}
	out.Data = notice.FoldedBuckets(res["g"].counts(out.GroupBy)) // by exact spelling, folded
	return out, nil
}

// IndexStatus reports the number of notices, the latest notice_seq and the
// latest published_date.
func (s *Store) IndexStatus(ctx context.Context) (notice.IndexStatus, error) {
	var ans aggsPage
	body := obj{"size": 0, "track_total_hits": true, "aggs": obj{
		"seq":  obj{"max": obj{"field": "notice_seq"}},
		"date": obj{"max": obj{"field": "published_date", "format": "yyyy-MM-dd"}},
	}}
	if err := s.searchRead(ctx, "/"+s.Alias(mappings.Notices)+"/_search", body, &ans); err != nil {
		return notice.IndexStatus{}, err
	}
	st := notice.IndexStatus{Notices: ans.Hits.Total.Value}
	if seq := ans.Aggregations["seq"]; seq.Value != nil {
		st.LatestNoticeSeq = int64(*seq.Value)
	}
	if date := ans.Aggregations["date"]; date.Value != nil && date.ValueAsString != "" {
		st.LatestPublishedDate = &date.ValueAsString
	}
	return st, nil
}
