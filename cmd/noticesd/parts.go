package main

import (
	"context"
	"log/slog"
	"path/filepath"

	"noticesd/api"
	"noticesd/collector"
	"noticesd/config"
	"noticesd/store/sqlite"
)

// wireParts starts the long-running parts that serve runs beside the API
// (collector, arrival dispatcher, delivery worker) and fills deps with what
// the API needs of them. Parts are shut down in reverse order of start.
func wireParts(ctx context.Context, cfg config.Config, st *sqlite.Store, log *slog.Logger, deps *api.Deps, start func(part) error) error {
	if cfg.Source != "" {
		c, err := newCollector(cfg, st, log)
		if err != nil {
			return err
		}
		if err := start(collectorPart{c}); err != nil {
			return err
		}
		deps.Health = collectorHealth{c}
	}
	return nil
}

// newCollector builds the collector of NOTICES_SOURCE; its HTTP cursor and
// validators persist in the data dir.
func newCollector(cfg config.Config, st *sqlite.Store, log *slog.Logger) (*collector.Collector, error) {
	return collector.New(collector.Config{
		Source:    cfg.Source,
		Interval:  cfg.CollectInterval,
		StateFile: filepath.Join(cfg.DataDir, "collector-state.json"),
		Logger:    log,
	}, st)
}

// collectorPart adapts the collector to serve's part lifecycle.
type collectorPart struct{ c *collector.Collector }

func (p collectorPart) Start(ctx context.Context) error    { p.c.Start(ctx); return nil }
func (p collectorPart) Shutdown(ctx context.Context) error { return p.c.Shutdown(ctx) }

// collectorHealth reports the collector on /health.
type collectorHealth struct{ c *collector.Collector }

func (h collectorHealth) CollectorStatus(context.Context) api.CollectorStatus {
	return api.CollectorStatus(h.c.Status())
}
