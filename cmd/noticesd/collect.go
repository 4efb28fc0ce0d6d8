package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

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
	var w store.NoticeWriter
	if cfg.Backend == "scale" {
		st, err := openScale(ctx, cfg)
		if err != nil {
			return err
		}
		defer st.Close()
		w = st.Writer()
	} else {
		st, err := openStore(ctx, cfg)
		if err != nil {
			return err
		}
		defer st.Close()
		w = st
	}
	c, err := newCollector(cfg, w, newLogger(cfg), nil, nil)
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
