package elastic

import (
	"bytes"
	"encoding/json"
	"testing"

	gojson "github.com/goccy/go-json"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/query"
)

// TestRequestBodiesAsEncodingJSON: request bodies are encoded with go-json
// (do, aggregate); they are the bytes encoding/json wrote, so the answer
// cache's keys and what Elasticsearch receives did not change with it.
func TestRequestBodiesAsEncodingJSON(t *testing.T) {
	q, err := query.Parse("\"voluntary <administration>\" OR liquidat* -deed & é \u2028 back\\slash")
	if err != nil {
		t.Fatal(err)
	}
	acn := "004085616"
	bodies := map[string]obj{
		"search": {"query": compileQ(q), "sort": sortPublishedDesc, "track_total_hits": true, "size": 20, "from": 0},
		"company": {"query": companyQueryWith(ident.ID{Value: acn, Kind: ident.ACN}, nil),
			"sort": sortPublishedDesc, "size": scanPage},
		"aggs": {"query": obj{"match_all": obj{}}, "size": 0, "track_total_hits": true,
			"aggs": obj{"state": obj{"terms": obj{"field": "state", "size": maxBuckets}}}},
		"raw": {"search_after": []any{int64(1732000000000), "x<y>&z", json.RawMessage(`{"b":1,"a":2}`)}, "f": 1.5e-7},
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			got, err := gojson.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("go-json differs from encoding/json:\n got %s\nwant %s", got, want)
			}
		})
	}
}
