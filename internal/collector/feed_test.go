//go:build sqlite_fts5

package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
)

// feedServer is a local JSON Lines feed whose answers a test sets.
type feedServer struct {
	*httptest.Server
	mu        sync.Mutex
	body      []byte
	etag      string
	lastMod   string
	nextSince string
	status    int    // non-zero: answer with this status and no body
	encoding  string // "gzip": gzip the body with Content-Encoding
	ctype     string
	requests  []request
	handler   http.HandlerFunc // replaces the default answer when set
}

// request is what the feed saw of one request.
type request struct {
	header http.Header
	query  url.Values
}

func newFeedServer(t *testing.T, body []byte) *feedServer {
	t.Helper()
	fs := &feedServer{body: body, ctype: "application/x-ndjson"}
	fs.Server = httptest.NewServer(http.HandlerFunc(fs.serve))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *feedServer) set(f func(fs *feedServer)) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f(fs)
}

func (fs *feedServer) serve(w http.ResponseWriter, r *http.Request) {
	fs.mu.Lock()
	fs.requests = append(fs.requests, request{header: r.Header.Clone(), query: r.URL.Query()})
	h := fs.handler
	body, etag, lastMod, next, status, enc, ctype := fs.body, fs.etag, fs.lastMod, fs.nextSince, fs.status, fs.encoding, fs.ctype
	fs.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	if status != 0 {
		http.Error(w, "feed trouble", status)
		return
	}
	if etag != "" && r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	if lastMod != "" {
		w.Header().Set("Last-Modified", lastMod)
	}
	if next != "" {
		w.Header().Set(NextSinceHeader, next)
	}
	w.Header().Set("Content-Type", ctype)
	if enc != "" {
		w.Header().Set("Content-Encoding", enc)
	}
	if enc == "gzip" {
		body = gzipped(body)
	}
	w.Write(body)
}

// last returns the last request the feed saw.
func (fs *feedServer) last(t *testing.T) request {
	t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.requests) == 0 {
		t.Fatal("the feed saw no request")
	}
	return fs.requests[len(fs.requests)-1]
}

// count is how many requests the feed saw.
func (fs *feedServer) count() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.requests)
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func TestFeedNormalRun(t *testing.T) {
	e := newEnv(t)
	fs := newFeedServer(t, readFile(t, "testdata/feed.jsonl"))
	c := e.collector(t, e.config(fs.URL))

	res, err := c.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	if res.Outcome != OutcomeOK || res.Read != 3 || res.New != 3 || res.Updated != 0 || res.Rejected != 0 || res.ExitCode() != ExitOK {
		t.Errorf("result %+v, want ok with 3 read and 3 new", res)
	}
	got := e.notices(t)
	if len(got) != 3 || got["7C3001"].CompanyName != "MONAKA PTY LTD" || got["7C3001"].ID != notice.IDFor("7C3001") {
		t.Errorf("stored %+v, want the feed's 3 notices", got)
	}
	if h := fs.last(t).header; h.Get("Accept-Encoding") != "gzip" || h.Get("If-None-Match") != "" || h.Get("If-Modified-Since") != "" {
		t.Errorf("first request headers %v: want Accept-Encoding gzip and no validators", h)
	}

	s := c.Status()
	ts := notice.Timestamp(start)
	if s.State != StateIdle || str(s.Source) != fs.URL || str(s.LastRunAt) != ts || str(s.LastSuccessAt) != ts ||
		s.LastError != nil || s.ConsecutiveFailures != 0 || s.NoticesCollected != 3 || s.Degraded() {
		t.Errorf("status %+v (run %s, success %s, error %s), want idle after a run at %s with 3 collected",
			s, str(s.LastRunAt), str(s.LastSuccessAt), str(s.LastError), ts)
	}

	rec := e.log.lastRun(t)
	if rec["level"] != "INFO" || rec["source"] != fs.URL || rec["outcome"] != OutcomeOK ||
		num(rec, "read") != 3 || num(rec, "new") != 3 || num(rec, "updated") != 0 || num(rec, "rejected") != 0 {
		t.Errorf("log record %v, want an INFO run record with the counts", rec)
	}
	if _, ok := rec["duration_ms"]; !ok {
		t.Errorf("log record %v has no duration_ms", rec)
	}
}

func TestFeedNotModified(t *testing.T) {
	e := newEnv(t)
	fs := newFeedServer(t, readFile(t, "testdata/feed.jsonl"))
	fs.etag, fs.lastMod = `"v1"`, "Mon, 02 Mar 2026 00:00:00 GMT"
	c := e.collector(t, e.config(fs.URL))
	if _, err := c.RunOnce(context.Background()); err != nil {
		t.Fatalf("first run: %v", err)
	}
	seq := e.latestSeq(t)

	e.clock.Add(time.Hour)
	res, err := c.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	h := fs.last(t).header
	if h.Get("If-None-Match") != `"v1"` || h.Get("If-Modified-Since") != "Mon, 02 Mar 2026 00:00:00 GMT" {
		t.Errorf("second request validators %q / %q, want the first answer's ETag and Last-Modified",
			h.Get("If-None-Match"), h.Get("If-Modified-Since"))
	}
	if res.Outcome != OutcomeNotModified || res.Read != 0 || res.New != 0 {
		t.Errorf("result %+v, want not_modified with nothing read", res)
	}
	s := c.Status()
	if s.State != StateIdle || str(s.LastSuccessAt) != notice.Timestamp(start.Add(time.Hour)) || s.NoticesCollected != 3 {
		t.Errorf("status %+v (success %s), want idle, a success at the second run, 3 collected", s, str(s.LastSuccessAt))
	}
	if got := e.latestSeq(t); got != seq {
		t.Errorf("latest notice_seq %d after a 304, want %d", got, seq)
	}
	if rec := e.log.lastRun(t); rec["outcome"] != OutcomeNotModified {
		t.Errorf("log record %v, want outcome not_modified", rec)
	}
}

func TestFeedServerError(t *testing.T) {
	e := newEnv(t)
	fs := newFeedServer(t, nil)
	fs.status = http.StatusInternalServerError
	c := e.collector(t, e.config(fs.URL))

	for i := 1; i <= 2; i++ {
		res, err := c.RunOnce(context.Background())
		if err == nil || err.Error() != "HTTP 500" {
			t.Fatalf("run %d: error %v, want HTTP 500", i, err)
		}
		if res.Outcome != OutcomeFailed || res.ExitCode() != ExitFailure {
			t.Errorf("run %d: result %+v, want failed", i, res)
		}
		s := c.Status()
		if s.State != StateFailing || str(s.LastError) != "HTTP 500" || s.ConsecutiveFailures != i ||
			s.LastSuccessAt != nil || str(s.LastRunAt) == "<nil>" || !s.Degraded() {
			t.Errorf("run %d: status %+v (error %s), want failing with %d failures", i, s, str(s.LastError), i)
		}
	}
	rec := e.log.lastRun(t)
	if rec["level"] != "ERROR" || rec["outcome"] != OutcomeFailed || rec["error"] != "HTTP 500" {
		t.Errorf("log record %v, want an ERROR record with error HTTP 500", rec)
	}
}

func TestFeedCutMidBody(t *testing.T) {
	feed := readFile(t, "testdata/feed.jsonl")
	lines := bytes.SplitAfter(feed, []byte("\n"))
	// Two whole lines and half of the third, then the connection goes.
	partial := append(append(append([]byte{}, lines[0]...), lines[1]...), lines[2][:len(lines[2])/2]...)
	cut := func(reset, noLength bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				panic(err)
			}
			length := fmt.Sprintf("Content-Length: %d\r\n", len(feed))
			if noLength { // the body ends when the connection closes
				length = "Connection: close\r\n"
			}
			fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nETag: \"v9\"\r\n%s: c9\r\n%s\r\n",
				NextSinceHeader, length)
			buf.Write(partial)
			buf.Flush()
			if reset {
				conn.(*net.TCPConn).SetLinger(0) // close with RST
			}
			conn.Close()
		}
	}
	for _, tc := range []struct {
		name            string
		reset, noLength bool
	}{{"connection reset", true, false}, {"connection closed early", false, false},
		// Without a Content-Length only the cut line shows it.
		{"closed mid-line, no Content-Length", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			fs := newFeedServer(t, feed)
			fs.etag = `"v1"`
			fs.handler = cut(tc.reset, tc.noLength)
			cfg := e.config(fs.URL)
			cfg.BatchSize = 1
			c := e.collector(t, cfg)

			res, err := c.RunOnce(context.Background())
			if err == nil || !strings.Contains(err.Error(), "reading the feed body failed") {
				t.Fatalf("error %v, want a body read failure", err)
			}
			s := c.Status()
			if s.State != StateFailing || s.ConsecutiveFailures != 1 || !strings.Contains(str(s.LastError), "reading the feed body failed") {
				t.Errorf("status %+v (error %s), want failing", s, str(s.LastError))
			}
			stored := len(e.notices(t))
			if stored != res.New || stored > 2 {
				t.Errorf("%d notices stored, result says %d new; at most the 2 whole lines may be", stored, res.New)
			}
			if !tc.reset && (res.Read != 2 || stored != 2) {
				// A clean early close delivers every byte sent: both whole
				// lines are read and (batch size 1) stored.
				t.Errorf("read %d, stored %d; want the 2 whole lines read and stored", res.Read, stored)
			}

			// The feed comes back: the cut answer's validators and cursor
			// were not kept, so everything is fetched again.
			fs.set(func(fs *feedServer) { fs.handler = nil })
			res, err = c.RunOnce(context.Background())
			if err != nil {
				t.Fatalf("run after the cut: %v", err)
			}
			req := fs.last(t)
			if req.header.Get("If-None-Match") != "" || req.query.Has(SinceParam) {
				t.Errorf("request after the cut carries %q and since=%q; the cut answer must not be remembered",
					req.header.Get("If-None-Match"), req.query.Get(SinceParam))
			}
			if res.New != 3-stored || res.Updated != stored || len(e.notices(t)) != 3 {
				t.Errorf("recovery result %+v with %d stored before, want the rest new", res, stored)
			}
			if s := c.Status(); s.State != StateIdle || s.ConsecutiveFailures != 0 || s.NoticesCollected != 3 {
				t.Errorf("status after recovery %+v, want idle with 3 collected", s)
			}
		})
	}
}

func TestFeedBrokenLines(t *testing.T) {
	e := newEnv(t)
	fs := newFeedServer(t, readFile(t, "testdata/broken.jsonl"))
	fs.etag = `"b1"`
	c := e.collector(t, e.config(fs.URL))

	res, err := c.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("RunOnce: %v (broken lines must not fail the run)", err)
	}
	if res.Outcome != OutcomeOK || res.Read != 4 || res.New != 2 || res.Rejected != 2 || res.ExitCode() != ExitRejected {
		t.Errorf("result %+v, want ok with 4 read, 2 new, 2 rejected", res)
	}
	if s := c.Status(); s.State != StateIdle || s.Degraded() || s.NoticesCollected != 2 {
		t.Errorf("status %+v, want idle and not degraded", s)
	}
	rec := e.log.lastRun(t)
	lines, _ := rec["rejected_lines"].([]any)
	if rec["level"] != "WARN" || num(rec, "rejected") != 2 || len(lines) != 2 ||
		!strings.Contains(fmt.Sprint(lines[0]), ":2: published_at") || !strings.Contains(fmt.Sprint(lines[1]), ":3: not a JSON object") {
		t.Errorf("log record %v, want a WARN record listing rejected lines 2 and 3", rec)
	}
	// The answer was taken in full: the next request is conditional.
	c.RunOnce(context.Background())
	if got := fs.last(t).header.Get("If-None-Match"); got != `"b1"` {
		t.Errorf("next request If-None-Match %q, want \"b1\"", got)
	}
}

func TestFeedRepeatsOldNotices(t *testing.T) {
	e := newEnv(t)
	fs := newFeedServer(t, readFile(t, "testdata/feed.jsonl")) // no ETag: the whole feed every time
	c := e.collector(t, e.config(fs.URL))
	if _, err := c.RunOnce(context.Background()); err != nil {
		t.Fatalf("first run: %v", err)
	}
	before := e.notices(t)
	seq := e.latestSeq(t)

	e.clock.Add(time.Hour)
	res, err := c.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if res.Read != 3 || res.New != 0 || res.Updated != 3 {
		t.Errorf("second run %+v, want 3 read, 0 new, 3 updated", res)
	}
	if got := e.latestSeq(t); got != seq {
		t.Errorf("latest notice_seq %d after repeats, want %d: repeats are not arrivals", got, seq)
	}
	for id, n := range e.notices(t) {
		if b := before[id]; n.Seq != b.Seq || n.CollectedAt != b.CollectedAt {
			t.Errorf("%s: seq %d collected %s, was %d %s", id, n.Seq, n.CollectedAt, b.Seq, b.CollectedAt)
		}
	}
	if s := c.Status(); s.NoticesCollected != 3 {
		t.Errorf("notices_collected %d, want 3 (repeats are not new)", s.NoticesCollected)
	}
}

func TestFeedRecovery(t *testing.T) {
	e := newEnv(t)
	fs := newFeedServer(t, readFile(t, "testdata/feed.jsonl"))
	fs.status = http.StatusBadGateway
	c := e.collector(t, e.config(fs.URL))

	for i := 1; i <= 3; i++ {
		c.RunOnce(context.Background())
		e.clock.Add(time.Minute)
	}
	if s := c.Status(); s.State != StateFailing || s.ConsecutiveFailures != 3 || !s.Degraded() || str(s.LastError) != "HTTP 502" {
		t.Fatalf("status after 3 failures %+v (error %s), want failing", s, str(s.LastError))
	}

	fs.set(func(fs *feedServer) { fs.status = 0 })
	recovered := e.clock.Now()
	if _, err := c.RunOnce(context.Background()); err != nil {
		t.Fatalf("run after recovery: %v", err)
	}
	s := c.Status()
	if s.State != StateIdle || s.ConsecutiveFailures != 0 || s.Degraded() || s.LastError != nil ||
		str(s.LastSuccessAt) != notice.Timestamp(recovered) || s.NoticesCollected != 3 {
		t.Errorf("status after recovery %+v (success %s), want idle, not degraded, success at %s",
			s, str(s.LastSuccessAt), notice.Timestamp(recovered))
	}
}

func TestFeedSinceCursor(t *testing.T) {
	e := newEnv(t)
	fs := newFeedServer(t, readFile(t, "testdata/feed.jsonl"))
	fs.nextSince = "c1"
	c := e.collector(t, e.config(fs.URL+"/feed?region=all&since=0"))

	steps := []struct {
		name      string
		body      []byte
		next      string
		wantSince string
		wantNew   int
	}{
		{"first request uses the URL as given", readFile(t, "testdata/feed.jsonl"), "c1", "0", 3},
		{"the cursor replaces since", readFile(t, "testdata/more.jsonl"), "c2", "c1", 2},
		{"the next cursor follows", nil, "", "c2", 0},
		{"no header clears the cursor", nil, "", "0", 0},
	}
	for _, st := range steps {
		fs.set(func(fs *feedServer) { fs.body, fs.nextSince = st.body, st.next })
		res, err := c.RunOnce(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		q := fs.last(t).query
		if q.Get(SinceParam) != st.wantSince || q.Get("region") != "all" || len(q[SinceParam]) != 1 {
			t.Errorf("%s: query %v, want since=%s and region=all", st.name, q, st.wantSince)
		}
		if res.New != st.wantNew {
			t.Errorf("%s: %d new, want %d", st.name, res.New, st.wantNew)
		}
	}
}

func TestFeedEncodings(t *testing.T) {
	feed := readFile(t, "testdata/feed.jsonl")
	tests := []struct {
		name     string
		body     []byte
		encoding string
		ctype    string
		wantErr  string
	}{
		{"gzip content encoding", feed, "gzip", "application/x-ndjson", ""},
		{"gzipped file served as is", gzipped(feed), "", "application/gzip", ""},
		{"unknown content encoding", feed, "br", "application/x-ndjson", `Content-Encoding "br"`},
		{"an HTML page", []byte("<html>login</html>"), "", "text/html; charset=utf-8", "HTML page"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			fs := newFeedServer(t, tc.body)
			fs.encoding, fs.ctype = tc.encoding, tc.ctype
			c := e.collector(t, e.config(fs.URL))
			res, err := c.RunOnce(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one mentioning %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || res.New != 3 {
				t.Fatalf("result %+v, error %v; want 3 new", res, err)
			}
		})
	}
}

func TestFeedStateFile(t *testing.T) {
	e := newEnv(t)
	fs := newFeedServer(t, readFile(t, "testdata/feed.jsonl"))
	fs.etag, fs.nextSince = `"v1"`, "c1"
	cfg := e.config(fs.URL)
	cfg.StateFile = filepath.Join(t.TempDir(), "collector-state.json")
	if _, err := e.collector(t, cfg).RunOnce(context.Background()); err != nil {
		t.Fatalf("first collector: %v", err)
	}
	var saved feedState
	if err := json.Unmarshal(readFile(t, cfg.StateFile), &saved); err != nil || saved.ETag != `"v1"` || saved.Since != "c1" || saved.Source != fs.URL {
		t.Fatalf("state file %+v (%v), want etag \"v1\", since c1 and the source", saved, err)
	}

	// A new process (another collector) picks the state up.
	res, err := e.collector(t, cfg).RunOnce(context.Background())
	req := fs.last(t)
	if err != nil || res.Outcome != OutcomeNotModified || req.header.Get("If-None-Match") != `"v1"` || req.query.Get(SinceParam) != "c1" {
		t.Errorf("second collector: %+v, %v, request %v %v; want a conditional request with since=c1", res, err, req.header, req.query)
	}

	// State of another feed is not used.
	other := cfg
	other.Source = fs.URL + "/other"
	if _, err := e.collector(t, other).RunOnce(context.Background()); err != nil {
		t.Fatalf("other feed: %v", err)
	}
	if req := fs.last(t); req.header.Get("If-None-Match") != "" || req.query.Has(SinceParam) {
		t.Errorf("another feed's request carries %v %v; state belongs to one feed", req.header, req.query)
	}
}

func TestFeedTransportErrorHidesCredentials(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(srv.URL)
	srv.Close() // nothing listens there now
	source := "http://user:hunter2@" + u.Host + "/feed?token=s3cret"
	c := e.collector(t, e.config(source))

	res, err := c.RunOnce(context.Background())
	if err == nil {
		t.Fatal("a run against a closed port succeeded")
	}
	s := c.Status()
	rec := e.log.lastRun(t)
	for what, text := range map[string]string{"last_error": str(s.LastError), "result source": res.Source,
		"log source": fmt.Sprint(rec["source"]), "log error": fmt.Sprint(rec["error"])} {
		if strings.Contains(text, "hunter2") || strings.Contains(text, "s3cret") {
			t.Errorf("%s %q shows the source's credentials", what, text)
		}
	}
	if !strings.Contains(str(s.LastError), "fetching the feed failed") {
		t.Errorf("last_error %q, want it to say the fetch failed", str(s.LastError))
	}
}

func TestFeedDoesNotBlockReads(t *testing.T) {
	e := newEnv(t)
	feed := readFile(t, "testdata/feed.jsonl")
	lines := bytes.SplitAfter(feed, []byte("\n"))
	stuck, release := make(chan struct{}), make(chan struct{})
	fs := newFeedServer(t, nil)
	fs.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Write(lines[0])
		w.Write(lines[1])
		w.(http.Flusher).Flush()
		close(stuck)
		select { // mid-body, until the test lets go
		case <-release:
		case <-r.Context().Done():
		}
		w.Write(lines[2])
	}
	cfg := e.config(fs.URL)
	cfg.BatchSize = 1
	c := e.collector(t, cfg)

	done := make(chan error, 1)
	go func() {
		_, err := c.RunOnce(context.Background())
		done <- err
	}()
	<-stuck
	// The run is blocked mid-body with batches written: reads go on.
	if s := c.Status(); s.State != StateRunning {
		t.Errorf("state %q while the feed is stuck, want running", s.State)
	}
	if _, err := e.st.Search(context.Background(), notice.SearchQuery{Sort: notice.SortPublishedDesc, Limit: 20, Page: 1}); err != nil {
		t.Errorf("Search while the collector is mid-run: %v", err)
	}
	if _, err := e.st.IndexStatus(context.Background()); err != nil {
		t.Errorf("IndexStatus while the collector is mid-run: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if n := len(e.notices(t)); n != 3 {
		t.Errorf("%d notices stored, want 3", n)
	}
}

// TestFeedBodyStalls: a body that sends a line and then nothing fails the
// run once a read has waited BodyIdle (it used to wait for the 30-minute
// run timeout, with the status idle meanwhile), keeping the cursor.
func TestFeedBodyStalls(t *testing.T) {
	feed := readFile(t, "testdata/feed.jsonl")
	first := feed[:bytes.IndexByte(feed, '\n')+1]
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	e := newEnv(t)
	fs := newFeedServer(t, feed)
	fs.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(NextSinceHeader, "s1")
		w.Write(first)
		w.(http.Flusher).Flush()
		select { // then nothing until the test ends
		case <-release:
		case <-r.Context().Done():
		}
	}
	cfg := e.config(fs.URL)
	cfg.BodyIdle = 200 * time.Millisecond
	c := e.collector(t, cfg)
	_, err := c.RunOnce(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the body sent nothing for 200ms") {
		t.Fatalf("error %v, want the stalled body named", err)
	}
	if s := c.Status(); s.State != StateFailing {
		t.Errorf("status %+v, want failing", s)
	}
	fs.set(func(fs *feedServer) { fs.handler = nil })
	if _, err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if req := fs.last(t); req.query.Has(SinceParam) {
		t.Errorf("the request after the stall carries since=%q; the stalled answer must not be remembered", req.query.Get(SinceParam))
	}
}
