//go:build linux

package failover

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

// sentinel is a Sentinel topology (NOTICES_REDIS_SENTINELS): a primary,
// its replica and three Sentinels.
type sentinel struct{ top *testservers.SentinelTopology }

func (s sentinel) env(t *testing.T, _ string) []string {
	return []string{
		"NOTICES_REDIS_URL=redis://" + mustPrimary(t, s.top) + "/0",
		"NOTICES_REDIS_SENTINELS=" + strings.Join(s.top.Sentinels, ","),
		"NOTICES_REDIS_MASTER=" + s.top.Master,
	}
}

func (s sentinel) kill(t *testing.T) string { return s.top.KillPrimary(t) }

func (s sentinel) promoted(t *testing.T, old string) string {
	return s.top.WaitFailover(t, old, 60*time.Second)
}

// recovered: each serve's /health and /ready name the new primary and
// count a failover; every process's /metrics counts a failover and a
// reconnect.
func (s sentinel) recovered(t *testing.T, serves, all []*proc, now string) {
	t.Helper()
	for _, p := range serves {
		var h struct {
			Status string `json:"status"`
			Redis  *struct {
				Primary   string `json:"primary"`
				Failovers int64  `json:"failovers"`
			} `json:"redis"`
		}
		testbin.WaitFor(t, 30*time.Second, p.name+" /health ok on the new primary", func() bool {
			status := getJSON(p.base+"/health", &h)
			return status == http.StatusOK && h.Status == "ok" && h.Redis != nil && h.Redis.Primary == now
		})
		if h.Redis.Failovers < 1 {
			t.Errorf("%s /health: redis %+v, want at least one failover counted", p.name, *h.Redis)
		}
		var r struct {
			Redis *struct {
				Primary string `json:"primary"`
			} `json:"redis"`
		}
		if status := getJSON(p.base+"/ready", &r); status != http.StatusOK || r.Redis == nil || r.Redis.Primary != now {
			t.Errorf("%s /ready: %d %+v, want 200 naming %s", p.name, status, r.Redis, now)
		}
	}
	for _, p := range all {
		m := scrape(t, p.base+"/metrics")
		if m["noticesd_redis_failovers_total"] < 1 || m["noticesd_redis_reconnects_total"] < 1 {
			t.Errorf("%s /metrics: noticesd_redis_failovers_total %v, noticesd_redis_reconnects_total %v; want at least 1 each",
				p.name, m["noticesd_redis_failovers_total"], m["noticesd_redis_reconnects_total"])
		}
	}

}

// mustPrimary asks the Sentinels for the primary.
func mustPrimary(t *testing.T, top *testservers.SentinelTopology) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addr, err := top.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// cluster is a Redis Cluster of the test's own (NOTICES_REDIS_CLUSTER_URL):
// the master of the namespace's hash slot is the one killed.
type cluster struct {
	top *testservers.ClusterTopology
	key string // a key in the namespace's slot
}

func (c *cluster) env(t *testing.T, ns string) []string {
	c.key = "{" + ns + "}"
	return []string{"NOTICES_REDIS_CLUSTER_URL=" + c.top.URL}
}

func (c *cluster) kill(t *testing.T) string { return c.top.KillMasterOf(t, c.key) }

func (c *cluster) promoted(t *testing.T, old string) string {
	return c.top.WaitPromoted(t, c.key, old, 60*time.Second)
}

// recovered: each serve's /health and /ready answer 200, name the
// promoted master as the namespace's, count a failover and list three
// masters, all answering; every process's /metrics counts a failover.
func (c *cluster) recovered(t *testing.T, serves, all []*proc, now string) {
	t.Helper()
	for _, p := range serves {
		for _, path := range []string{"/health", "/ready"} {
			var h struct {
				Redis *struct {
					Primary   string `json:"primary"`
					Failovers int64  `json:"failovers"`
					Masters   []struct {
						Node      string `json:"node"`
						Reachable bool   `json:"reachable"`
					} `json:"masters"`
				} `json:"redis"`
			}
			testbin.WaitFor(t, 30*time.Second, p.name+" "+path+" naming the promoted master, a failover counted, three masters answering", func() bool {
				if getJSON(p.base+path, &h) != http.StatusOK || h.Redis == nil || h.Redis.Primary != now || h.Redis.Failovers < 1 || len(h.Redis.Masters) != 3 {
					return false
				}
				for _, m := range h.Redis.Masters {
					if !m.Reachable {
						return false
					}
				}
				return true
			})
		}
	}
	for _, p := range all {
		if m := scrape(t, p.base+"/metrics"); m["noticesd_redis_failovers_total"] < 1 {
			t.Errorf("%s /metrics: noticesd_redis_failovers_total %v, want at least 1 (the namespace's master changed)", p.name, m["noticesd_redis_failovers_total"])
		}
	}
}
