package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/noticesd/noticesd/internal/sample"
)

const sampleAbout = `Write a realistic sample of both input files into DIR:
notices.jsonl.gz (JSON Lines notices) and company_register.tsv (the ASIC company
dataset format). The same flags, --now included, always give the same bytes;
without --now the sample ends at the current time, so it changes from one run
to the next.`

func runSample(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sample", "sample --notices N --companies M --out DIR", sampleAbout, stderr)
	n := fs.Int("notices", 50000, "number of notices")
	m := fs.Int("companies", 200000, "number of register rows")
	out := fs.String("out", "./data/sample", "output directory")
	seed := fs.Int64("seed", 1, "random seed")
	now := fs.String("now", "", "the date the sample ends (YYYY-MM-DD; default: the current time)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	end := time.Now().UTC()
	if *now != "" {
		t, err := time.Parse("2006-01-02", *now)
		if err != nil {
			return &exitError{code: exitUsage, msg: fmt.Sprintf("--now %q is not YYYY-MM-DD", *now)}
		}
		end = t.Add(18 * time.Hour)
	}
	files, err := sample.WriteFiles(sample.Options{Notices: *n, Companies: *m, Seed: *seed, Now: end}, *out)
	if err != nil {
		return err
	}
	sum := files.Summary
	fmt.Fprintf(stdout, "wrote %s (%d notices, %d deregistration, %d with a bad ACN check digit) and %s (%d rows, %d companies)\n",
		files.Notices, sum.Notices, sum.DeregistrationNotices, sum.BadACNNotices, files.Register, sum.RegisterRows, sum.Companies)
	return nil
}
