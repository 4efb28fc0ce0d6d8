package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

const healthAbout = `Probe a running API: GET --url and exit 0 when it answers 200, 1 otherwise
(printing the status or the error). For container health checks, where the
runtime image has no curl: HEALTHCHECK CMD ["noticesd", "health"].`

func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("health", "health [--url http://127.0.0.1:8080/ready] [--timeout 5s]", healthAbout, stderr)
	url := fs.String("url", "http://127.0.0.1:8080/ready", "URL to GET")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return usageError("health: bad --url: %v", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s", *url, res.Status)
	}
	fmt.Fprintf(stdout, "%s %s\n", *url, res.Status)
	return nil
}
