package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/noticesd/noticesd/api"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/lockfile"
	"github.com/noticesd/noticesd/internal/metrics"
	"github.com/noticesd/noticesd/internal/store/sqlite"
)

const serveAbout = `Serve the API on NOTICES_ADDR. The same process runs the collector when
NOTICES_SOURCE is set (in scale mode one replica at a time, by a Redis lease)
and, in the embedded backend, the webhook delivery worker.
SIGINT/SIGTERM shut down in order: stop accepting requests, finish in-flight
ones, stop the collector and the worker, close the store.
GET /metrics is served on NOTICES_ADDR, or, with NOTICES_METRICS_ADDR or
--metrics-addr set, on that address only (NOTICES_ADDR then answers it 404).`

// part is a long-running component of serve.
type part interface {
	Start(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "serve [--addr :8080] [--metrics-addr :9464]", serveAbout, stderr)
	addr := fs.String("addr", "", "listen address (overrides NOTICES_ADDR)")
	metricsAddr := fs.String("metrics-addr", "", "listen address of GET /metrics, e.g. :9464 (overrides NOTICES_METRICS_ADDR; none serves it on the API's address)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if *addr != "" {
		cfg.Addr = *addr
	}
	switch {
	case strings.EqualFold(*metricsAddr, "none"):
		cfg.MetricsAddr = ""
	case *metricsAddr != "":
		cfg.MetricsAddr = *metricsAddr
	}
	if *addr != "" || *metricsAddr != "" {
		if err := cfg.Validate(); err != nil { // the flags are settings too
			return &exitError{code: exitUsage, msg: err.Error()}
		}
	}
	return serve(ctx, cfg, newLogger(cfg), nil)
}

// serve runs the service until ctx ends. ready, if set, is called with the
// bound address once the listener is open.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, ready func(addr string)) error {
	return serveClaimed(ctx, cfg, log, ready, nil)
}

// claim is what serve holds for its lifetime and takes before it opens
// anything: the listen address, the metrics address when it is its own
// (NOTICES_METRICS_ADDR) and, in the embedded mode, the data directory's
// lock.
type claim struct {
	ln        net.Listener
	metricsLn net.Listener // nil: /metrics is on ln
	lock      *lockfile.Lock
}

// release gives up what c holds (the listeners, if serve did not take
// them over, and the lock).
func (c *claim) release() {
	for _, ln := range []net.Listener{c.ln, c.metricsLn} {
		if ln != nil {
			_ = ln.Close()
		}
	}
	_ = c.lock.Release()
}

// claimServe listens on NOTICES_ADDR (and NOTICES_METRICS_ADDR when set)
// and takes the data directory's lock (embedded), so that a command that
// would change data before serving (demo rotates the demo keys) can find
// out first that it could not serve. A failure names the process holding
// the address or the lock.
func claimServe(cfg config.Config) (*claim, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, errors.New(listenMessage("NOTICES_ADDR", cfg.Addr, err))
	}
	c := &claim{ln: ln}
	if cfg.MetricsAddr != "" {
		if c.metricsLn, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			c.release()
			return nil, errors.New(listenMessage("NOTICES_METRICS_ADDR", cfg.MetricsAddr, err))
		}
	}
	if c.lock, err = lockDataDir(cfg); err != nil {
		c.release()
		return nil, err
	}
	return c, nil
}

// serveClaimed is serve with the address and lock already claimed (nil:
// claim them here).
func serveClaimed(ctx context.Context, cfg config.Config, log *slog.Logger, ready func(addr string), held *claim) error {
	if err := cfg.RequireSecretKey(); err != nil {
		if held != nil {
			held.release()
		}
		return &exitError{code: exitUsage, msg: err.Error()} // a setting is missing: nothing was done
	}
	if held == nil {
		var err error
		if held, err = claimServe(cfg); err != nil {
			return err
		}
	}
	defer held.release()
	ln := held.ln

	b := readBuildInfo()
	deps := api.Deps{Logger: log, Build: api.Build{Version: b.Version, Commit: b.Commit}}
	// wire starts the long-running parts of the backend (embedded: the
	// collector, dispatcher and delivery worker).
	var wire func(start func(part) error) error
	if cfg.Backend == "scale" {
		st, err := wireScale(ctx, cfg, &deps)
		if err != nil {
			return err
		}
		defer st.Close()
		if err := sealSecrets(ctx, st.Redis, log); err != nil {
			return err
		}
		warnWithoutAOF(ctx, st.Client(), log)
		wire = func(start func(part) error) error { return wireScaleParts(ctx, cfg, st, log, &deps, start) }
	} else {
		st, err := openStore(ctx, cfg)
		if err != nil {
			return err
		}
		defer st.Close()
		deps.Notices = st
		deps.Accounts = st
		deps.Checks = map[string]api.Check{"store": st.Ping}
		deps.StoreWritable = st.CheckWrite
		deps.Ready = st.Ready
		// Counters kept by the parts; stored counts read at scrape time.
		deps.Metrics = metrics.New(st, log)
		// Request limits: the embedded backend is one process, so the
		// in-process limiter is exact (scale mode shares them among
		// replicas through Redis: wireScale).
		deps.Limiter = limit.NewLocal(cfg.HeavyConcurrency, nil)
		wire = func(start func(part) error) error { return wireParts(ctx, cfg, st, log, &deps, start) }
	}

	// Parts stop (in reverse order of start) before the store closes.
	var parts []part
	startPart := func(p part) error {
		if err := p.Start(ctx); err != nil {
			return err
		}
		parts = append(parts, p)
		return nil
	}
	shutdownParts := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := len(parts) - 1; i >= 0; i-- {
			if err := parts[i].Shutdown(sctx); err != nil {
				log.Error("shutdown", "err", err)
			}
		}
	}
	defer shutdownParts()

	if err := wire(startPart); err != nil {
		return err
	}
	// /metrics on its own port (NOTICES_METRICS_ADDR): started after the
	// parts whose counters it shows, stopped before them and after the
	// API (the parts stop once serve returns, the API just below).
	if held.metricsLn != nil {
		if deps.Metrics == nil {
			deps.Metrics = metrics.New(nil, log)
		}
		if err := startPart(newMetricsServer(held.metricsLn, deps.Metrics, log)); err != nil {
			return err
		}
		held.metricsLn = nil // closed by the metrics server from here
	}
	srv := api.New(cfg, deps)
	held.ln = nil // closed by the server from here
	log.Info("serving", "addr", ln.Addr().String(), "metrics", metricsWhere(cfg), "data_dir", cfg.DataDir, "backend", cfg.Backend, "settings", cfg)
	if ready != nil {
		ready(ln.Addr().String())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		if err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Error("http shutdown", "err", err)
	}
	<-served
	return nil
}

// metricsWhere says where serve answers GET /metrics, for its log line.
func metricsWhere(cfg config.Config) string {
	if cfg.MetricsAddr == "" {
		return "on the API's address"
	}
	return cfg.MetricsAddr + " (NOTICES_METRICS_ADDR; the API's address answers /metrics 404)"
}

// serveLockName is the lock file in the data directory held by the one
// `serve` that owns it for its lifetime.
const serveLockName = "serve.lock"

// lockDataDir takes the data directory's serve lock: the worker recovers
// every delivery lease at start, so a second serve on the same directory
// would resend attempts the first has in flight. Other commands (ingest,
// accounts, collect --once) do not take it and may run beside serve.
func lockDataDir(cfg config.Config) (*lockfile.Lock, error) {
	if cfg.Backend != "embedded" {
		return nil, nil
	}
	if !sqlite.FTS5 {
		return nil, sqlite.ErrNoFTS5 // before the data directory is created
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory %s: %w (set NOTICES_DATA_DIR to a writable directory)", cfg.DataDir, err)
	}
	path := filepath.Join(cfg.DataDir, serveLockName)
	l, err := lockfile.Acquire(path)
	if errors.Is(err, lockfile.ErrHeld) {
		return nil, fmt.Errorf("another noticesd serve is already running on data directory %s: %s holds %s; stop it first, or give this one its own NOTICES_DATA_DIR", cfg.DataDir, lockHolder(path), path)
	}
	if err != nil {
		return nil, fmt.Errorf("lock data directory %s: %w", cfg.DataDir, err)
	}
	return l, nil
}
