// Package screenclient screens a CSV file against a remote noticesd
// (POST /v1/match, docs/api.md "Screening a file: noticesd screen"): it
// splits the file into parts the server accepts, sends each as a CSV
// upload, waits out 429 answers for their Retry-After, and writes one CSV
// answer: every row of the file in its order with the result columns
// appended, the header once.
package screenclient

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/noticesd/noticesd/internal/csvout"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/watch"
)

// Limits of one request, the server's defaults: at most MaxRows
// identifier rows (50,000) and DefaultMaxBytes of body
// (NOTICES_MAX_BODY_BYTES).
const (
	MaxRows         = ident.MaxIdentifiers
	DefaultMaxBytes = 8 << 20
)

// DefaultRetries is how many times one part is sent again after a 429,
// a 503 or a network error before the screen fails.
const DefaultRetries = 10

// maxBackoff bounds the wait before a retry that came with no Retry-After.
const maxBackoff = 30 * time.Second

// bom is the UTF-8 byte-order mark.
const bom = "\xef\xbb\xbf"

// Client screens files against one server with one key. Zero values of
// the optional fields are the defaults.
type Client struct {
	// URL is the server's base URL (https://host) or the full URL of
	// POST /v1/match.
	URL string
	// Key is the API key (a read key is enough).
	Key string
	// Query is added to every request: the screen's filters (state,
	// notice_purpose, q, include_deregistration, ...), raw and bom.
	Query url.Values
	// HTTP sends the requests; nil is http.DefaultClient.
	HTTP *http.Client
	// Rows is the most data rows per request, at most MaxRows (0 is
	// MaxRows).
	Rows int
	// Bytes is the most body bytes per request (0 is DefaultMaxBytes).
	Bytes int
	// Retries is how many times a part is retried (0 is DefaultRetries,
	// negative is none).
	Retries int
	// Progress receives a line per part and per wait; nil is silence.
	Progress io.Writer
	// Sleep waits d or until ctx ends; nil is a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// part is a slice of the file sent as one request: the header's bytes
// (if any) and rows [first, last] (1-based data rows) at body.
type part struct {
	body        []byte
	first, last int
	line        int // the file line of its first data row
	width       int // cells of its widest record, the header included
}

// Screen screens file (CSV, UTF-8, as POST /v1/match takes it) and
// writes the whole answer to out. Parts are answered in order and each
// answer is read whole before any of it is written, so out is never left
// with a half part: on an error, out holds the answers of the parts
// before the failing one.
func (c *Client) Screen(ctx context.Context, file []byte, out io.Writer) error {
	target, err := c.target()
	if err != nil {
		return err
	}
	parts, err := c.split(file)
	if err != nil {
		return err
	}
	total, width := parts[len(parts)-1].last, 0
	for _, p := range parts {
		width = max(width, p.width)
	}
	for i, p := range parts {
		c.progress("part %d of %d: rows %d to %d of %d", i+1, len(parts), p.first, p.last, total)
		answer, err := c.send(ctx, target, p, i, len(parts))
		if err != nil {
			return err
		}
		if answer, err = joinable(answer, i > 0, p.width, width); err != nil {
			return fmt.Errorf("part %d of %d: the answer is not CSV: %w", i+1, len(parts), err)
		}
		if _, err := out.Write(answer); err != nil {
			return err
		}
	}
	c.progress("done: %d rows in %d parts", total, len(parts))
	return nil
}

// target is the URL of POST /v1/match with c.Query.
func (c *Client) target() (string, error) {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("the server URL %q is not an http:// or https:// URL with a host, such as https://notices.example.com", c.URL)
	}
	if !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1/match") {
		u.Path = strings.TrimRight(u.Path, "/") + "/v1/match"
	}
	q := u.Query()
	for k, vs := range c.Query {
		for _, v := range vs {
			q.Add(k, v)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// split cuts file into parts of at most c.Rows data rows and c.Bytes
// bytes, each with the file's header row (when its first row is one, by
// the server's rule) in front. The cuts fall between CSV records, so a
// quoted cell holding a line break is never cut.
func (c *Client) split(file []byte) ([]part, error) {
	rows := c.Rows
	if rows <= 0 || rows > MaxRows {
		rows = MaxRows
	}
	limit := c.Bytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	file = bytes.TrimPrefix(file, []byte(bom))
	r := csv.NewReader(bytes.NewReader(file))
	r.FieldsPerRecord = -1
	var header []byte
	var parts []part
	var cur part
	headerWidth := 0
	// n counts the part's rows, ids those holding an identifier (the
	// server's limit counts only those: a blank row never starts a part,
	// so no part is blank rows alone).
	start, prevEnd, n, ids, row := 0, 0, 0, 0, 0
	flush := func(end int) {
		if n > 0 {
			cur.body = append(append([]byte(nil), header...), file[start:end]...)
			parts = append(parts, cur)
		}
		start, n, ids = end, 0, 0
	}
	for first := true; ; first = false {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the file is not valid CSV: %w", err)
		}
		line, _ := r.FieldPos(0)
		end := int(r.InputOffset())
		if first && watch.HeaderColumn(rec) >= 0 {
			header = file[:end:end]
			if len(header) > 0 && header[len(header)-1] != '\n' {
				header = append(header, '\r', '\n')
			}
			start, prevEnd, headerWidth = end, end, len(rec)
			continue
		}
		row++
		blank := isBlank(rec)
		if ids > 0 && ((!blank && ids == rows) || len(header)+end-start > limit) {
			flush(prevEnd)
		}
		if size := len(header) + end - start; size > limit {
			return nil, fmt.Errorf("line %d: the header and this row are %d bytes, over the %d bytes one request may carry", line, size, limit)
		}
		if n == 0 {
			cur = part{first: row, line: line, width: headerWidth}
		}
		cur.width = max(cur.width, len(rec))
		n++
		if !blank {
			ids++
		}
		cur.last, prevEnd = row, end
	}
	flush(len(file))
	if len(parts) == 0 {
		return nil, errors.New("the file holds no rows to screen; give one ACN or ABN per line, or a header row with a column named acn, abn or identifier")
	}
	return parts, nil
}

// isBlank reports whether every cell of rec is empty or spaces (the
// server's blank row).
func isBlank(rec []string) bool {
	for _, c := range rec {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}

// send posts one part, retrying after a 429 or 503 (waiting its
// Retry-After) and after a network error (waiting 1 s, 2 s, 4 s ... at
// most maxBackoff), up to c.Retries times.
func (c *Client) send(ctx context.Context, target string, p part, i, n int) ([]byte, error) {
	retries := c.Retries
	switch {
	case retries == 0:
		retries = DefaultRetries
	case retries < 0:
		retries = 0
	}
	httpc := c.HTTP
	if httpc == nil {
		httpc = http.DefaultClient
	}
	where := fmt.Sprintf("part %d of %d (rows %d to %d, from line %d of the file)", i+1, n, p.first, p.last, p.line)
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(p.body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("X-API-Key", c.Key)
		req.Header.Set("Content-Type", "text/csv; charset=utf-8")
		req.Header.Set("Accept", "text/csv")
		var wait time.Duration
		var why string
		res, err := httpc.Do(req)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			wait, why = min(time.Second<<attempt, maxBackoff), err.Error()
		default:
			body, rerr := io.ReadAll(res.Body)
			_ = res.Body.Close()
			switch {
			case res.StatusCode == http.StatusOK && rerr == nil:
				return body, nil
			case res.StatusCode == http.StatusOK:
				wait, why = min(time.Second<<attempt, maxBackoff), "the answer was cut: "+rerr.Error()
			case res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable:
				wait, why = retryAfter(res.Header.Get("Retry-After"), attempt), res.Status+": "+apiMessage(body)
			default:
				return nil, fmt.Errorf("%s: the server answered %s: %s", where, res.Status, apiMessage(body))
			}
		}
		if attempt >= retries {
			return nil, fmt.Errorf("%s: gave up after %d tries: %s", where, attempt+1, why)
		}
		c.progress("part %d of %d: %s; retrying in %s", i+1, n, why, wait)
		if err := c.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// retryAfter reads a Retry-After header: delay seconds or an HTTP date;
// absent or unreadable, the backoff of attempt.
func retryAfter(h string, attempt int) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), 0)
	}
	return min(time.Second<<attempt, maxBackoff)
}

// apiMessage is the code and message of an API error body, else the
// body's start.
func apiMessage(body []byte) string {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Code != "" {
		return e.Error.Code + ": " + e.Error.Message
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// joinable makes a part's answer ready to follow the answers before it:
// without its byte-order mark and header record unless it is the first,
// and, when the server padded the part's rows to fewer cells (width) than
// the file's widest row (widest), with empty cells added before the
// result columns, so they line up across parts. Cells are written back
// as the server wrote them (csvout, raw).
func joinable(answer []byte, later bool, width, widest int) ([]byte, error) {
	if width == widest && !later {
		return answer, nil
	}
	marked := bytes.HasPrefix(answer, []byte(bom))
	answer = bytes.TrimPrefix(answer, []byte(bom))
	r := csv.NewReader(bytes.NewReader(answer))
	r.FieldsPerRecord = -1
	if width == widest {
		if _, err := r.Read(); err != nil {
			return nil, err
		}
		return answer[r.InputOffset():], nil
	}
	var out bytes.Buffer
	if marked && !later {
		out.WriteString(bom)
	}
	w := csvout.NewWriter(&out, true)
	pad := make([]string, widest-width)
	for first := true; ; first = false {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
		if first && later {
			continue
		}
		if len(rec) < width {
			return nil, fmt.Errorf("a record of %d cells, fewer than the part's %d", len(rec), width)
		}
		if err := w.Write(slices.Concat(rec[:width], pad, rec[width:])); err != nil {
			return nil, err
		}
	}
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Client) progress(format string, a ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "screen: "+format+"\n", a...)
	}
}
