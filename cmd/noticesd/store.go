package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/store/sqlite"
)

// loadConfig reads the NOTICES_* settings and validates them.
func loadConfig() (config.Config, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		// A wrong setting is a usage error: nothing was done.
		return cfg, &exitError{code: exitUsage, msg: err.Error()}
	}
	return cfg, nil
}

// openStore opens the embedded store of the configured data dir.
func openStore(ctx context.Context, cfg config.Config) (*sqlite.Store, error) {
	if cfg.Backend != "embedded" {
		return nil, fmt.Errorf("this command opens the embedded store, but NOTICES_BACKEND=%s", cfg.Backend)
	}
	box, err := cfg.SecretBox()
	if err != nil {
		return nil, err
	}
	st, err := sqlite.Open(ctx, cfg.DatabasePath(), sqlite.WithPlans(cfg.Plans), sqlite.WithSecretBox(box))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", cfg.DatabasePath(), err)
	}
	return st, nil
}

// newLogger returns the logger of NOTICES_LOG_FORMAT (json or text) at
// NOTICES_LOG_LEVEL, writing to standard error.
func newLogger(cfg config.Config) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, opts))
}
