package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/noticesd/noticesd/internal/collector"
	"github.com/noticesd/noticesd/internal/store"
)

const collectAbout = `Run the collector against NOTICES_SOURCE (a directory of *.jsonl/*.jsonl.gz
files, or an http(s) JSON Lines feed). 'serve' runs it every
NOTICES_COLLECT_INTERVAL; 'collect --once' is the manual trigger. Prints the run
as JSON. Exit status: 0 ok, 3 some lines rejected, 1 the run failed.`

func runCollect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("collect", "collect --once", collectAbout, stderr)
	once := fs.Bool("once", false, "run once now and exit (required)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if !*once {
		fs.Usage()
		return &exitError{code: exitUsage, msg: "collect needs --once (serve runs the collector continuously)"}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if cfg.Source == "" {
		return &exitError{code: exitUsage, msg: "NOTICES_SOURCE is not set: give a directory or an http(s) URL of a JSON Lines feed"}
	}
	var (
		w      store.NoticeWriter
		leader func() bool
		state  collector.StateStore
	)
	if cfg.Backend == "scale" {
		st, err := openScale(ctx, cfg)
		if err != nil {
			return err
		}
		defer st.Close()
		w = st.Writer()
		// One collector at a time per namespace: the run takes the lease
		// the serve replicas share, and the cursor they share.
		l := newCollectorLease(cfg, st)
		if err := l.Start(ctx); err != nil {
			return err
		}
		defer l.Shutdown(context.WithoutCancel(ctx))
		if !l.Held() {
			return fmt.Errorf("a serve replica runs the collector of namespace %s now (it holds the collector lease, %s); it collects every NOTICES_COLLECT_INTERVAL, or stop it and run collect --once again",
				cfg.Namespace, collectorLeaseKey(cfg.Namespace))
		}
		leader, state = l.Held, collectorState{l.Record(collectorStateKey(cfg.Namespace))}
	} else {
		st, err := openStore(ctx, cfg)
		if err != nil {
			return err
		}
		defer st.Close()
		w = st
	}
	c, err := newCollector(cfg, w, newLogger(cfg), nil, leader, state)
	if err != nil {
		return err
	}
	res, runErr := c.RunOnce(ctx)
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(res)
	if code := res.ExitCode(); code != 0 {
		msg := ""
		if runErr != nil {
			msg = runErr.Error()
		} else if code == 3 {
			msg = fmt.Sprintf("%d lines were rejected", res.Rejected)
		}
		return &exitError{code: code, msg: msg}
	}
	return nil
}
