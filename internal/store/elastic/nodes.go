package elastic

import (
	"context"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elastic/elastic-transport-go/v8/elastictransport"
	"github.com/elastic/go-elasticsearch/v8"
)

// nodeCounts counts the failed attempts by node and the retries (/metrics).
type nodeCounts struct {
	retries  atomic.Int64
	mu       sync.Mutex
	failures map[string]int64 // by host:port
}

// attemptsKey carries a request's attempt counter (withAttempts).
type attemptsKey struct{}

// withAttempts gives ctx's request an attempt counter, to tell the retries.
func withAttempts(ctx context.Context) context.Context {
	return context.WithValue(ctx, attemptsKey{}, new(atomic.Int32))
}

// retryOnStatus are the answers the transport retries on another node.
var retryOnStatus = []int{http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusTooManyRequests}

// intercept sees every attempt, its node chosen (req.URL.Host).
func (c *nodeCounts) intercept(next elastictransport.RoundTripFunc) elastictransport.RoundTripFunc {
	return func(req *http.Request) (*http.Response, error) {
		if a, ok := req.Context().Value(attemptsKey{}).(*atomic.Int32); ok && a.Add(1) > 1 {
			c.retries.Add(1)
		}
		res, err := next(req)
		if err != nil || slices.Contains(retryOnStatus, res.StatusCode) {
			c.mu.Lock()
			c.failures[req.URL.Host]++
			c.mu.Unlock()
		}
		return res, err
	}
}

// NodeCounts returns how many requests were retried on another node and
// how many attempts failed on each configured node (host:port).
func (s *Store) NodeCounts() (retries int64, failures map[string]int64) {
	c := s.counts
	c.mu.Lock()
	defer c.mu.Unlock()
	failures = maps.Clone(c.failures)
	for _, p := range s.probes {
		failures[p.host] += 0 // every configured node, failed or not
	}
	return c.retries.Load(), failures
}

// nodeProbe asks one node, and only it, whether it answers.
type nodeProbe struct {
	host string // host:port
	es   *elasticsearch.Client
}

// newProbes makes a client of each node of cfg.URL alone.
func newProbes(cfg Config) ([]nodeProbe, error) {
	var out []nodeProbe
	for _, raw := range nodeURLs(cfg.URL) {
		one := cfg
		one.URL = raw
		es, err := newClient(one, nil)
		if err != nil {
			return nil, err
		}
		u, _ := url.Parse(raw) // newClient parsed it
		out = append(out, nodeProbe{host: u.Host, es: es})
	}
	return out, nil
}

// NodeStatus is whether one configured node answers.
type NodeStatus struct {
	Node      string // host:port (never credentials)
	Reachable bool   // it answered its own view of the cluster health in time
}

// nodeProbeTimeout bounds each node's probe; nodeDialTimeout a new
// connection to a node (conn.go), failed over to another past it.
const nodeProbeTimeout, nodeDialTimeout = 3 * time.Second, 2 * time.Second

// Nodes asks every configured node at once whether it answers (/health).
func (s *Store) Nodes(ctx context.Context) []NodeStatus {
	out := make([]NodeStatus, len(s.probes))
	var wg sync.WaitGroup
	for i, p := range s.probes {
		out[i].Node = p.host
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, min(nodeProbeTimeout, s.timeout))
			defer cancel()
			health := p.es.Cluster.Health
			res, err := health(health.WithContext(ctx), health.WithLocal(true))
			if err != nil {
				return
			}
			_ = res.Body.Close()
			out[i].Reachable = res.StatusCode == http.StatusOK
		})
	}
	wg.Wait()
	return out
}
