package metrics

import "github.com/prometheus/client_golang/prometheus"

// ScreenCopyCounts is what a serve replica's in-memory screen copy has
// counted since the process started (scale mode).
type ScreenCopyCounts struct {
	// FromCopy and FromRedis count the bulk screens answered each way.
	FromCopy, FromRedis int64
	// Loads counts the notice copy's loads; Behind the times it found
	// itself behind the publish log's retention and reloaded.
	Loads, Behind int64
}

var (
	descScreens = prometheus.NewDesc(namespace+"_screen_copy_screens_total",
		"Bulk screens this serve answered, by source: copy (its in-memory copy) or redis (the copy could not answer exactly).",
		[]string{"source"}, nil)
	descScreenCopyLoads = prometheus.NewDesc(namespace+"_screen_copy_loads_total",
		"Loads of the screen copy's notices: at start, and each time it fell behind the publish log's retention.",
		nil, nil)
	descScreenCopyBehind = prometheus.NewDesc(namespace+"_screen_copy_behind_total",
		"Times the screen copy found the publish log trimmed past its position (NOTICES_PUBLISH_LOG_RETENTION) and reloaded.",
		nil, nil)
)

// CountScreenCopy reports the screen copy's counts read by counts at each
// scrape.
func (m *Metrics) CountScreenCopy(counts func() ScreenCopyCounts) {
	m.countAtScrape(func(ch chan<- prometheus.Metric) {
		c := counts()
		ch <- prometheus.MustNewConstMetric(descScreens, prometheus.CounterValue, float64(c.FromCopy), "copy")
		ch <- prometheus.MustNewConstMetric(descScreens, prometheus.CounterValue, float64(c.FromRedis), "redis")
		ch <- prometheus.MustNewConstMetric(descScreenCopyLoads, prometheus.CounterValue, float64(c.Loads))
		ch <- prometheus.MustNewConstMetric(descScreenCopyBehind, prometheus.CounterValue, float64(c.Behind))
	}, descScreens, descScreenCopyLoads, descScreenCopyBehind)
}
