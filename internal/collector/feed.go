package collector

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/store"
)

// NextSinceHeader and SinceParam carry a feed's cursor. The feed
// conventions in full:
//
// Each run GETs the URL with Accept-Encoding: gzip, and with If-None-Match
// and If-Modified-Since taken from the ETag and Last-Modified of the last
// 200 whose body was read to the end. A 304 is a successful run with
// nothing new. Any other status outside 2xx fails the run ("HTTP 500").
// The body is JSON Lines, plain or gzip-encoded (Content-Encoding: gzip, or
// a gzipped body); a line that is not a notice is reported in the log and
// skipped, and the run still succeeds.
//
// Cursor: a feed that can serve only what is new answers a 200 with the
// header X-Notices-Next-Since: <opaque value>; the next request then
// carries ?since=<that value> (replacing any since already in the URL). A
// 200 without the header clears the cursor (the next request asks for
// everything). Repeats are harmless: a known source_id is updated in place
// and is not a new arrival.
//
// A body cut off mid-way (connection reset, truncated gzip) fails the run
// and keeps the previous validators and cursor, so the next run fetches
// the same data again; the full batches stored before the cut stay stored
// (idempotent), and notices read since the last full batch are dropped.
const (
	NextSinceHeader = "X-Notices-Next-Since"
	SinceParam      = "since"
)

// maxErrorBody is how much of a non-2xx body is read (and discarded) so the
// connection can be reused.
const maxErrorBody = 4 << 10

// listedRejections is how many rejected lines a run's log record lists.
const listedRejections = 10

// feedState is what a feed run keeps for the next one.
type feedState struct {
	// Source names the feed the state belongs to (credentials redacted);
	// SourceHash identifies it exactly.
	Source       string `json:"source"`
	SourceHash   string `json:"source_sha256"`
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
	Since        string `json:"since,omitempty"`
}

// feed is an http(s) source.
type feed struct {
	url    *url.URL
	client *http.Client
	state  StateStore // nil: the state lives in mem only
	shown  string
	hash   string
	batch  int
	mem    feedState // the state when there is no state file
	idle   time.Duration
}

func newFeed(u *url.URL, cfg Config, shown string) *feed {
	client := cfg.HTTPClient
	if client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = time.Minute
		client = &http.Client{Transport: t}
	}
	sum := sha256.Sum256([]byte(u.String()))
	state := cfg.State
	if state == nil && cfg.StateFile != "" {
		state = FileState(cfg.StateFile)
	}
	return &feed{url: u, client: client, state: state, shown: shown,
		hash: hex.EncodeToString(sum[:]), batch: cfg.BatchSize, idle: cfg.BodyIdle}
}

func (f *feed) run(ctx context.Context, w store.NoticeWriter, res *RunResult) error {
	st, err := f.load(ctx)
	if err != nil {
		return err
	}
	reqCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, f.requestURL(st.Since), nil)
	if err != nil {
		return fmt.Errorf("cannot build the feed request: %v", err)
	}
	req.Header.Set("Accept", "application/jsonl, application/x-ndjson, application/json;q=0.9, */*;q=0.5")
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("User-Agent", "noticesd-collector")
	if st.ETag != "" {
		req.Header.Set("If-None-Match", st.ETag)
	}
	if st.LastModified != "" {
		req.Header.Set("If-Modified-Since", st.LastModified)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetching the feed failed: %w", withoutURL(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified:
		res.Outcome = OutcomeNotModified
		return nil
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/html" {
		return errors.New("the feed answered with an HTML page, not JSON Lines; check that NOTICES_SOURCE is the feed's URL")
	}
	idle := time.AfterFunc(f.idle, func() { cancel(errBodyStalled) })
	idle.Stop() // runs only while a read waits (idleReader)
	body := io.Reader(&idleReader{r: resp.Body, timer: idle, idle: f.idle})
	switch ce := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); ce {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return fmt.Errorf("the feed's gzip-encoded body is unreadable: %v", err)
		}
		defer zr.Close()
		body = zr
	default:
		return fmt.Errorf("the feed sent Content-Encoding %q, which the collector cannot decode; serve it plain or gzip-encoded", ce)
	}

	// A gzip stream (a .jsonl.gz served as is) checks its own end; plain
	// text has only its line ends.
	br := bufio.NewReader(body)
	if magic, _ := br.Peek(2); !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		body = &lineEndReader{r: br}
	} else {
		body = br
	}
	var report bytes.Buffer
	ww := &watchedWriter{w: w}
	sum, err := ingest.NoticesFrom(ctx, ww, body, f.shown, ingest.Options{Report: &report, BatchSize: f.batch})
	res.Read, res.New, res.Updated, res.Rejected = sum.Read, sum.Inserted, sum.Updated, sum.Rejected
	res.rejections = firstLines(report.String(), listedRejections)
	if err != nil {
		if ww.err != nil || ctx.Err() != nil {
			return err
		}
		if errors.Is(context.Cause(reqCtx), errBodyStalled) {
			err = fmt.Errorf("the body sent nothing for %v", f.idle)
		}
		return fmt.Errorf("reading the feed body failed after %d lines (%v); the next run fetches it again", sum.Read, err)
	}
	res.Outcome = OutcomeOK
	next := feedState{
		ETag:         resp.Header.Get("ETag"),
		LastModified: resp.Header.Get("Last-Modified"),
		Since:        resp.Header.Get(NextSinceHeader),
	}
	return f.save(ctx, next)
}

// requestURL is the feed URL with the since cursor, if any.
func (f *feed) requestURL(since string) string {
	if since == "" {
		return f.url.String()
	}
	u := *f.url
	q := u.Query()
	q.Set(SinceParam, since)
	u.RawQuery = q.Encode()
	return u.String()
}

// load returns the state for the next request: the state store's when one
// is configured (absent, unreadable or another feed's: empty), else the
// state kept in memory. A store that cannot be read fails the run: a
// guess (starting over) could fetch a large feed again for nothing.
func (f *feed) load(ctx context.Context) (feedState, error) {
	if f.state == nil {
		return f.mem, nil
	}
	b, err := f.state.Load(ctx)
	if err != nil {
		return feedState{}, fmt.Errorf("cannot read the collector state: %w", err)
	}
	var st feedState
	if b == nil || json.Unmarshal(b, &st) != nil || st.SourceHash != f.hash {
		return feedState{}, nil
	}
	return st, nil
}

// save keeps st for the next run in the state store, if any.
func (f *feed) save(ctx context.Context, st feedState) error {
	st.Source, st.SourceHash = f.shown, f.hash
	if f.state == nil {
		f.mem = st
		return nil
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := f.state.Save(ctx, b); err != nil {
		return err
	}
	f.mem = st
	return nil
}

// withoutURL is a request failure without the URL, which may carry
// credentials and is shown on /health.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// firstLines returns up to n non-empty lines of s.
func firstLines(s string, n int) []string {
	var out []string
	for line := range strings.Lines(s) {
		if len(out) == n {
			break
		}
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// errCutLine is a feed body that ended inside a line: with neither a
// Content-Length nor chunked framing (the body ends when the connection
// closes) this is the only sign that the connection was cut.
var errCutLine = errors.New("the body ended in the middle of a line, so the connection was cut off")

// lineEndReader passes a feed body through and, at its end, turns a last
// line that has no line end and is not a whole JSON value into errCutLine
// (a whole last line without a newline is fine).
type lineEndReader struct {
	r    io.Reader
	tail []byte // the bytes after the last line end read so far
}

// Read implements io.Reader.
func (l *lineEndReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		l.tail = append(l.tail[:0], p[i+1:n]...)
	} else {
		l.tail = append(l.tail, p[:n]...)
	}
	if err == io.EOF {
		if t := bytes.TrimSpace(l.tail); len(t) > 0 && !json.Valid(t) {
			return n, errCutLine
		}
	}
	return n, err
}

// errBodyStalled cancels a feed request whose body sent nothing for the
// idle time.
var errBodyStalled = errors.New("the feed body stalled")

// idleReader runs timer (which cancels the request) while a read waits,
// so a body fails once one read has waited idle for bytes. Time the
// collector spends storing what it read (a slow store) does not count.
type idleReader struct {
	r     io.Reader
	timer *time.Timer
	idle  time.Duration
}

// Read implements io.Reader.
func (i *idleReader) Read(p []byte) (int, error) {
	i.timer.Reset(i.idle)
	n, err := i.r.Read(p)
	i.timer.Stop()
	return n, err
}
