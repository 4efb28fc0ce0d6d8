package elastic

import (
	"context"
	"testing"

	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/mappings"
)

func TestNoticesContract(t *testing.T) {
	storetest.RunNotices(t, func(t *testing.T) storetest.Backend {
		clock := storetest.NewClock(storetest.Start)
		s := openTest(t, clock.Now)
		return storetest.Backend{Notices: s, Writer: s, Register: s, Clock: clock}
	})
}

// TestNoticesContractTwoShards runs the notice contract on indices of two
// primary shards (the mapping files have one): totals, aggregations,
// paging and relevance must not depend on how documents are spread over
// shards (docs/elasticsearch.md, "One primary shard each").
func TestNoticesContractTwoShards(t *testing.T) {
	storetest.RunNotices(t, func(t *testing.T) storetest.Backend {
		clock := storetest.NewClock(storetest.Start)
		esURL, rdb, ns := testservers.Elasticsearch(t), testRedis(t), testservers.Namespace(t)
		// A store whose indices are dropped and made again with two shards
		// under the same names and aliases; the store under test finds
		// them when it opens.
		pre, err := Open(context.Background(), Config{URL: esURL, Namespace: ns, Log: publog.New(rdb, ns, publog.Options{})})
		if err != nil {
			t.Fatal(err)
		}
		if err := pre.Drop(context.Background()); err != nil {
			t.Fatal(err)
		}
		all, err := mappings.All()
		if err != nil {
			t.Fatal(err)
		}
		for _, ix := range all {
			if err := pre.createIndex(context.Background(), ix, pre.indexName(ix, "0"), pre.Alias(ix.Kind), map[string]any{"number_of_shards": 2}); err != nil {
				t.Fatal(err)
			}
		}
		s := openIn(t, esURL, rdb, ns, clock.Now)
		var settings map[string]struct {
			Settings struct {
				Index struct {
					Shards string `json:"number_of_shards"`
				} `json:"index"`
			} `json:"settings"`
		}
		if err := s.do(context.Background(), s.timeout, "GET", "/"+s.Alias(mappings.Notices)+"/_settings", nil, &settings); err != nil {
			t.Fatal(err)
		}
		for name, ix := range settings {
			if ix.Settings.Index.Shards != "2" {
				t.Fatalf("%s has %s shards, want 2", name, ix.Settings.Index.Shards)
			}
		}
		if len(settings) != 1 {
			t.Fatalf("the notices alias points to %d indices", len(settings))
		}
		return storetest.Backend{Notices: s, Writer: s, Register: s, Clock: clock}
	})
}
