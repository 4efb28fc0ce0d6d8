package api

import (
	"bytes"
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/limit"
)

// earlyCount is noticesd_http_early_reads_total{outcome} of f's server.
func earlyCount(t *testing.T, f *fixture, outcome string) float64 {
	t.Helper()
	mfs, err := f.srv.metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "noticesd_http_early_reads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelIs(m, "outcome", outcome) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no noticesd_http_early_reads_total{outcome=%q}", outcome)
	return 0
}

func labelIs(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// TestEarlyReads: a read sent with a key this server has seen
// authenticate runs while the key is checked and its token taken
// (earlyread.go). What the caller gets must not change: a key refused in
// the meantime gets the check's error and nothing of the read, in API.md's
// order; a refused key is checked first from then on; heavy requests and
// unseen keys never run early. Each case counts the early reads kept and
// discarded, so a server that never ran early fails it.
func TestEarlyReads(t *testing.T) {
	ctx := context.Background()
	type step struct {
		method, path string
		status       int
		code         string // error code when status is not 200
		kept, thrown float64
	}
	cases := []struct {
		name  string
		burst int // of the key's rate; the clock stands still
		// change is what happens to the account after the first request
		// (nil: nothing).
		change func(t *testing.T, f *fixture, accountID string) (newKey string)
		steps  []step
	}{
		{name: "a known key reads early", burst: 100, steps: []step{
			{"GET", "/v1/notices", 200, "", 1, 0},
			{"GET", "/v1/notices/ntc_nope", 404, "not_found", 2, 0},
			{"GET", "/v1/notices?limit=abc", 400, "invalid_parameter", 3, 0},
			{"HEAD", "/v1/stats?group_by=state", 200, "", 4, 0},
		}},
		{name: "heavy requests are limited first", burst: 100, steps: []step{
			{"GET", "/v1/filters?q=liquidator", 200, "", 0, 0},
			{"GET", "/v1/stats?q=liquidator", 200, "", 0, 0},
			{"GET", "/v1/filters", 200, "", 1, 0},
		}},
		{name: "a lapsed subscription is 402, before the read's own 400", burst: 100,
			change: func(t *testing.T, f *fixture, id string) string {
				if err := f.accounts.SetSubscription(ctx, id, false); err != nil {
					t.Fatal(err)
				}
				return ""
			},
			steps: []step{
				{"GET", "/v1/notices?limit=abc", 402, "subscription_inactive", 0, 1},
				{"GET", "/v1/notices", 402, "subscription_inactive", 0, 1}, // forgotten: checked first
			}},
		{name: "a rotated-away key is 401", burst: 100,
			change: func(t *testing.T, f *fixture, id string) string {
				if _, err := f.accounts.RotateKeys(ctx, id); err != nil {
					t.Fatal(err)
				}
				return ""
			},
			steps: []step{
				{"GET", "/v1/companies/000000019", 401, "unauthorised", 0, 1},
				{"GET", "/v1/companies/000000019", 401, "unauthorised", 0, 1},
			}},
		{name: "over the rate is 429, then held", burst: 2,
			steps: []step{
				{"GET", "/v1/notices", 200, "", 1, 0},             // the last token of the burst of 2
				{"GET", "/v1/notices", 429, "rate_limited", 1, 1}, // read, thrown away
				{"GET", "/v1/notices", 429, "rate_limited", 1, 1}, // held: limited first
			}},
	}
	for name, backend := range limitBackends() {
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				f := newLimitFixtureOn(t, backend, tc.burst)
				created, err := f.accounts.CreateAccount(ctx, "Early Co", "standard")
				if err != nil {
					t.Fatal(err)
				}
				key := created.ReadKey
				// The first request of a key is checked before it runs.
				if res := f.do(t, "GET", "/v1/notices", key); res.status != 200 {
					t.Fatalf("first request: HTTP %d %s", res.status, res.body)
				}
				if k, d := earlyCount(t, f, "kept"), earlyCount(t, f, "discarded"); k != 0 || d != 0 {
					t.Fatalf("the first request of a key ran early (kept %v, discarded %v)", k, d)
				}
				if tc.change != nil {
					tc.change(t, f, created.AccountID)
				}
				for i, s := range tc.steps {
					res := f.do(t, s.method, s.path, key)
					if s.status == 200 {
						if res.status != 200 {
							t.Fatalf("step %d %s %s: HTTP %d %s", i+1, s.method, s.path, res.status, res.body)
						}
					} else if s.method == "HEAD" {
						if res.status != s.status {
							t.Fatalf("step %d %s %s: HTTP %d, want %d", i+1, s.method, s.path, res.status, s.status)
						}
					} else {
						wantError(t, res, s.status, s.code)
						if bytes.Contains(res.body, []byte(`"data"`)) {
							t.Errorf("step %d %s %s: the refused answer carries the read's data: %s", i+1, s.method, s.path, res.body)
						}
						if s.status == 429 && res.header.Get("Retry-After") == "" {
							t.Errorf("step %d: 429 without Retry-After", i+1)
						}
						if s.status != 429 && res.header.Get("Retry-After") != "" {
							t.Errorf("step %d: HTTP %d with Retry-After", i+1, s.status)
						}
					}
					if k, d := earlyCount(t, f, "kept"), earlyCount(t, f, "discarded"); k != s.kept || d != s.thrown {
						t.Errorf("step %d %s %s: early reads kept %v, discarded %v; want %v, %v", i+1, s.method, s.path, k, d, s.kept, s.thrown)
					}
				}
			})
		}
	}
}

// TestEarlyReadsLimiterAway: when the limits cannot be checked (their
// Redis is unreachable), every read is 503 backend_unavailable with no data,
// and a key whose early read failed that way is checked first again, so
// an outage does not make most reads run for nothing.
func TestEarlyReadsLimiterAway(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	f := newLimitFixture(t, limit.NewRedis(rdb, "t-away", 2, 0), 100)
	created, err := f.store.CreateAccount(ctx, "Away Co", "standard")
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	for i := range n {
		res := f.do(t, "GET", "/v1/notices", created.ReadKey)
		wantError(t, res, 503, "backend_unavailable")
		if res.header.Get("Retry-After") == "" {
			t.Errorf("request %d: 503 backend_unavailable without Retry-After", i+1)
		}
		if bytes.Contains(res.body, []byte(`"data"`)) {
			t.Fatalf("request %d: the refused answer carries the read's data: %s", i+1, res.body)
		}
	}
	// The first request is checked first (the key is new); after it, at
	// most every other one may start early before the failure is seen.
	if k, d := earlyCount(t, f, "kept"), earlyCount(t, f, "discarded"); k != 0 || d > n/2 {
		t.Errorf("early reads kept %v, discarded %v of %d requests with the limiter away; want 0 kept, at most %d discarded", k, d, n, n/2)
	}
}
