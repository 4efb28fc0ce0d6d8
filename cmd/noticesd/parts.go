package main

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/noticesd/noticesd/api"
	"github.com/noticesd/noticesd/internal/collector"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/metrics"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/sqlite"
	"github.com/noticesd/noticesd/internal/webhook"
	"github.com/noticesd/noticesd/worker"
)

// wireParts starts the long-running parts that serve runs beside the API
// (collector, arrival dispatcher, delivery worker, alert_email mailer) and fills deps with what
// the API needs of them. Parts are shut down in reverse order of start.
func wireParts(ctx context.Context, cfg config.Config, st *sqlite.Store, log *slog.Logger, deps *api.Deps, start func(part) error) error {
	deps.Watches = st
	// The bulk screen and watch creation use an in-memory index of the
	// register and the notices' identifiers; load it now rather than on the
	// first request. Requests before it is ready load it themselves.
	go func() {
		if err := st.WarmCompanyIndex(ctx); err != nil && ctx.Err() == nil {
			log.Warn("warming the company index", "err", err)
		}
	}()
	// Delivery starts before the collector, so on shutdown (reverse order)
	// the collector stops first and no arrival is left unmatched.
	if cfg.Webhooks {
		if err := wireDelivery(cfg, st, log, deps, start); err != nil {
			return err
		}
	}
	m, err := newMailer(cfg, st, st, log.With("part", "mail"))
	if err != nil {
		return err
	}
	if m != nil {
		if err := start(m); err != nil {
			return err
		}
	}
	deps.Mail = newMailHealth(cfg, st, log)
	if cfg.Source != "" {
		c, err := newCollector(cfg, st, log, deps.Metrics, nil, nil)
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

// wireDelivery starts the webhook delivery pipeline of the embedded mode
// (the worker and its dispatcher) and gives the API the webhook store. With
// NOTICES_WEBHOOKS=off none of this runs and the webhook routes answer
// webhook_unavailable.
func wireDelivery(cfg config.Config, st *sqlite.Store, log *slog.Logger, deps *api.Deps, start func(part) error) error {
	sender, err := newSender(cfg, deps.Metrics)
	if err != nil {
		return err
	}
	w, err := worker.New(worker.Config{
		Queue:     st,
		Sender:    sender,
		RetryUnit: cfg.DeliveryRetryUnit,
		Logger:    log.With("part", "delivery"),
	})
	if err != nil {
		return err
	}
	if err := start(w); err != nil {
		return err
	}
	deps.Webhooks = st
	if deps.TestSender, err = newTestSender(cfg); err != nil {
		return err
	}
	// A registration queues its backlog: wake the worker rather than wait
	// for its next look (at most worker.DefaultIdlePoll). A reactivation's
	// released deliveries are found within that poll.
	deps.OnWatchChange = func(context.Context, string) { w.Wake() }
	return nil
}

// newSender is the one webhook sender of a process, embedded or scale:
// NOTICES_DELIVERY_TIMEOUT, NOTICES_WEBHOOK_ALLOW_PRIVATE and
// NOTICES_WEBHOOK_CA_FILE.
// m, if set, counts the attempts by outcome.
func newSender(cfg config.Config, m *metrics.Metrics) (*webhook.Sender, error) {
	return webhook.NewSender(webhook.SenderConfig{
		Timeout:      cfg.DeliveryTimeout,
		AllowPrivate: cfg.WebhookAllowPrivate,
		CAFile:       cfg.WebhookCAFile,
		Observe:      func(r webhook.Result) { m.ObserveDeliveryAttempt(r.OK) },
	})
}

// newTestSender is the sender of a process's webhook test deliveries
// (POST /v1/watches/{id}/webhook/test): configured as newSender's, with
// endpoint slots of its own, and not counted as delivery attempts.
func newTestSender(cfg config.Config) (*webhook.Sender, error) {
	return webhook.NewSender(webhook.SenderConfig{
		Timeout:      cfg.DeliveryTimeout,
		AllowPrivate: cfg.WebhookAllowPrivate,
		CAFile:       cfg.WebhookCAFile,
	})
}

// newCollector builds the collector of NOTICES_SOURCE. Its HTTP cursor and
// validators persist in state when set (scale mode: Redis, shared by the
// replicas), else in the data dir.
// m, if set, counts its runs and the rows they load; leader, if set, gates
// each run and each store write (collector.Config.Leader).
func newCollector(cfg config.Config, w store.NoticeWriter, log *slog.Logger, m *metrics.Metrics, leader func() bool, state collector.StateStore) (*collector.Collector, error) {
	return collector.New(collector.Config{
		Source:    cfg.Source,
		Interval:  cfg.CollectInterval,
		StateFile: filepath.Join(cfg.DataDir, "collector-state.json"),
		State:     state,
		Logger:    log,
		OnRun:     func(r collector.RunResult) { observeCollectorRun(m, r) },
		Leader:    leader,
		// A replica waiting for the lease asks as often as the lease
		// itself is tried (a third of NOTICES_COLLECTOR_LEASE), so it
		// collects as soon as it takes the lease over.
		LeaderPoll: min(collector.DefaultLeaderPoll, cfg.CollectorLease/3),
	}, w)
}

// observeCollectorRun counts a collector run by outcome: partial when lines
// or files were rejected.
func observeCollectorRun(m *metrics.Metrics, r collector.RunResult) {
	outcome := r.Outcome
	if r.ExitCode() == collector.ExitRejected {
		outcome = metrics.CollectorPartial
	}
	m.ObserveCollectorRun(outcome, r.New, r.Updated, r.Rejected)
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
