package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/noticesd/noticesd/internal/screenclient"
)

const screenAbout = `Screen a CSV file against a running noticesd (POST /v1/match) and write
the answer to standard output: every row of FILE in its order, with the
result columns appended (identifier, result, acn, company_name,
notice_count, latest_notice_id, latest_published_date,
latest_notice_purpose, insolvency, latest_insolvency_notice_id,
latest_insolvency_published_date, latest_insolvency_notice_purpose,
notice_purposes). FILE is one ACN or ABN per line, or has a header
row with a column named acn, abn or identifier; - is standard input.

A file over 50,000 rows (or over --max-bytes) is sent in parts, each with
the header row, and the answers are joined with the header once. A 429 or
503 answer is retried after its Retry-After; progress goes to standard
error. Filters are query parameters of the screen, given with --filter:

  noticesd screen --url https://notices.example.com --key "$KEY" \
    --filter state=NSW,VIC --filter include_deregistration=false \
    book.csv > screened.csv

Exit status: 0 done, 1 the server refused a part or could not be reached
(standard output then holds the parts answered before it), 2 usage.`

func runScreen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("screen", "screen --url URL --key KEY [flags] FILE.csv > out.csv", screenAbout, stderr)
	base := fs.String("url", "", "the server's base URL, e.g. https://notices.example.com (required)")
	key := fs.String("key", "", "API key; a read key is enough (default $NOTICES_API_KEY)")
	var filters []string
	fs.Func("filter", "a filter as NAME=VALUE: appointment_type, notice_purpose, notice_code, state, status (comma-separated values), q, include_deregistration (repeatable)", func(v string) error {
		filters = append(filters, v)
		return nil
	})
	raw := fs.Bool("raw", false, "write cells that look like spreadsheet formulas as they are (no leading ')")
	bom := fs.Bool("bom", false, "start the answer with a UTF-8 byte-order mark, for Excel")
	rows := fs.Int("rows", screenclient.MaxRows, "the most rows per request (at most 50000)")
	maxBytes := fs.Int("max-bytes", screenclient.DefaultMaxBytes, "the most bytes per request: the server's NOTICES_MAX_BODY_BYTES")
	retries := fs.Int("retries", screenclient.DefaultRetries, "retries of a part after a 429, a 503 or a network error")
	quiet := fs.Bool("quiet", false, "no progress on standard error")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		fs.Usage()
		return usageError("screen needs one FILE (- for standard input), got %d arguments", len(pos))
	case *base == "":
		return usageError("screen needs --url, the server's base URL, such as https://notices.example.com")
	case *rows < 1 || *rows > screenclient.MaxRows:
		return usageError("--rows %d is out of range; give 1 to %d", *rows, screenclient.MaxRows)
	case *maxBytes < 1:
		return usageError("--max-bytes %d must be positive", *maxBytes)
	case *retries < 0:
		return usageError("--retries %d is negative", *retries)
	}
	if *key == "" {
		*key = os.Getenv("NOTICES_API_KEY")
	}
	if *key == "" {
		return usageError("screen needs --key (or NOTICES_API_KEY): an API key of the server")
	}
	q := url.Values{}
	for _, f := range filters {
		name, value, ok := cutFilter(f)
		if !ok {
			return usageError("--filter %q is not NAME=VALUE with NAME one of appointment_type, notice_purpose, notice_code, state, status, q, include_deregistration", f)
		}
		q.Add(name, value)
	}
	if *raw {
		q.Set("raw", "true")
	}
	if *bom {
		q.Set("bom", "1")
	}
	var file []byte
	if pos[0] == "-" {
		file, err = io.ReadAll(os.Stdin)
	} else {
		file, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return fmt.Errorf("screen: %w", err)
	}
	c := &screenclient.Client{URL: *base, Key: *key, Query: q, Rows: *rows, Bytes: *maxBytes, Retries: *retries}
	if *retries == 0 {
		c.Retries = -1 // none: the client's 0 is its default
	}
	if !*quiet {
		c.Progress = stderr
	}
	if err := c.Screen(ctx, file, stdout); err != nil {
		return fmt.Errorf("screen: %w", err)
	}
	return nil
}

// screenFilters are the names --filter takes.
var screenFilters = []string{"appointment_type", "notice_purpose", "notice_code", "state", "status", "q", "include_deregistration"}

// cutFilter splits NAME=VALUE, with NAME a filter of the screen.
func cutFilter(f string) (name, value string, ok bool) {
	name, value, ok = strings.Cut(f, "=")
	return name, value, ok && slices.Contains(screenFilters, name)
}
