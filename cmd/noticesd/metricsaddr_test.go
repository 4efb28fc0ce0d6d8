package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/test/testbin"
)

// get is a GET of url: its status and body.
func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	res, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// TestMetricsAddr: with NOTICES_METRICS_ADDR set, serve answers GET
// /metrics on that address (real listeners, the embedded backend), with
// the API's request counters, and the API's address answers it 404
// not_found in the error shape; a taken metrics port stops serve before it
// serves, naming the setting; once serve returns, the metrics port is
// closed.
func TestMetricsAddr(t *testing.T) {
	cfg := config.Default()
	cfg.Addr = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.SecretKey = testSecretKey
	cfg.MetricsAddr = testbin.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- serve(ctx, cfg, slog.New(slog.DiscardHandler), func(a string) { addr <- a }) }()
	var api string
	select {
	case api = <-addr:
	case err := <-served:
		t.Fatalf("serve stopped: %v", err)
	}

	if status, _ := get(t, "http://"+api+"/health"); status != http.StatusOK {
		t.Fatalf("GET /health on the API: %d", status)
	}
	status, body := get(t, "http://"+api+"/metrics")
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(body, &e); status != http.StatusNotFound || err != nil || e.Error.Code != "not_found" {
		t.Errorf("GET /metrics on the API's address: %d %s, want 404 not_found in the error shape", status, body)
	}

	status, body = get(t, "http://"+cfg.MetricsAddr+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("GET /metrics on NOTICES_METRICS_ADDR %s: %d %s", cfg.MetricsAddr, status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	var health, metrics404 float64
	for _, m := range fams["noticesd_http_requests_total"].GetMetric() {
		switch route, st := labelOf(m.GetLabel(), "route"), labelOf(m.GetLabel(), "status"); {
		case route == "/health" && st == "200":
			health = m.GetCounter().GetValue()
		case st == "404":
			metrics404 += m.GetCounter().GetValue()
		}
	}
	if health != 1 || metrics404 != 1 {
		t.Errorf("the metrics port's noticesd_http_requests_total: /health 200 = %v, 404s = %v; want 1 and 1 (the API's own counters)", health, metrics404)
	}
	if _, ok := fams["noticesd_accounts"]; !ok {
		t.Error("the metrics port lacks the stored gauges (noticesd_accounts)")
	}

	t.Run("taken port", func(t *testing.T) {
		c := cfg
		c.DataDir = t.TempDir()
		err := serve(context.Background(), c, slog.New(slog.DiscardHandler), func(string) { t.Error("served with its metrics port taken") })
		if err == nil || !strings.Contains(err.Error(), "NOTICES_METRICS_ADDR") {
			t.Errorf("serve with the metrics port taken: %v, want an error naming NOTICES_METRICS_ADDR", err)
		}
	})

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after its context ended")
	}
	if c, err := net.DialTimeout("tcp", cfg.MetricsAddr, time.Second); err == nil {
		c.Close()
		t.Errorf("the metrics port %s still accepts connections after serve returned", cfg.MetricsAddr)
	}
}

// labelOf is the value of the label name among labels ("" if absent).
func labelOf(labels []*dto.LabelPair, name string) string {
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
