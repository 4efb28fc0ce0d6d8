// Package metrics is the service's Prometheus instrumentation, served on
// /metrics in the Prometheus text format (docs/operating.md, "Metrics").
//
// Two kinds of figures: counters kept by the parts of this process as
// things happen (HTTP requests, collector runs and the rows they loaded,
// webhook delivery attempts), and gauges read from the store at scrape time
// through store.GaugeSource (accounts, watches, deliveries by status, queue
// depth, retry backlog), so every replica of the scale backend reports the
// same shared state and nothing is kept twice.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/noticesd/noticesd/internal/store"
)

// namespace prefixes every metric name.
const namespace = "noticesd"

// gaugeTimeout bounds the store read of one scrape.
const gaugeTimeout = 5 * time.Second

// Metrics holds the collectors of one process. A nil *Metrics records
// nothing, so parts can be built without instrumentation.
type Metrics struct {
	reg              *prometheus.Registry
	requests         *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	ingestRows       *prometheus.CounterVec
	collectorRuns    *prometheus.CounterVec
	deliveryAttempts *prometheus.CounterVec
	earlyReads       *prometheus.CounterVec
}

// New registers the collectors. gauges, if not nil, is read at each scrape
// for the stored counts; log receives a failed read (the scrape then
// reports noticesd_store_gauges_up 0 and leaves the stored counts out).
func New(gauges store.GaugeSource, log *slog.Logger) *Metrics {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by route pattern and method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method"}),
		ingestRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "ingest_rows_total",
			Help: "Notice lines the collector loaded, by outcome: new, updated or rejected.",
		}, []string{"outcome"}),
		collectorRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "collector_runs_total",
			Help: "Collector runs, by outcome: ok, not_modified, partial (lines or files rejected) or failed.",
		}, []string{"outcome"}),
		deliveryAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "delivery_attempts_total",
			Help: "Webhook delivery attempts, by outcome: delivered (2xx) or failed.",
		}, []string{"outcome"}),
		earlyReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_early_reads_total",
			Help: "Reads run while their key was being checked, by outcome: kept (the key and its rate allowed them) or discarded (answered with the check's error instead).",
		}, []string{"outcome"}),
	}
	m.reg.MustRegister(m.requests, m.duration, m.ingestRows, m.collectorRuns, m.deliveryAttempts, m.earlyReads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, o := range []string{"new", "updated", "rejected"} {
		m.ingestRows.WithLabelValues(o)
	}
	for _, o := range []string{CollectorOK, CollectorNotModified, CollectorPartial, CollectorFailed, CollectorLeaseLost} {
		m.collectorRuns.WithLabelValues(o)
	}
	m.deliveryAttempts.WithLabelValues("delivered")
	m.deliveryAttempts.WithLabelValues("failed")
	m.earlyReads.WithLabelValues("kept")
	m.earlyReads.WithLabelValues("discarded")
	if gauges != nil {
		m.reg.MustRegister(&gaugeCollector{src: gauges, log: log})
	}
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry returns the registry, for parts that add their own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveRequest counts one answered HTTP request. route is the route
// pattern (/v1/watches/:id), never the raw path, so the label set stays
// bounded.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route, method).Observe(d.Seconds())
}

// descAggCache is the answer cache's reads (scale backend).
var descAggCache = prometheus.NewDesc(namespace+"_agg_cache_reads_total",
	"GET /v1/filters and /v1/stats reads of this process, by whether a kept answer served them (hit) or Elasticsearch did (miss; NOTICES_AGG_CACHE).",
	[]string{"outcome"}, nil)

// scrapeCollector is a prometheus.Collector of descs whose values collect
// reads at scrape time from counts another part of the process keeps.
type scrapeCollector struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

// Describe implements prometheus.Collector.
func (c scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c scrapeCollector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// countAtScrape registers the metrics of descs, their values sent by
// collect at each scrape; a nil m ignores them.
func (m *Metrics) countAtScrape(collect func(ch chan<- prometheus.Metric), descs ...*prometheus.Desc) {
	if m == nil {
		return
	}
	m.reg.MustRegister(scrapeCollector{descs, collect})
}

// CountAggCache reports the filters and stats answer cache's reads, as
// counted by reads (elastic.Store.AggCacheReads), at each scrape.
func (m *Metrics) CountAggCache(reads func() (hits, misses int64)) {
	m.countAtScrape(func(ch chan<- prometheus.Metric) {
		hits, misses := reads()
		ch <- prometheus.MustNewConstMetric(descAggCache, prometheus.CounterValue, float64(hits), "hit")
		ch <- prometheus.MustNewConstMetric(descAggCache, prometheus.CounterValue, float64(misses), "miss")
	}, descAggCache)
}

// descESRetries and descESNodeFailures are the Elasticsearch client's
// failovers (scale backend, several nodes).
var (
	descESRetries = prometheus.NewDesc(namespace+"_elasticsearch_retries_total",
		"Requests to Elasticsearch this process sent again, to another node when there are several, after a node failed them (NOTICES_ELASTICSEARCH_URL).",
		nil, nil)
	descESNodeFailures = prometheus.NewDesc(namespace+"_elasticsearch_node_failures_total",
		"Requests to Elasticsearch that failed on a node, by node (host:port): no connection, no answer in time, or 502/503/504/429.",
		[]string{"node"}, nil)
)

// CountElasticsearchNodes reports the Elasticsearch client's retries and
// each node's failures, as counted by counts (elastic.Store.NodeCounts),
// at each scrape.
func (m *Metrics) CountElasticsearchNodes(counts func() (retries int64, failures map[string]int64)) {
	m.countAtScrape(func(ch chan<- prometheus.Metric) {
		retries, failures := counts()
		ch <- prometheus.MustNewConstMetric(descESRetries, prometheus.CounterValue, float64(retries))
		for node, n := range failures {
			ch <- prometheus.MustNewConstMetric(descESNodeFailures, prometheus.CounterValue, float64(n), node)
		}
	}, descESRetries, descESNodeFailures)
}

// ObserveEarlyRead counts one read run while its key was being checked
// (api's early reads): kept, or discarded because the check refused it.
func (m *Metrics) ObserveEarlyRead(kept bool) {
	if m == nil {
		return
	}
	outcome := "discarded"
	if kept {
		outcome = "kept"
	}
	m.earlyReads.WithLabelValues(outcome).Inc()
}

// Collector run outcomes.
const (
	CollectorOK          = "ok"
	CollectorNotModified = "not_modified"
	CollectorPartial     = "partial"
	CollectorFailed      = "failed"
	CollectorLeaseLost   = "lease_lost"
)

// ObserveCollectorRun counts one collector run and the lines it loaded.
func (m *Metrics) ObserveCollectorRun(outcome string, added, updated, rejected int) {
	if m == nil {
		return
	}
	m.collectorRuns.WithLabelValues(outcome).Inc()
	m.ingestRows.WithLabelValues("new").Add(float64(added))
	m.ingestRows.WithLabelValues("updated").Add(float64(updated))
	m.ingestRows.WithLabelValues("rejected").Add(float64(rejected))
}

// ObserveDeliveryAttempt counts one webhook delivery attempt.
func (m *Metrics) ObserveDeliveryAttempt(delivered bool) {
	if m == nil {
		return
	}
	outcome := "failed"
	if delivered {
		outcome = "delivered"
	}
	m.deliveryAttempts.WithLabelValues(outcome).Inc()
}

// gaugeCollector reads store.Gauges at scrape time.
type gaugeCollector struct {
	src store.GaugeSource
	log *slog.Logger
}

var (
	descUp = prometheus.NewDesc(namespace+"_store_gauges_up",
		"1 when this scrape read the stored counts, 0 when the store did not answer.", nil, nil)
	descAccounts = prometheus.NewDesc(namespace+"_accounts",
		"Accounts, by subscription state (active or lapsed).", []string{"state"}, nil)
	descWatches = prometheus.NewDesc(namespace+"_watches",
		"Watches, by state (active or inactive).", []string{"state"}, nil)
	descDeliveries = prometheus.NewDesc(namespace+"_deliveries",
		"Webhook deliveries stored, by status (pending, delivered, dead).", []string{"status"}, nil)
	descQueue = prometheus.NewDesc(namespace+"_delivery_queue_due",
		"Pending deliveries due now: the delivery queue depth.", nil, nil)
	descBacklog = prometheus.NewDesc(namespace+"_delivery_retry_backlog",
		"Pending deliveries that failed at least once and wait for a retry.", nil, nil)
	descMail = prometheus.NewDesc(namespace+"_mail",
		"alert_email mail jobs, by status (pending: not yet accepted by the SMTP server; dead: given up).", []string{"status"}, nil)
)

// Describe implements prometheus.Collector.
func (g *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descAccounts, descWatches, descDeliveries, descQueue, descBacklog, descMail} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (g *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), gaugeTimeout)
	defer cancel()
	v, err := g.src.Gauges(ctx)
	if err != nil {
		g.log.Warn("metrics: reading the stored counts failed", "err", err)
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 0)
		return
	}
	gauge := func(d *prometheus.Desc, n int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(n), labels...)
	}
	gauge(descUp, 1)
	gauge(descAccounts, v.AccountsActive, "active")
	gauge(descAccounts, v.AccountsLapsed, "lapsed")
	gauge(descWatches, v.WatchesActive, "active")
	gauge(descWatches, v.WatchesInactive, "inactive")
	gauge(descDeliveries, v.DeliveriesPending, "pending")
	gauge(descDeliveries, v.DeliveriesDelivered, "delivered")
	gauge(descDeliveries, v.DeliveriesDead, "dead")
	gauge(descQueue, v.QueueDue)
	gauge(descBacklog, v.RetryBacklog)
	gauge(descMail, v.MailPending, "pending")
	gauge(descMail, v.MailDead, "dead")
}
