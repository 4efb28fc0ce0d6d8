package api

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// fixedCollector is a HealthSource reporting a fixed collector status.
type fixedCollector CollectorStatus

func (c fixedCollector) CollectorStatus(context.Context) CollectorStatus { return CollectorStatus(c) }

func strPtr(s string) *string { return &s }

// TestHealth covers GET /health: no key, the three blocks, ok / degraded /
// unavailable.
func TestHealth(t *testing.T) {
	unreachable := func(context.Context) error { return errors.New("dial tcp 10.0.0.9:6379: connection refused") }
	tests := []struct {
		name      string
		opts      fixtureOpts
		status    int
		state     string
		collector string
		checks    map[string]string
	}{
		{"collector disabled", fixtureOpts{}, 200, "ok", "disabled",
			map[string]string{"search": "ok", "store": "ok", "queue": "ok"}},
		{"collector idle", fixtureOpts{health: fixedCollector{State: CollectorIdle, Source: strPtr("/data/feed")}}, 200, "ok", "idle",
			map[string]string{"search": "ok", "store": "ok", "queue": "ok"}},
		{"collector failing is degraded", fixtureOpts{health: fixedCollector{State: CollectorFailing, ConsecutiveFailures: 3, LastError: strPtr("HTTP 502")}}, 200, "degraded", "failing",
			map[string]string{"search": "ok", "store": "ok", "queue": "ok"}},
		{"unreachable backend is 503", fixtureOpts{checks: map[string]Check{"queue": unreachable}}, 503, "unavailable", "disabled",
			map[string]string{"search": "ok", "store": "ok", "queue": "unavailable"}},
		{"unreachable beats degraded", fixtureOpts{checks: map[string]Check{"queue": unreachable}, health: fixedCollector{State: CollectorFailing}}, 503, "unavailable", "failing",
			map[string]string{"search": "ok", "store": "ok", "queue": "unavailable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.opts)
			res := f.do(t, "GET", "/health", "")
			if res.status != tt.status {
				t.Fatalf("status %d, want %d; body %s", res.status, tt.status, res.body)
			}
			wantJSONType(t, res)
			var h healthResponse
			if err := json.Unmarshal(res.body, &h); err != nil {
				t.Fatal(err)
			}
			if h.Status != tt.state || h.Collector.State != tt.collector {
				t.Errorf("status %q collector %q, want %q %q", h.Status, h.Collector.State, tt.state, tt.collector)
			}
			if h.Checks.Search != tt.checks["search"] || h.Checks.Store != tt.checks["store"] || h.Checks.Queue != tt.checks["queue"] {
				t.Errorf("checks %v, want %v", h.Checks, tt.checks)
			}
			if h.Index == nil || h.Index.Notices != 6 || h.Index.LatestNoticeSeq != 6 ||
				h.Index.LatestPublishedDate == nil || *h.Index.LatestPublishedDate != "2026-04-02" {
				t.Errorf("index %+v, want 6 notices, seq 6, latest 2026-04-02", h.Index)
			}
		})
	}

	t.Run("version and commit", func(t *testing.T) {
		for _, tt := range []struct {
			name            string
			build           Build
			version, commit string
		}{
			{"stamped", Build{Version: "0.9.0", Commit: "0123abc"}, "0.9.0", "0123abc"},
			{"not stamped", Build{}, "unknown", "unknown"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				res := newFixture(t, fixtureOpts{build: tt.build}).do(t, "GET", "/health", "")
				var h healthResponse
				if err := json.Unmarshal(res.body, &h); err != nil {
					t.Fatal(err)
				}
				if h.Version != tt.version || h.Commit != tt.commit {
					t.Errorf("version %q commit %q, want %q %q; body %s", h.Version, h.Commit, tt.version, tt.commit, res.body)
				}
			})
		}
	})

	t.Run("disabled collector block", func(t *testing.T) {
		f := newFixture(t)
		res := f.do(t, "GET", "/health", "")
		var raw struct {
			Collector map[string]any `json:"collector"`
		}
		if err := json.Unmarshal(res.body, &raw); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"state": "disabled", "source": nil, "last_run_at": nil, "last_success_at": nil,
			"last_error": nil, "consecutive_failures": float64(0), "notices_collected": float64(0)}
		wantSame(t, raw.Collector, want)
		if !strings.Contains(string(res.body), `"checks":{"search":"ok","store":"ok","queue":"ok"}`) {
			t.Errorf("checks block not in API.md's form: %s", res.body)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(res.body, &top); err != nil {
			t.Fatal(err)
		}
		if len(top) != 10 || top["status"] == nil || top["version"] == nil || top["commit"] == nil || top["collector"] == nil || top["index"] == nil || top["checks"] == nil || string(top["reasons"]) != "[]" {
			t.Errorf("top-level keys of %s, want status, version, commit, collector, mail, index, search, search_nodes, checks, reasons (empty)", res.body)
		}
		if string(top["search"]) != "null" || string(top["search_nodes"]) != "null" {
			t.Errorf("search block %s and search_nodes %s, want null in the embedded mode", top["search"], top["search_nodes"])
		}
		if string(top["mail"]) != `{"state":"off"}` {
			t.Errorf("mail block %s, want {\"state\":\"off\"} without NOTICES_SMTP_URL", top["mail"])
		}
	})
	t.Run("search nodes", func(t *testing.T) {
		for _, tc := range []struct {
			name       string
			nodes      []SearchNode
			ready      Check
			wantStatus string
			wantReason string
			wantReady  int
			readyText  string
		}{
			{name: "all answer", nodes: []SearchNode{{"127.0.0.1:9200", true}, {"127.0.0.1:9201", true}},
				wantStatus: "ok", wantReady: 200, readyText: `"search_nodes":[{"node":"127.0.0.1:9200","reachable":true},{"node":"127.0.0.1:9201","reachable":true}]`},
			{name: "one lost", nodes: []SearchNode{{"127.0.0.1:9200", true}, {"127.0.0.1:9201", false}},
				wantStatus: "degraded", wantReason: "search node 127.0.0.1:9201 does not answer",
				wantReady: 200, readyText: `{"node":"127.0.0.1:9201","reachable":false}`},
			{name: "not ready names the silent nodes", nodes: []SearchNode{{"127.0.0.1:9200", false}, {"127.0.0.1:9201", false}},
				ready:      func(context.Context) error { return errors.New("cluster unreachable") },
				wantStatus: "degraded", wantReason: "search node 127.0.0.1:9200 does not answer",
				wantReady: 503, readyText: "Elasticsearch nodes not answering: 127.0.0.1:9200, 127.0.0.1:9201"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := newFixture(t, fixtureOpts{ready: tc.ready, searchNodes: func(context.Context) []SearchNode { return tc.nodes }})
				res := f.do(t, "GET", "/health", "")
				var h struct {
					Status      string       `json:"status"`
					Reasons     []string     `json:"reasons"`
					SearchNodes []SearchNode `json:"search_nodes"`
				}
				if err := json.Unmarshal(res.body, &h); err != nil {
					t.Fatal(err)
				}
				if res.status != 200 || h.Status != tc.wantStatus || !reflect.DeepEqual(h.SearchNodes, tc.nodes) {
					t.Errorf("GET /health = %d %s; want 200, status %s, search_nodes %v", res.status, res.body, tc.wantStatus, tc.nodes)
				}
				if tc.wantReason != "" && !slices.Contains(h.Reasons, tc.wantReason) {
					t.Errorf("reasons %q, want %q among them", h.Reasons, tc.wantReason)
				}
				res = f.do(t, "GET", "/ready", "")
				if res.status != tc.wantReady || !strings.Contains(string(res.body), tc.readyText) {
					t.Errorf("GET /ready = %d %s; want %d with %s", res.status, res.body, tc.wantReady, tc.readyText)
				}
			})
		}
	})
	t.Run("store closed is 503 unavailable", func(t *testing.T) {
		f := newFixture(t)
		if err := f.store.Close(); err != nil {
			t.Fatal(err)
		}
		res := f.do(t, "GET", "/health", "")
		if res.status != 503 {
			t.Fatalf("status %d, want 503; body %s", res.status, res.body)
		}
		var h healthResponse
		if err := json.Unmarshal(res.body, &h); err != nil {
			t.Fatal(err)
		}
		if h.Status != "unavailable" || h.Index != nil || h.Checks.Search != "unavailable" {
			t.Errorf("got %s", res.body)
		}
	})
	t.Run("source credentials are not shown", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{health: fixedCollector{State: CollectorIdle, Source: strPtr("https://user:pw@feed.example/notices.jsonl?token=s3cret")}})
		var h healthResponse
		if err := json.Unmarshal(f.do(t, "GET", "/health", "").body, &h); err != nil {
			t.Fatal(err)
		}
		if h.Collector.Source == nil || *h.Collector.Source != "https://feed.example/notices.jsonl" {
			t.Errorf("source %v, want https://feed.example/notices.jsonl", h.Collector.Source)
		}
	})
}

// TestHealthHangingBackendIsolated: a backend that hangs makes its own
// check unavailable within the probe timeout; the other backends, probed
// beside it with their own time, stay ok.
func TestHealthHangingBackendIsolated(t *testing.T) {
	hangs := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	answers := func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err() // asked only once the hung probe had spent the time
		case <-time.After(20 * time.Millisecond): // a real round trip
			return nil
		}
	}
	f := newFixture(t, fixtureOpts{checks: map[string]Check{"search": hangs, "store": answers, "queue": answers}})
	f.srv.probeTimeout = 300 * time.Millisecond
	res := f.do(t, "GET", "/health", "")
	var h healthResponse
	if err := json.Unmarshal(res.body, &h); err != nil {
		t.Fatal(err)
	}
	if res.status != 503 || h.Checks.Search != "unavailable" || h.Checks.Store != "ok" || h.Checks.Queue != "ok" {
		t.Fatalf("HTTP %d, checks %+v; want only search unavailable", res.status, h.Checks)
	}
}

// TestProbeReuse: /health's checks (the store's write probe, the mail
// queue's counts, O(accounts) commands in the scale mode) run at most once
// per writeProbeEvery on the injected clock, and again when the clock goes
// back.
func TestProbeReuse(t *testing.T) {
	p := probe[int]{every: writeProbeEvery}
	runs := 0
	check := func() int { runs++; return runs }
	for _, c := range []struct {
		name  string
		after time.Duration
		want  int
	}{
		{"first", 0, 1},
		{"within", writeProbeEvery - time.Millisecond, 1},
		{"after", writeProbeEvery, 2},
		{"clock back", time.Second, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := p.get(fixedNow.Add(c.after), check); got != c.want {
				t.Errorf("get at +%s = %d, want %d", c.after, got, c.want)
			}
		})
	}
}
