package metrics

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/noticesd/noticesd/internal/store"
)

type failingGauges struct{}

func (failingGauges) Gauges(context.Context) (store.Gauges, error) {
	return store.Gauges{}, errors.New("store down")
}

// scrape serves the handler once and parses the text format.
func scrape(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, rec.Body)
	}
	out := map[string]float64{}
	for name, fam := range fams {
		for _, mt := range fam.Metric {
			var labels []string
			for _, l := range mt.Label {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch {
			case mt.Counter != nil:
				out[key] = mt.Counter.GetValue()
			case mt.Gauge != nil:
				out[key] = mt.Gauge.GetValue()
			case mt.Histogram != nil:
				out[key] = float64(mt.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

// TestCounters: what the parts observe shows on a scrape; a nil *Metrics
// records nothing without failing; a store that does not answer gives
// store_gauges_up 0 and no stored counts.
func TestCounters(t *testing.T) {
	var none *Metrics
	none.ObserveRequest("/x", "GET", 200, time.Millisecond)
	none.ObserveCollectorRun(CollectorOK, 1, 0, 0)
	none.ObserveDeliveryAttempt(true)

	m := New(failingGauges{}, nil)
	m.ObserveCollectorRun(CollectorPartial, 5, 2, 3)
	m.ObserveCollectorRun(CollectorFailed, 0, 0, 0)
	m.ObserveDeliveryAttempt(true)
	m.ObserveDeliveryAttempt(false)
	m.ObserveDeliveryAttempt(false)
	m.ObserveRequest("/v1/watches/:id", "GET", 404, 3*time.Millisecond)
	none.CountAggCache(func() (int64, int64) { return 0, 0 })
	m.CountAggCache(func() (int64, int64) { return 7, 4 })
	got := scrape(t, m)
	want := map[string]float64{
		"noticesd_collector_runs_total{outcome=partial}":                            1,
		"noticesd_collector_runs_total{outcome=failed}":                             1,
		"noticesd_collector_runs_total{outcome=ok}":                                 0,
		"noticesd_ingest_rows_total{outcome=new}":                                   5,
		"noticesd_ingest_rows_total{outcome=updated}":                               2,
		"noticesd_ingest_rows_total{outcome=rejected}":                              3,
		"noticesd_delivery_attempts_total{outcome=delivered}":                       1,
		"noticesd_delivery_attempts_total{outcome=failed}":                          2,
		"noticesd_http_requests_total{method=GET,route=/v1/watches/:id,status=404}": 1,
		"noticesd_http_request_duration_seconds{method=GET,route=/v1/watches/:id}":  1,
		"noticesd_store_gauges_up{}":                                                0,
		"noticesd_agg_cache_reads_total{outcome=hit}":                               7,
		"noticesd_agg_cache_reads_total{outcome=miss}":                              4,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if _, ok := got["noticesd_accounts{state=active}"]; ok {
		t.Error("stored counts reported although the store did not answer")
	}
}
