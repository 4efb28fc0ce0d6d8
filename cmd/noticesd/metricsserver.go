package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/noticesd/noticesd/internal/metrics"
)

// metricsServer serves one process's GET /metrics on a listener of its own:
// a worker's (it has no API) and serve's when NOTICES_METRICS_ADDR is set.
// A nil *metricsServer serves nothing.
type metricsServer struct {
	srv *http.Server
	ln  net.Listener
	log *slog.Logger
}

// listenMetrics opens the listener of m's /metrics on addr ("" serves
// nothing and returns nil), so that a taken port fails the start before
// anything else is opened; Start serves it. fix says which setting or
// flag to change when the port cannot be had.
func listenMetrics(addr, fix string, m *metrics.Metrics, log *slog.Logger) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w (set %s)", addr, err, fix)
	}
	return newMetricsServer(ln, m, log), nil
}

// newMetricsServer serves m's /metrics on ln once started.
func newMetricsServer(ln net.Listener, m *metrics.Metrics, log *slog.Logger) *metricsServer {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	return &metricsServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, log: log}
}

// Start serves /metrics in the background until Shutdown.
func (s *metricsServer) Start(context.Context) error {
	if s == nil {
		return nil
	}
	go func() {
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics server", "err", err)
		}
	}()
	s.log.Info("serving metrics", "addr", s.ln.Addr().String()+"/metrics")
	return nil
}

// Addr is the bound address.
func (s *metricsServer) Addr() string { return s.ln.Addr().String() }

// Close stops serving at once and closes the listener (after Shutdown, or
// when the start failed before Start).
func (s *metricsServer) Close() {
	if s != nil {
		_ = s.srv.Close()
		_ = s.ln.Close()
	}
}

// Shutdown stops serving, waiting for scrapes in flight until ctx ends.
func (s *metricsServer) Shutdown(ctx context.Context) error {
	if s == nil {
		return nil
	}
	return s.srv.Shutdown(ctx)
}
