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
ones, stop the collector and the worker, close the store.`

// part is a long-running component of serve.
type part interface {
	Start(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "serve [--addr :8080]", serveAbout, stderr)
	addr := fs.String("addr", "", "listen address (overrides NOTICES_ADDR)")
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
	return serve(ctx, cfg, newLogger(cfg), nil)
}

// serve runs the service until ctx ends. ready, if set, is called with the
// bound address once the listener is open.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, ready func(addr string)) error {
	return serveClaimed(ctx, cfg, log, ready, nil)
}

// claim is what serve holds for its lifetime and takes before it opens
// anything: the listen address and, in the embedded mode, the data
// directory's lock.
type claim struct {
	ln   net.Listener
	lock *lockfile.Lock
}

// release gives up what c holds (the listener, if serve did not take it
// over, and the lock).
func (c *claim) release() {
	if c.ln != nil {
		_ = c.ln.Close()
	}
	_ = c.lock.Release()
}

// claimServe listens on NOTICES_ADDR and takes the data directory's lock
// (embedded), so that a command that would change data before serving
// (demo rotates the demo keys) can find out first that it could not
// serve. A failure names the process holding the address or the lock.
func claimServe(cfg config.Config) (*claim, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, errors.New(listenMessage(cfg.Addr, err))
	}
	lock, err := lockDataDir(cfg)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	return &claim{ln: ln, lock: lock}, nil
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
	srv := api.New(cfg, deps)
	held.ln = nil // closed by the server from here
	log.Info("serving", "addr", ln.Addr().String(), "data_dir", cfg.DataDir, "backend", cfg.Backend)
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
