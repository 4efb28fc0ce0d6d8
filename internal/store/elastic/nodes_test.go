package elastic

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/mappings"
)

// deadURL is the URL of a loopback port nobody listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// TestDeadNodeCostsARetry: with a node that refuses connections listed
// first in the URL, the store opens, bulk-loads, reads and loads the
// register on the node that answers; the dead node's failures and the
// retries they cost are counted, Nodes says which node answers, and every
// index created has Config.Replicas replicas. (The loss of a node during a
// load is TestElasticsearchNodeLoss, test/scalee2e, on a real two-node
// cluster.)
func TestDeadNodeCostsARetry(t *testing.T) {
	ctx := context.Background()
	live := testservers.Elasticsearch(t)
	dead := deadURL(t)
	rdb := testRedis(t)
	ns := testservers.Namespace(t)
	s, err := Open(ctx, Config{URL: dead + "," + live, Namespace: ns, Log: publog.New(rdb, ns, publog.Options{}), Replicas: 1})
	if err != nil {
		t.Fatalf("open with a dead node listed first: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Drop(context.Background()); err != nil {
			t.Errorf("drop indices of %s: %v", ns, err)
		}
		dropRedis(t, rdb, ns)
	})
	if _, err := s.UpsertNotices(ctx, synthBatch("D", 0, 50)); err != nil {
		t.Fatalf("bulk write: %v", err)
	}
	storetest.LoadRegister(t, storetest.Backend{Register: s}, storetest.RegisterRows())
	page, err := s.Search(ctx, notice.SearchQuery{Limit: 20})
	if err != nil || page.Total != 50 {
		t.Fatalf("search: %d notices, %v; want 50", page.Total, err)
	}

	deadHost, liveHost := hostOf(t, dead), hostOf(t, live)
	retries, failures := s.NodeCounts()
	if retries < 1 || failures[deadHost] < 1 || failures[liveHost] != 0 {
		t.Errorf("NodeCounts: %d retries, failures %v; want at least one retry and failure on %s, none on %s", retries, failures, deadHost, liveHost)
	}
	nodes := s.Nodes(ctx)
	want := []NodeStatus{{Node: deadHost, Reachable: false}, {Node: liveHost, Reachable: true}}
	if len(nodes) != 2 || nodes[0] != want[0] || nodes[1] != want[1] {
		t.Errorf("Nodes = %v, want %v", nodes, want)
	}

	for _, kind := range []string{mappings.Notices, mappings.Register} {
		names, err := s.aliasIndices(ctx, s.Alias(kind))
		if err != nil || len(names) != 1 {
			t.Fatalf("indices behind %s: %v, %v", s.Alias(kind), names, err)
		}
		var settings map[string]struct {
			Settings struct {
				Index struct {
					Replicas string `json:"number_of_replicas"`
				} `json:"index"`
			} `json:"settings"`
		}
		if err := s.do(ctx, s.timeout, http.MethodGet, "/"+names[0]+"/_settings", nil, &settings); err != nil {
			t.Fatal(err)
		}
		if got := settings[names[0]].Settings.Index.Replicas; got != "1" {
			t.Errorf("%s has number_of_replicas %q, want \"1\" (Config.Replicas)", names[0], got)
		}
	}
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
