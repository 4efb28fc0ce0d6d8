package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/noticesd/noticesd/ingest"
)

const reindexAbout = `Rebuild the Elasticsearch indices (scale mode) from the mappings built into
this binary: new versioned indices are filled from the current ones, then
the aliases move in one atomic step and the old indices are deleted.
Searches, ingests and deliveries go on meanwhile; nothing written during the
rebuild is lost. Run it after upgrading to a release whose mappings changed
(docs/elasticsearch.md).`

func runReindex(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reindex", "reindex", reindexAbout, stderr)
	quiet := fs.Bool("quiet", false, "no progress (a bar on a terminal, else a line every 5 s)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	st, err := openScale(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	var progress func(kind string, done, total int64)
	if !*quiet && !isTerminal(stderr) {
		// A log, not a terminal: a line every few seconds.
		progress = (&reindexLines{w: stderr, now: time.Now, interval: ingest.ProgressLineEvery}).report
	}
	if !*quiet && isTerminal(stderr) {
		progress = func(kind string, done, total int64) {
			pct := 100.0
			if total > 0 {
				pct = 100 * float64(done) / float64(total)
			}
			fmt.Fprintf(stderr, "\r%-22s %12d / %-12d %5.1f%%", kind, done, total, pct)
			if done >= total {
				fmt.Fprintln(stderr)
			}
		}
	}
	res, err := st.Elastic.Reindex(ctx, progress)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "notices: %d copied into %s (%d caught up after the swap)\nregister: %d rows copied into %s\n",
		res.NoticesCopied, res.Notices, res.CaughtUp, res.RegisterCopied, res.Register)
	return nil
}
