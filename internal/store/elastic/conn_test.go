package elastic

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
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
