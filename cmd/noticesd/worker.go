package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/noticesd/noticesd/internal/metrics"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/store/scale"
	"github.com/noticesd/noticesd/worker/scheduler"
)

const workerAbout = `Run scale mode's webhook delivery (NOTICES_BACKEND=scale): match arriving
notices to watches, turn matches into deliveries and attempt them on asynq
workers, retried after n x NOTICES_DELIVERY_RETRY_UNIT. Run as many worker
processes as the load needs; SIGTERM stops taking work and waits for the
attempts in flight (the rest run again elsewhere, under the same delivery id).
With NOTICES_SMTP_URL set it also sends alert_email mail (deactivation alerts
and the daily digest at NOTICES_DIGEST_TIME) from the namespace's mail queue.
With NOTICES_WORKER_METRICS_ADDR or --metrics-addr set it serves GET /metrics
there: delivery attempts by outcome and the stored gauges (docs/operating.md).`

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("worker", "worker [--concurrency N]", workerAbout, stderr)
	conc := fs.Int("concurrency", 0, "delivery attempts in flight in this process (overrides NOTICES_WORKER_CONCURRENCY)")
	metricsAddr := fs.String("metrics-addr", "", "listen address of this worker's GET /metrics, e.g. :9464 (overrides NOTICES_WORKER_METRICS_ADDR; off serves none)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if cfg.Backend != "scale" {
		return fmt.Errorf("noticesd worker runs scale mode's delivery: set NOTICES_BACKEND=scale (the embedded backend delivers inside serve)")
	}
	if err := cfg.RequireSecretKey(); err != nil {
		return &exitError{code: exitUsage, msg: err.Error()} // a setting is missing: nothing was done
	}
	if *conc > 0 {
		cfg.WorkerConcurrency = *conc
	}
	switch {
	case strings.EqualFold(*metricsAddr, "off"):
		cfg.WorkerMetricsAddr = ""
	case *metricsAddr != "":
		cfg.WorkerMetricsAddr = *metricsAddr
	}
	log := newLogger(cfg).With("command", "worker")
	st, err := scale.Open(ctx, cfg, redisstore.Options{NoMatchOnRead: true})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := sealSecrets(ctx, st.Redis, log); err != nil {
		return err
	}
	warnWithoutAOF(ctx, st.Client(), log)
	// Delivery attempts are counted here, where they are made; the stored
	// gauges are the same Redis reads serve's /metrics makes.
	m := metrics.New(st.Redis, log)
	trackRedis(st, cfg.Namespace, m)
	sender, err := newSender(cfg, m)
	if err != nil {
		return err
	}
	ms, err := listenMetrics(cfg.WorkerMetricsAddr, "NOTICES_WORKER_METRICS_ADDR or --metrics-addr; off serves none", m, log)
	if err != nil {
		return err
	}
	defer ms.Close()
	if err := ms.Start(ctx); err != nil {
		return err
	}
	mailer, err := newMailer(cfg, st.Redis, st.Redis, log.With("part", "mail"))
	if err != nil {
		return err
	}
	sched, err := scheduler.New(scheduler.Config{
		Redis: st.Client(), Namespace: cfg.Namespace, Ledger: st.Redis, Sender: sender,
		RetryUnit: cfg.DeliveryRetryUnit, Concurrency: cfg.WorkerConcurrency,
		Logger: log.With("part", "delivery"),
	})
	if err != nil {
		return err
	}
	if err := sched.Start(ctx); err != nil {
		return err
	}
	if mailer != nil {
		if err := mailer.Start(ctx); err != nil {
			return err
		}
	}
	log.Info("delivering", "namespace", cfg.Namespace, "queue", scheduler.QueueName(cfg.Namespace), "concurrency", cfg.WorkerConcurrency, "settings", cfg)
	<-ctx.Done()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.DeliveryTimeout+15*time.Second)
	defer cancel()
	if mailer != nil {
		if err := mailer.Shutdown(sctx); err != nil {
			log.Error("mailer shutdown", "err", err)
		}
	}
	err = sched.Shutdown(sctx)
	if err := ms.Shutdown(sctx); err != nil {
		log.Error("metrics shutdown", "err", err)
	}
	return err
}

const queueAbout = `Print the webhook delivery queue of scale mode (NOTICES_BACKEND=scale) as JSON:
pending, active, scheduled, retry and archived task counts, from asynq's Inspector.`

func runQueue(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("queue", "queue", queueAbout, stderr)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if cfg.Backend != "scale" {
		return fmt.Errorf("noticesd queue reads scale mode's delivery queue: set NOTICES_BACKEND=scale")
	}
	rdb, err := redisstore.Connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer rdb.Close()
	c, err := scheduler.QueueCounts(rdb, cfg.Namespace)
	if err != nil {
		return err
	}
	out := struct {
		Queue string `json:"queue"`
		scheduler.Counts
	}{scheduler.QueueName(cfg.Namespace), c}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
