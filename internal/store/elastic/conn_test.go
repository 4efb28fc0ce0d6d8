package elastic

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestReadsReuseConnections: one read after another goes over the same
// connection to Elasticsearch. Its search answers are chunked, and a body
// closed before its last chunk is read takes its connection with it: every
// read then paid a new TCP connection (found in the read benchmarks as a
// dial on most searches). The store talks to the real node through a
// forwarder that counts the connections opened.
func TestReadsReuseConnections(t *testing.T) {
	ctx := context.Background()
	esURL := testservers.Elasticsearch(t)
	fwd := newConnCounter(t, esURL)
	s := openIn(t, fwd.url, testRedis(t), testservers.Namespace(t), nil)
	if _, err := s.UpsertNotices(ctx, synthBatch("C", 0, 30)); err != nil {
		t.Fatal(err)
	}
	storetest.LoadRegister(t, storetest.Backend{Register: s}, storetest.RegisterRows())
	q, err := query.Parse("notice")
	if err != nil {
		t.Fatal(err)
	}
	company, err := ident.ParseParam(storetest.ACNAlpha)
	if err != nil {
		t.Fatal(err)
	}
	reads := []struct {
		name string
		read func() error
	}{
		{"search", func() error { _, err := s.Search(ctx, notice.SearchQuery{Limit: 20}); return err }},
		{"search q", func() error {
			_, err := s.Search(ctx, notice.SearchQuery{Filter: notice.Filter{Q: q}, Limit: 20, Sort: notice.SortRelevance})
			return err
		}},
		{"filters", func() error { _, err := s.Filters(ctx, notice.Filter{}); return err }},
		{"stats", func() error { _, err := s.Stats(ctx, notice.StatsQuery{GroupBy: "state"}); return err }},
		{"company", func() error { _, err := s.Company(ctx, company); return err }},
	}
	for _, r := range reads {
		t.Run(r.name, func(t *testing.T) {
			if err := r.read(); err != nil { // the connection is open and idle after it
				t.Fatal(err)
			}
			before := fwd.opened.Load()
			const n = 20
			for range n {
				if err := r.read(); err != nil {
					t.Fatal(err)
				}
			}
			if opened := fwd.opened.Load() - before; opened > 1 {
				t.Errorf("%d %s reads one after another opened %d connections to Elasticsearch, want at most 1", n, r.name, opened)
			}
		})
	}
}

// connCounter forwards TCP connections to an Elasticsearch node and counts
// them.
type connCounter struct {
	url    string
	opened atomic.Int64
}

func newConnCounter(t *testing.T, target string) *connCounter {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &connCounter{url: "http://" + ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, cn := range open {
			cn.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			c.opened.Add(1)
			out, err := net.Dial("tcp", u.Host)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			open = append(open, in, out)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(out, in); out.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return c
}

// TestBulkOnAHungNodeGivesUp: a node that takes a bulk request and never
// answers (hung, not down) ends the write with backend_unavailable once
// the bulk deadline passes, and the bulk indexer's own request to it is
// given up too (its workers send with a background context: without a
// deadline of ours the request, and the worker, would wait for ever).
func TestBulkOnAHungNodeGivesUp(t *testing.T) {
	target, err := url.Parse(testservers.Elasticsearch(t))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	gaveUp := make(chan struct{}, 16)
	proxy := httputil.NewSingleHostReverseProxy(target)
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "_bulk") {
			_, _ = io.Copy(io.Discard, r.Body) // read: the server then notices a client that leaves
			select {                           // the node took the request and says nothing
			case <-release:
			case <-r.Context().Done():
				gaveUp <- struct{}{} // the client gave up
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(release) }) // runs first: the held requests end, then the server closes
	ctx := context.Background()
	ns := testservers.Namespace(t)
	rdb := testRedis(t)
	// The indices are made first, straight on the node: index creation is
	// bounded by the bulk timeout too, and on a busy machine it took more than
	// the half second this test gives the bulk write (make test failed it
	// here once, in Open). openIn also drops the namespace at the end.
	openIn(t, target.String(), rdb, ns, nil)
	s, err := Open(ctx, Config{URL: hung.URL, Namespace: ns, Log: publog.New(rdb, ns, publog.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	s.bulkTimeout = 500 * time.Millisecond
	done := make(chan error, 1)
	go func() {
		_, err := s.UpsertNotices(ctx, synthBatch("HUNG", 0, 10))
		done <- err
	}()
	select {
	case err := <-done:
		if !errs.Is(err, errs.BackendUnavailable) {
			t.Fatalf("UpsertNotices on a hung node: %v, want backend_unavailable", err)
		}
	case <-time.After(60 * time.Second): // far past the 1 s deadline: hung
		t.Fatal("UpsertNotices on a hung node did not return within 60 s")
	}
	select {
	case <-gaveUp:
	case <-time.After(60 * time.Second):
		t.Fatal("the bulk request to the hung node was still open 60 s after the write gave up")
	}
}
