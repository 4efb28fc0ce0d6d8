package elastic

import (
	"context"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/mappings"
)

func TestHealth(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s := openTest(t, clock)
	h, err := s.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Cluster == "" || len(h.Indices) != 2 || h.NewestAge != -1 {
		t.Errorf("empty store health %+v", h)
	}
	if _, err := s.UpsertNotices(ctx, synthBatch("H", 0, 3)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(90 * time.Second)
	h, err = s.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ix := range h.Indices {
		ver, _ := mappings.Load(ix.Alias[len(s.cfg.Namespace)+1:])
		if ix.Version != ver.Version {
			t.Errorf("index %s version %d, want %d", ix.Index, ix.Version, ver.Version)
		}
		if ix.Alias == s.Alias(mappings.Notices) && ix.Docs != 3 {
			t.Errorf("notices index holds %d docs, want 3", ix.Docs)
		}
	}
	if h.NewestAge != 90 {
		t.Errorf("newest notice age %v s, want 90", h.NewestAge)
	}
}

// TestUnavailable: with Elasticsearch unreachable every call fails fast
// with backend_unavailable (503), never a hang.
func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	rdb := testRedis(t)
	s, err := Open(ctx, Config{URL: "http://127.0.0.1:1", Namespace: "t-unreachable", Log: publog.New(rdb, "t-unreachable", publog.Options{})})
	if err == nil {
		_, err = s.Search(ctx, notice.SearchQuery{Limit: 1})
	}
	if !errs.Is(err, errs.BackendUnavailable) {
		t.Errorf("open/search against a closed port: %v, want %s", err, errs.BackendUnavailable)
	}
}

// TestSlowNodeTimesOut: a call that does not get its answer within the
// store's timeout fails with backend_unavailable (here the timeout is made
// shorter than any answer can be).
func TestSlowNodeTimesOut(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	s.timeout = time.Nanosecond
	_, err := s.Search(ctx, notice.SearchQuery{Limit: 1})
	if !errs.Is(err, errs.BackendUnavailable) {
		t.Errorf("search past its timeout: %v, want %s", err, errs.BackendUnavailable)
	}
	s.timeout = defaultTimeout
	if _, err := s.Search(ctx, notice.SearchQuery{Limit: 1}); err != nil {
		t.Errorf("search with the normal timeout after a timeout: %v", err)
	}
}
