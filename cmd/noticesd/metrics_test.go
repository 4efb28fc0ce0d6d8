package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/noticesd/noticesd/test/testbin"
)

// TestScaleMetrics: in scale mode, serve's /metrics and a worker's
// /metrics (NOTICES_WORKER_METRICS_ADDR) parse with the Prometheus text
// parser and carry the stored gauges read from Redis; the worker's carries
// the delivery attempt counters.
func TestScaleMetrics(t *testing.T) {
	t.Setenv("NOTICES_SECRET_KEY", testSecretKey)
	t.Setenv("NOTICES_ADDR", "127.0.0.1:0")
	t.Setenv("NOTICES_DATA_DIR", t.TempDir())
	t.Setenv("NOTICES_LOG_LEVEL", "error")
	cfg, st := scaleEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, name := range []string{"Active One", "Active Two", "Lapsed"} {
		c, err := st.Redis.CreateAccount(ctx, name, "standard")
		if err != nil {
			t.Fatal(err)
		}
		if name == "Lapsed" {
			if err := st.Redis.SetSubscription(ctx, c.AccountID, false); err != nil {
				t.Fatal(err)
			}
		}
	}

	log := slog.New(slog.DiscardHandler)
	addr := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- serve(ctx, cfg, log, func(a string) { addr <- a }) }()
	var serveAddr string
	select {
	case serveAddr = <-addr:
	case err := <-served:
		t.Fatalf("serve stopped: %v", err)
	}
	workerAddr := testbin.FreeAddr(t)
	var stderr bytes.Buffer
	worked := make(chan error, 1)
	go func() {
		worked <- runWorker(ctx, []string{"--metrics-addr", workerAddr, "--concurrency", "1"}, io.Discard, &stderr)
	}()

	wantGauges := map[string]float64{
		`noticesd_store_gauges_up`:                           1,
		`noticesd_accounts{state="active"}`:                  2,
		`noticesd_accounts{state="lapsed"}`:                  1,
		`noticesd_watches{state="active"}`:                   0,
		`noticesd_watches{state="inactive"}`:                 0,
		`noticesd_deliveries{status="pending"}`:              0,
		`noticesd_deliveries{status="delivered"}`:            0,
		`noticesd_deliveries{status="dead"}`:                 0,
		`noticesd_delivery_queue_due`:                        0,
		`noticesd_delivery_retry_backlog`:                    0,
		`noticesd_mail{status="pending"}`:                    0,
		`noticesd_mail{status="dead"}`:                       0,
		`noticesd_delivery_attempts_total{outcome="failed"}`: 0,
	}
	for name, url := range map[string]string{"serve": "http://" + serveAddr + "/metrics", "worker": "http://" + workerAddr + "/metrics"} {
		t.Run(name, func(t *testing.T) {
			body := scrape(t, url, worked)
			parser := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s does not parse: %v\n%s", url, err, body)
			}
			got := flatten(fams)
			for k, want := range wantGauges {
				if v, ok := got[k]; !ok || v != want {
					t.Errorf("%s = %v (found %v), want %v", k, v, ok, want)
				}
			}
		})
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	if err := <-worked; err != nil {
		t.Errorf("worker: %v\n%s", err, stderr.String())
	}
}

// scrape GETs url once the worker's listener is open (it opens once its
// store is up), failing when the worker stopped or after 30 s.
func scrape(t *testing.T, url string, worker <-chan error) []byte {
	t.Helper()
	var res *http.Response
	testbin.WaitFor(t, 30*time.Second, "GET "+url, func() bool {
		select {
		case err := <-worker:
			t.Fatalf("the worker stopped: %v", err)
		default:
		}
		var err error
		res, err = http.Get(url)
		return err == nil
	})
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v\n%s", url, res.StatusCode, err, body)
	}
	return body
}

// flatten maps each sample of fams to its value, keyed as the text format
// writes it (name{label="value",...}, labels in order).
func flatten(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, fam := range fams {
		for _, m := range fam.Metric {
			key := name
			if len(m.Label) > 0 {
				key += "{"
				for i, l := range m.Label {
					if i > 0 {
						key += ","
					}
					key += l.GetName() + `="` + l.GetValue() + `"`
				}
				key += "}"
			}
			switch {
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			}
		}
	}
	return out
}
