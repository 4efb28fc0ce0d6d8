package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"golang.org/x/term"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/store/redisstore"
)

const ingestAbout = `Load data into the store. Safe to run while 'noticesd serve' runs against the
same NOTICES_DATA_DIR: newly arrived notices are picked up by the running server.

  noticesd ingest notices FILE...   JSON Lines notices (.jsonl or .jsonl.gz, '-' for stdin).
                                    Re-ingesting a known source_id updates it in place.
  noticesd ingest register FILE     the ASIC company dataset (tab-separated, as published);
                                    replaces the register as a whole.

Bad lines are reported with their line numbers and skipped; the rest loads.
Exit status: 0 every line loaded, 3 some lines were rejected, 1 failure,
2 usage error (nothing was done). Flags may come after the arguments.`

func runIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ingest", "ingest notices FILE... | ingest register FILE", ingestAbout, stderr)
	quiet := fs.Bool("quiet", false, "no progress (a bar on a terminal, else a line every 5 s)")
	batch := fs.Int("batch", 0, fmt.Sprintf("rows per write call (0 = default: %d notices, %d in scale mode; %d register rows); larger batches load faster and take more memory; in embedded mode a batch holds the database's write lock while it is written",
		ingest.DefaultNoticeBatch, redisstore.DefaultNoticeBatch, ingest.DefaultRegisterBatch))
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(rest) < 2 || (rest[0] != "notices" && rest[0] != "register") || (rest[0] == "register" && len(rest) != 2) {
		fs.Usage()
		return &exitError{code: exitUsage, msg: "ingest needs 'notices FILE...' or 'register FILE'"}
	}
	if *batch < 0 {
		return usageError("ingest: --batch %d is negative; give a number of rows, or 0 for the default", *batch)
	}
	if stdin := slices.Index(rest[1:], "-"); stdin >= 0 && slices.Contains(rest[stdin+2:], "-") {
		return usageError("ingest: standard input (-) is given more than once; it can be read only once")
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if cfg.Backend == "scale" {
		return ingestScale(ctx, cfg, rest, *quiet, *batch, stdout, stderr)
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()

	opt := ingestOptions(stderr, *quiet, *batch)
	var sum ingest.Summary
	switch rest[0] {
	case "notices":
		sum, err = ingest.Notices(ctx, st, rest[1:], opt)
	case "register":
		sum, err = ingest.Register(ctx, st, rest[1], opt)
		if err == nil {
			// Watches match through the register (ABN <-> ACN): re-expand
			// their stored match keys against the new register.
			if n, rerr := st.RefreshWatchKeys(ctx); rerr != nil {
				err = fmt.Errorf("register loaded, but refreshing watch match keys failed (run the load again): %w", rerr)
			} else if n > 0 {
				fmt.Fprintf(stderr, "refreshed match keys of %d watches\n", n)
			}
		}
	}
	return ingestResult(sum, err, stdout)
}

// ingestOptions reports to stderr, with a progress bar on a terminal and
// a progress line every ingest.ProgressLineEvery anywhere else (a
// container or CI log, a pipe); --quiet shows neither.
func ingestOptions(stderr io.Writer, quiet bool, batch int) ingest.Options {
	opt := ingest.Options{Report: stderr, BatchSize: batch}
	if !quiet {
		opt.Progress = stderr
		opt.ProgressLines = !isTerminal(stderr)
	}
	return opt
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// ingestResult prints the summary and turns rejected lines into exit 3.
func ingestResult(sum ingest.Summary, err error, stdout io.Writer) error {
	if err != nil {
		if sum.Read > 0 {
			// Batches written before the failure stay written: say how far it got.
			fmt.Fprintln(stdout, sum.String())
		}
		return err
	}
	fmt.Fprintln(stdout, sum.String())
	if code := sum.ExitCode(); code != 0 {
		return &exitError{code: code, msg: fmt.Sprintf("%d lines were rejected (listed above)", sum.Rejected)}
	}
	return nil
}

// ingestScale loads into Elasticsearch and Redis (scale mode), through the same
// ingest loop, validation, progress and summary as embedded mode.
func ingestScale(ctx context.Context, cfg config.Config, rest []string, quiet bool, batch int, stdout, stderr io.Writer) error {
	st, err := openScale(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	// Writer stores in Elasticsearch, then brings Redis along: the bulk
	// screen's identifier sets, and (register loads) the new register
	// generation and every watch's match keys.
	w := st.Writer()
	opt := ingestOptions(stderr, quiet, batch)
	var sum ingest.Summary
	if rest[0] == "notices" {
		sum, err = ingest.Notices(ctx, w, rest[1:], opt)
	} else {
		sum, err = ingest.Register(ctx, w, rest[1], opt)
	}
	return ingestResult(sum, err, stdout)
}
