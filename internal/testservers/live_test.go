package testservers

// Live tests that prove the harness: each talks to the real server the
// package hands out, through the client libraries the service uses.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"
	"github.com/elastic/go-elasticsearch/v8/esutil"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { Main(m) }

// fixture is a notice as the live tests index it.
type fixture struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	Kind      string    `json:"kind"`
	Published time.Time `json:"published"`
	Text      string    `json:"text"`
	Pages     int       `json:"pages"`
}

// fixtures returns n notices spread over states, kinds and six months; every
// fifth one mentions a liquidator.
func fixtures(n int) []fixture {
	states := []string{"NSW", "VIC", "QLD", "WA"}
	kinds := []string{"winding_up", "administration", "deregistration"}
	out := make([]fixture, n)
	for i := range out {
		text := "Notice of a meeting of creditors of the company"
		if i%5 == 0 {
			text = "Appointment of liquidator to the company"
		}
		out[i] = fixture{
			ID:        fmt.Sprintf("ntc_%04d", i),
			State:     states[i%len(states)],
			Kind:      kinds[i%len(kinds)],
			Published: time.Date(2026, time.Month(1+i%6), 1+i%27, 12, 0, 0, 0, time.UTC),
			Text:      text,
			Pages:     1 + i%3,
		}
	}
	return out
}

const noticeMapping = `{
  "settings": {"number_of_shards": 1, "number_of_replicas": 0},
  "mappings": {
    "dynamic": "strict",
    "properties": {
      "id":        {"type": "keyword"},
      "state":     {"type": "keyword"},
      "kind":      {"type": "keyword"},
      "published": {"type": "date"},
      "text":      {"type": "text", "analyzer": "standard"},
      "pages":     {"type": "integer"}
    }
  }
}`

func esMust(t *testing.T, es *elasticsearch.Client, req esapi.Request, out any) {
	t.Helper()
	if err := esDo(context.Background(), es, req, out); err != nil {
		t.Fatalf("%T: %v", req, err)
	}
}

func bulkIndex(t *testing.T, es *elasticsearch.Client, index string, docs []fixture) {
	t.Helper()
	var mu sync.Mutex
	var failures []string
	bi, err := esutil.NewBulkIndexer(esutil.BulkIndexerConfig{
		Client:     es,
		Index:      index,
		NumWorkers: 2,
		FlushBytes: 4 << 10, // several flushes for a few dozen documents
		Refresh:    "wait_for",
		OnError:    func(_ context.Context, err error) { mu.Lock(); failures = append(failures, err.Error()); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, d := range docs {
		body, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		err = bi.Add(ctx, esutil.BulkIndexerItem{
			Action:     "index",
			DocumentID: d.ID,
			Body:       bytes.NewReader(body),
			OnFailure: func(_ context.Context, item esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem, err error) {
				mu.Lock()
				defer mu.Unlock()
				failures = append(failures, fmt.Sprintf("%s: %v %s %s", item.DocumentID, err, res.Error.Type, res.Error.Reason))
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := bi.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st := bi.Stats()
	if len(failures) > 0 || st.NumFailed != 0 || st.NumIndexed != uint64(len(docs)) {
		t.Fatalf("bulk into %s: %d indexed of %d, %d failed: %v", index, st.NumIndexed, len(docs), st.NumFailed, failures)
	}
	if st.NumRequests < 2 {
		t.Errorf("bulk into %s used %d request(s); the small FlushBytes should have split it", index, st.NumRequests)
	}
}

type searchResult struct {
	Hits struct {
		Total struct {
			Value int `json:"value"`
		} `json:"total"`
		Hits []struct {
			ID string `json:"_id"`
		} `json:"hits"`
	} `json:"hits"`
	Aggregations struct {
		States struct {
			Buckets []struct {
				Key   string `json:"key"`
				Count int    `json:"doc_count"`
			} `json:"buckets"`
		} `json:"states"`
		Months struct {
			Buckets []struct {
				Key   string `json:"key_as_string"`
				Count int    `json:"doc_count"`
			} `json:"buckets"`
		} `json:"months"`
	} `json:"aggregations"`
}

func search(t *testing.T, es *elasticsearch.Client, index, body string) searchResult {
	t.Helper()
	var res searchResult
	esMust(t, es, esapi.SearchRequest{Index: []string{index}, Body: strings.NewReader(body)}, &res)
	return res
}

func TestElasticsearch(t *testing.T) {
	es, err := esClient(Elasticsearch(t))
	if err != nil {
		t.Fatal(err)
	}
	ns := Namespace(t)
	v1, v2, alias := ns+"-notices-v1", ns+"-notices-v2", ns+"-notices"
	docs := fixtures(60)

	esMust(t, es, esapi.IndicesCreateRequest{Index: v1, Body: strings.NewReader(noticeMapping)}, nil)
	var mapping map[string]struct {
		Mappings struct {
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
		} `json:"mappings"`
	}
	esMust(t, es, esapi.IndicesGetMappingRequest{Index: []string{v1}}, &mapping)
	if got := mapping[v1].Mappings.Properties["published"].Type; got != "date" {
		t.Fatalf("mapping of published is %q, want date", got)
	}
	bulkIndex(t, es, v1, docs)

	t.Run("search", func(t *testing.T) {
		var want []string
		for _, d := range docs { // already in (published, id) order within a month, so sort
			if strings.Contains(d.Text, "liquidator") && (d.State == "NSW" || d.State == "VIC") {
				want = append(want, d.ID)
			}
		}
		sort.Slice(want, func(i, j int) bool {
			a, b := docs[idx(want[i])], docs[idx(want[j])]
			return a.Published.Before(b.Published) || a.Published.Equal(b.Published) && a.ID < b.ID
		})
		res := search(t, es, v1, `{
		  "size": 100,
		  "query": {"bool": {
		    "must":   [{"match": {"text": "LIQUIDATOR"}}],
		    "filter": [{"terms": {"state": ["NSW", "VIC"]}}]
		  }},
		  "sort": [{"published": "asc"}, {"id": "asc"}]
		}`)
		var got []string
		for _, h := range res.Hits.Hits {
			got = append(got, h.ID)
		}
		if res.Hits.Total.Value != len(want) || !slices.Equal(got, want) || len(want) == 0 {
			t.Fatalf("search: total %d, ids %v; want %d, %v", res.Hits.Total.Value, got, len(want), want)
		}
	})

	t.Run("aggregate", func(t *testing.T) {
		wantStates := map[string]int{}
		wantMonths := map[string]int{}
		for _, d := range docs {
			wantStates[d.State]++
			wantMonths[d.Published.Format("2006-01")]++
		}
		res := search(t, es, v1, `{
		  "size": 0,
		  "aggs": {
		    "states": {"terms": {"field": "state", "size": 10}},
		    "months": {"date_histogram": {"field": "published", "calendar_interval": "month", "format": "yyyy-MM"}}
		  }
		}`)
		gotStates := map[string]int{}
		for _, b := range res.Aggregations.States.Buckets {
			gotStates[b.Key] = b.Count
		}
		gotMonths := map[string]int{}
		for _, b := range res.Aggregations.Months.Buckets {
			gotMonths[b.Key] = b.Count
		}
		if fmt.Sprint(gotStates) != fmt.Sprint(wantStates) {
			t.Errorf("terms on state: %v, want %v", gotStates, wantStates)
		}
		if fmt.Sprint(gotMonths) != fmt.Sprint(wantMonths) {
			t.Errorf("date_histogram by month: %v, want %v", gotMonths, wantMonths)
		}
	})

	t.Run("alias swap", func(t *testing.T) {
		esMust(t, es, esapi.IndicesPutAliasRequest{Index: []string{v1}, Name: alias}, nil)
		if n := search(t, es, alias, `{"size": 0, "track_total_hits": true}`).Hits.Total.Value; n != len(docs) {
			t.Fatalf("alias before the swap counts %d, want %d", n, len(docs))
		}
		esMust(t, es, esapi.IndicesCreateRequest{Index: v2, Body: strings.NewReader(noticeMapping)}, nil)
		bulkIndex(t, es, v2, docs[:10])
		// One _aliases request: readers see v1 or v2, never neither nor both.
		esMust(t, es, esapi.IndicesUpdateAliasesRequest{Body: strings.NewReader(fmt.Sprintf(`{"actions": [
		  {"remove": {"index": %q, "alias": %q}},
		  {"add":    {"index": %q, "alias": %q}}
		]}`, v1, alias, v2, alias))}, nil)
		var holders map[string]any
		esMust(t, es, esapi.IndicesGetAliasRequest{Name: []string{alias}}, &holders)
		if len(holders) != 1 || holders[v2] == nil {
			t.Fatalf("after the swap %s points at %v, want only %s", alias, holders, v2)
		}
		if n := search(t, es, alias, `{"size": 0, "track_total_hits": true}`).Hits.Total.Value; n != 10 {
			t.Fatalf("alias after the swap counts %d, want 10", n)
		}
	})
}

// idx is the position of fixture id in fixtures(n).
func idx(id string) int {
	var i int
	fmt.Sscanf(id, "ntc_%d", &i)
	return i
}

func TestRedis(t *testing.T) {
	rdb, err := redisClient(Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ns := Namespace(t)
	ctx := context.Background()

	t.Run("pipeline", func(t *testing.T) {
		var incr *redis.IntCmd
		var members *redis.StringSliceCmd
		cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for i := 0; i < 5; i++ {
				p.SAdd(ctx, ns+":watch:w1:ids", fmt.Sprintf("00408561%d", i))
			}
			p.HSet(ctx, ns+":watch:w1", "name", "Loan book", "owner", "acct_1")
			incr = p.IncrBy(ctx, ns+":seq", 7)
			members = p.SMembers(ctx, ns+":watch:w1:ids")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(cmds) != 8 || incr.Val() != 7 || len(members.Val()) != 5 {
			t.Fatalf("pipeline: %d replies, seq %d, %d members; want 8, 7, 5", len(cmds), incr.Val(), len(members.Val()))
		}
		if got := rdb.HGet(ctx, ns+":watch:w1", "name").Val(); got != "Loan book" {
			t.Fatalf("HGET after the pipeline: %q", got)
		}
	})

	t.Run("lua script", func(t *testing.T) {
		// Take up to ARGV[2] units from a budget, atomically: -1 once exhausted.
		take := redis.NewScript(`
			local v = redis.call('INCRBY', KEYS[1], ARGV[1])
			if v > tonumber(ARGV[2]) then
				redis.call('DECRBY', KEYS[1], ARGV[1])
				return -1
			end
			return v`)
		key := ns + ":budget"
		var got []int64
		for i := 0; i < 4; i++ {
			v, err := take.Run(ctx, rdb, []string{key}, 2, 5).Int64()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		if want := []int64{2, 4, -1, -1}; !slices.Equal(got, want) {
			t.Fatalf("script results %v, want %v", got, want)
		}
		if v := rdb.Get(ctx, key).Val(); v != "4" {
			t.Fatalf("budget after refusals is %s, want 4", v)
		}
	})
}

func TestAsynq(t *testing.T) {
	url := Redis(t)
	ns := Namespace(t)
	opt, err := asynq.ParseRedisURI(url)
	if err != nil {
		t.Fatal(err)
	}
	queue := ns + ":webhooks"

	client := asynq.NewClient(opt)
	defer client.Close()
	payload := []byte(`{"delivery":"dlv_1","watch":"wch_1"}`)
	info, err := client.Enqueue(asynq.NewTask("webhook:deliver", payload), asynq.Queue(queue), asynq.MaxRetry(0))
	if err != nil {
		t.Fatal(err)
	}
	if info.Queue != queue {
		t.Fatalf("enqueued on %q, want %q", info.Queue, queue)
	}

	got := make(chan []byte, 1)
	mux := asynq.NewServeMux()
	mux.HandleFunc("webhook:deliver", func(_ context.Context, task *asynq.Task) error {
		got <- task.Payload()
		return nil
	})
	srv := asynq.NewServer(opt, asynq.Config{
		Queues:          map[string]int{queue: 1},
		Concurrency:     1,
		LogLevel:        asynq.WarnLevel,
		ShutdownTimeout: 5 * time.Second,
	})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()

	select {
	case p := <-got:
		if !bytes.Equal(p, payload) {
			t.Fatalf("handler got %s, want %s", p, payload)
		}
	case <-time.After(time.Minute):
		t.Fatal("the asynq server did not process the task within a minute")
	}
	srv.Shutdown()

	insp := asynq.NewInspector(opt)
	defer insp.Close()
	qi, err := insp.GetQueueInfo(queue)
	if err != nil {
		t.Fatal(err)
	}
	if qi.Pending != 0 || qi.Active != 0 || qi.Retry != 0 || qi.Archived != 0 {
		t.Fatalf("queue %s after processing: %+v", queue, qi)
	}
}

// TestSettle: Merging reads the node's merge statistics (a number, not an
// error) and Settle returns once the node has been quiet; a server that
// answers the statistics with an error (as Elasticsearch 8 answers the
// metric "merges") is an error, never a node at rest.
func TestSettle(t *testing.T) {
	url := Elasticsearch(t)
	if n, err := Merging(url); err != nil || n < 0 {
		t.Fatalf("Merging: %d, %v", n, err)
	}
	waited, err := Settle(url, time.Second, time.Minute)
	if err != nil || waited < time.Second {
		t.Fatalf("Settle: waited %s, %v; want at least the 1 s of quiet", waited, err)
	}
	for name, answer := range map[string]string{
		"an error":  `{"error":{"type":"illegal_argument_exception","reason":"request [/_nodes/stats/indices/merges] contains unrecognized index metric: [merges]"},"status":400}`,
		"no node":   `{"_nodes":{"total":0},"nodes":{}}`,
		"no merges": `{"nodes":{"n1":{"indices":{}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if name == "an error" {
					w.WriteHeader(http.StatusBadRequest)
				}
				_, _ = w.Write([]byte(answer))
			}))
			defer srv.Close()
			if n, err := Merging(srv.URL); err == nil {
				t.Errorf("Merging: %d merges, no error", n)
			}
			if _, err := Settle(srv.URL, time.Second, time.Minute); err == nil {
				t.Error("Settle: no error")
			}
		})
	}
}
