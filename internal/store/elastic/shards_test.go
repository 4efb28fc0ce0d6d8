//go:build sqlite_fts5

package elastic

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/sample"
	"github.com/noticesd/noticesd/mappings"
)

// shardFailMappings map, in an index added behind each alias, the fields the
// reads sort, aggregate and filter on so that every read fails on that
// index's shard and succeeds on the other: text fields cannot be sorted or
// aggregated (fielddata is off), and dereg:false is no date. Elasticsearch
// answers such a search 200 with the other shard's hits and _shards.failed
// 1: a partial answer, as when a shard is lost.
var shardFailMappings = map[string]obj{
	mappings.Notices: {"properties": obj{
		"published_date": obj{"type": "text"}, "published_at": obj{"type": "text"}, "notice_seq": obj{"type": "text"},
		"appointment_type": obj{"type": "text"}, "notice_purpose": obj{"type": "text"}, "notice_code": obj{"type": "text"},
		"state": obj{"type": "text"}, "status": obj{"type": "text"}, "acn": obj{"type": "keyword"}, "abn": obj{"type": "keyword"},
		"dereg": obj{"type": "date", "format": "yyyy-MM-dd"},
	}},
	mappings.Register: {"properties": obj{"row": obj{"type": "text"}, "acn": obj{"type": "keyword"}, "abn": obj{"type": "keyword"}}},
}

// addFailingShard puts behind the alias of kind a second index (one shard,
// one document) on which every read of the store fails (shardFailMappings).
func addFailingShard(t *testing.T, s *Store, kind string, doc obj) {
	t.Helper()
	ctx := context.Background()
	name := s.cfg.Namespace + "-" + kind + "-v0-shardfail" // under the namespace's pattern, so Drop deletes it
	if err := s.do(ctx, s.bulkTimeout, http.MethodPut, "/"+name, obj{
		"settings": obj{"number_of_shards": 1, "number_of_replicas": 0}, "mappings": shardFailMappings[kind]}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.do(ctx, s.timeout, http.MethodPost, "/"+name+"/_doc?refresh=true", doc, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.do(ctx, s.timeout, http.MethodPost, "/_aliases", obj{"actions": []obj{
		{"add": obj{"index": name, "alias": s.Alias(kind)}}}}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestReadsRefusePartialResults: when a shard fails, every search-type read
// (the searches and their totals, filters and stats aggregations, the
// company view, an export's count and pages, the arrival reads, the index
// status) fails with backend_unavailable instead of answering without that
// shard's notices. Each read answers in full before the failing shard is
// added.
func TestReadsRefusePartialResults(t *testing.T) {
	ctx := context.Background()
	files, err := sample.WriteFiles(sample.Options{Notices: 200, Companies: 100, Seed: 5,
		Now: time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC), Years: 1}, filepath.Join(t.TempDir(), "sample"))
	if err != nil {
		t.Fatal(err)
	}
	s := openTest(t, func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) })
	if _, err := ingest.Notices(ctx, s, []string{files.Notices}, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Register(ctx, s, files.Register, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	page, err := s.Search(ctx, notice.SearchQuery{Filter: notice.Filter{IncludeDeregistration: true}, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	var acn, abn string
	for _, n := range page.Notices {
		if n.ACN != nil && n.ABN != nil {
			acn, abn = *n.ACN, *n.ABN
			break
		}
	}
	if acn == "" {
		t.Fatal("no sample notice has both an ACN and an ABN")
	}
	word, err := query.Parse("liquidator")
	if err != nil {
		t.Fatal(err)
	}
	export := func(q notice.SearchQuery) error {
		exp, err := s.ExportNotices(ctx, q, 1000)
		if err != nil {
			return err
		}
		defer exp.Close()
		_, err = exp.Next(ctx)
		return err
	}
	reads := []struct {
		name string
		read func() error
	}{
		{"search", func() error { _, err := s.Search(ctx, notice.SearchQuery{Limit: 20}); return err }},
		{"search relevance", func() error {
			_, err := s.Search(ctx, notice.SearchQuery{Filter: notice.Filter{Q: word}, Sort: notice.SortRelevance, Limit: 20})
			return err
		}},
		{"search by company", func() error {
			_, err := s.Search(ctx, notice.SearchQuery{Filter: notice.Filter{Company: &ident.ID{Kind: ident.ACN, Value: acn}}, Limit: 20})
			return err
		}},
		{"filters", func() error { _, err := s.Filters(ctx, notice.Filter{}); return err }},
		{"stats by month", func() error {
			_, err := s.Stats(ctx, notice.StatsQuery{Filter: notice.Filter{From: "2025-01-01", To: "2026-12-31"}, GroupBy: "month"})
			return err
		}},
		{"stats by state", func() error { _, err := s.Stats(ctx, notice.StatsQuery{GroupBy: "state"}); return err }},
		{"company by ACN", func() error { _, err := s.Company(ctx, ident.ID{Kind: ident.ACN, Value: acn}); return err }},
		{"company by ABN", func() error { _, err := s.Company(ctx, ident.ID{Kind: ident.ABN, Value: abn}); return err }},
		{"export", func() error { return export(notice.SearchQuery{}) }},
		{"export of every notice", func() error {
			return export(notice.SearchQuery{Filter: notice.Filter{IncludeDeregistration: true}})
		}},
		{"notices after", func() error { _, err := s.NoticesAfter(ctx, 0, 1000); return err }},
		{"index status", func() error { _, err := s.IndexStatus(ctx); return err }},
	}
	for _, r := range reads {
		if err := r.read(); err != nil {
			t.Fatalf("%s before a shard fails: %v", r.name, err)
		}
	}
	addFailingShard(t, s, mappings.Notices, obj{"published_date": "2026-01-01", "dereg": "2026-01-01", "state": "NSW"})
	addFailingShard(t, s, mappings.Register, obj{"row": "1", "acn": acn})
	s.aggs = nil // the answers kept before the shard failed would hide it
	for _, r := range reads {
		t.Run(r.name, func(t *testing.T) {
			if err := r.read(); !errs.Is(err, errs.BackendUnavailable) {
				t.Fatalf("err %v, want %s", err, errs.BackendUnavailable)
			}
		})
	}
	// The reads ask for no partial results, so Elasticsearch refuses them;
	// an answer that is partial all the same (a search or a _count, which
	// takes no such parameter) is refused by its _shards.
	answers := []struct {
		name, path string
		body       obj
	}{
		{"search answered in part", "/" + s.Alias(mappings.Notices) + "/_search", obj{"sort": sortPublishedDesc}},
		{"count answered in part", "/" + s.Alias(mappings.Notices) + "/_count", obj{"query": obj{"term": obj{"dereg": false}}}},
	}
	for _, a := range answers {
		t.Run(a.name, func(t *testing.T) {
			var ans shardStatus
			if err := s.do(ctx, s.timeout, http.MethodPost, a.path, a.body, &ans); err != nil {
				t.Fatal(err)
			}
			if err := ans.complete(); !errs.Is(err, errs.BackendUnavailable) || !strings.Contains(err.Error(), "1 of 2 shards failed") {
				t.Fatalf("err %v, want %s saying 1 of 2 shards failed", err, errs.BackendUnavailable)
			}
		})
	}
}
