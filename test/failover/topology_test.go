//go:build linux

package failover

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/keyspace"
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

func (s sentinel) kill(t *testing.T, _ []string) string { return s.top.KillPrimary(t) }

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
// the master owning the most accounts' hash slots is the one killed; the
// namespace's slot (its shared keys) may be on another.
type cluster struct {
	top *testservers.ClusterTopology
	ns  string // the namespace
	key string // a key in the killed master's slot: the most-placed account's tag
}

func (c *cluster) env(t *testing.T, ns string) []string {
	c.ns = ns
	return []string{"NOTICES_REDIS_CLUSTER_URL=" + c.top.URL}
}

// kill finds the master of each account's tag (keyspace.Account) and
// kills the one owning the most, logging the count per master and the
// namespace's master.
func (c *cluster) kill(t *testing.T, accounts []string) string {
	ctx := context.Background()
	owns, tag := map[string]int{}, map[string]string{}
	for _, id := range accounts {
		m, err := c.top.MasterOf(ctx, keyspace.Account(c.ns, id))
		if err != nil {
			t.Fatal(err)
		}
		owns[m]++
		tag[m] = keyspace.Account(c.ns, id)
	}
	most := ""
	for m, n := range owns {
		if most == "" || n > owns[most] {
			most = m
		}
	}
	nsMaster, err := c.top.MasterOf(ctx, keyspace.Prefix(c.ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("accounts per master %v; killing %s (%d of %d accounts); the namespace's master is %s", owns, most, owns[most], len(accounts), nsMaster)
	c.key = tag[most]
	return c.top.KillMasterOf(t, c.key)
}

func (c *cluster) promoted(t *testing.T, old string) string {
	return c.top.WaitPromoted(t, c.key, old, 60*time.Second)
}

// recovered: each serve's /health and /ready answer 200, name the
// namespace's master (the promoted one when it was the one killed), count
// a failover and list three masters, all answering, the promoted one
// among them; every process's /metrics counts a failover.
func (c *cluster) recovered(t *testing.T, serves, all []*proc, now string) {
	t.Helper()
	nsMaster, err := c.top.MasterOf(context.Background(), keyspace.Prefix(c.ns))
	if err != nil {
		t.Fatal(err)
	}
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
			testbin.WaitFor(t, 30*time.Second, p.name+" "+path+" naming the namespace's master, a failover counted, three masters answering, the promoted one among them", func() bool {
				if getJSON(p.base+path, &h) != http.StatusOK || h.Redis == nil || h.Redis.Primary != nsMaster || h.Redis.Failovers < 1 || len(h.Redis.Masters) != 3 {
					return false
				}
				promoted := false
				for _, m := range h.Redis.Masters {
					if !m.Reachable {
						return false
					}
					promoted = promoted || m.Node == now
				}
				return promoted
			})
		}
	}
	for _, p := range all {
		if m := scrape(t, p.base+"/metrics"); m["noticesd_redis_failovers_total"] < 1 {
			t.Errorf("%s /metrics: noticesd_redis_failovers_total %v, want at least 1 (a master was replaced)", p.name, m["noticesd_redis_failovers_total"])
		}
	}
}
