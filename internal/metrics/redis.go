package metrics

import "github.com/prometheus/client_golang/prometheus"

// RedisCounts is what a process has counted of its Redis connections
// since it started (scale mode).
type RedisCounts struct {
	// Dials and DialErrors are the connections made and the dials that
	// failed.
	Dials, DialErrors int64
	// Reconnects counts connections made after one was lost.
	Reconnects int64
	// Failovers counts changes of the Redis primary's address; on a Redis
	// Cluster, of the master owning the namespace's hash slot.
	Failovers int64
}

var (
	descRedisDials = prometheus.NewDesc(namespace+"_redis_dials_total",
		"Connections this process dialled to the Redis primary, by outcome: ok or failed.",
		[]string{"outcome"}, nil)
	descRedisReconnects = prometheus.NewDesc(namespace+"_redis_reconnects_total",
		"Connections to Redis made after one was lost (a dial or a command failed for want of a connection).",
		nil, nil)
	descRedisFailovers = prometheus.NewDesc(namespace+"_redis_failovers_total",
		"Changes of the Redis primary this process has seen: a connection made to another address than the one before (a Sentinel failover); on a Redis Cluster, another master owning the namespace's hash slot.",
		nil, nil)
)

// CountRedis reports the Redis connection counts read by counts at each
// scrape, and the process's Redis Cluster redirects (RedirectHook; 0
// without a cluster).
func (m *Metrics) CountRedis(counts func() RedisCounts) {
	m.countAtScrape(func(ch chan<- prometheus.Metric) {
		c := counts()
		ch <- prometheus.MustNewConstMetric(descRedisDials, prometheus.CounterValue, float64(c.Dials), "ok")
		ch <- prometheus.MustNewConstMetric(descRedisDials, prometheus.CounterValue, float64(c.DialErrors), "failed")
		ch <- prometheus.MustNewConstMetric(descRedisReconnects, prometheus.CounterValue, float64(c.Reconnects))
		ch <- prometheus.MustNewConstMetric(descRedisFailovers, prometheus.CounterValue, float64(c.Failovers))
		moved, ask := Redirects()
		ch <- prometheus.MustNewConstMetric(descRedisRedirects, prometheus.CounterValue, float64(moved), "moved")
		ch <- prometheus.MustNewConstMetric(descRedisRedirects, prometheus.CounterValue, float64(ask), "ask")
	}, descRedisDials, descRedisReconnects, descRedisFailovers, descRedisRedirects)
}
