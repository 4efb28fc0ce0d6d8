package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/screenclient"
)

// countingTransport counts the requests a client sends and keeps the
// largest body.
type countingTransport struct {
	mu      sync.Mutex
	n       int
	largest int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.largest = max(c.largest, r.ContentLength)
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// clientBook is a file for the client: a header, repeated identifiers, a
// quoted cell holding a line break (a cut must not fall inside it), a
// blank row, and one row wider than the rest in a later part (the parts'
// answers must still line up).
const clientBook = "Loan Ref,ACN,Notes\r\n" +
	"L1,123456780,first\r\n" +
	"L2,222222228,\"two\nlines\"\r\n" +
	"L3,333333332,\r\n" +
	"L4,123 456 780,again\r\n" +
	",,\r\n" +
	"L6,444444446,unknown\r\n" +
	"L7,11123456780,abn\r\n" +
	"L8,222222228,wide,extra cell\r\n" +
	"L9,000000019,last\r\n"

// TestScreenClient: noticesd screen's client splits the file into parts
// (3 rows each here; the real limit is 50,000), sends each with the
// header, and joins the answers into exactly the answer the server gives
// the whole file in one request: every column and row in order, the
// header once; filters, raw and bom travel as query parameters.
func TestScreenClient(t *testing.T) {
	f := newWatchFixture(t, nil)
	base := f.listen(t)
	for _, c := range []struct {
		name, file, query  string
		rows, parts, total int
	}{
		// clientBook has 9 rows, 8 of them identifiers: the blank row
		// goes with the part before it.
		{"header, 3 rows a part", clientBook, "", 3, 3, 9},
		{"header, 1 row a part", clientBook, "", 1, 8, 9},
		{"header, one part", clientBook, "", 0, 1, 9},
		{"no header, 2 rows a part", "123456780\n222222228\n123456780\n333333332\n444444446\n", "", 2, 3, 5},
		{"filters, raw and bom", clientBook, "state=QLD&raw=true&bom=1", 4, 2, 9},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := f.sendCSV(t, http.MethodPost, "/v1/match?"+c.query, "text/csv", "text/csv", []byte(c.file))
			if want.status != http.StatusOK {
				t.Fatalf("the one-request answer: %d %s", want.status, want.body)
			}
			cl := &screenclient.Client{URL: base, Key: f.read, Rows: c.rows, HTTP: &http.Client{Transport: &countingTransport{}}}
			cl.Query = map[string][]string{}
			for _, kv := range strings.Split(c.query, "&") {
				if k, v, ok := strings.Cut(kv, "="); ok {
					cl.Query.Add(k, v)
				}
			}
			var out, progress bytes.Buffer
			cl.Progress = &progress
			if err := cl.Screen(context.Background(), []byte(c.file), &out); err != nil {
				t.Fatalf("screen: %v\nprogress:\n%s", err, progress.String())
			}
			if !bytes.Equal(out.Bytes(), want.body) {
				t.Errorf("joined answer\n%q\nwant the one-request answer\n%q", out.String(), want.body)
			}
			if n := cl.HTTP.Transport.(*countingTransport).n; n != c.parts {
				t.Errorf("%d requests, want %d parts of %d rows", n, c.parts, c.rows)
			}
			if !strings.Contains(progress.String(), fmt.Sprintf("screen: done: %d rows in %d parts", c.total, c.parts)) {
				t.Errorf("progress lacks the summary:\n%s", progress.String())
			}
		})
	}
	t.Run("parts cut by size", func(t *testing.T) {
		// The header is 20 bytes and the rows 16 to 30: 70 bytes a part
		// holds two or three rows, never the row that would pass 70.
		ct := &countingTransport{}
		cl := &screenclient.Client{URL: base, Key: f.read, Bytes: 70, HTTP: &http.Client{Transport: ct}}
		var out bytes.Buffer
		if err := cl.Screen(context.Background(), []byte(clientBook), &out); err != nil {
			t.Fatal(err)
		}
		want := f.sendCSV(t, http.MethodPost, "/v1/match", "text/csv", "text/csv", []byte(clientBook))
		if !bytes.Equal(out.Bytes(), want.body) {
			t.Errorf("joined answer\n%q\nwant\n%q", out.String(), want.body)
		}
		if ct.n < 3 || ct.largest > 70 {
			t.Errorf("%d requests, the largest body %d bytes; want several of at most 70", ct.n, ct.largest)
		}
		cl.Bytes = 40
		err := cl.Screen(context.Background(), []byte(clientBook), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "line 3: the header and this row are 46 bytes, over the 40 bytes") {
			t.Errorf("error %v, want line 3 named as too long", err)
		}
	})
	t.Run("refused part", func(t *testing.T) {
		cl := &screenclient.Client{URL: base, Key: f.read, Rows: 2}
		var out bytes.Buffer
		err := cl.Screen(context.Background(), []byte("acn\n123456780\n333333332\n123456780\n12-34\n"), &out)
		if err == nil || !strings.Contains(err.Error(), "part 2 of 2 (rows 3 to 4, from line 4 of the file)") || !strings.Contains(err.Error(), `invalid_identifier: identifier "12-34" on line 3`) {
			t.Fatalf("error %v; want part 2's invalid_identifier", err)
		}
		if got := strings.Count(out.String(), "\n"); got != 3 {
			t.Errorf("output holds %d lines, want part 1's header and 2 rows: %q", got, out.String())
		}
	})
	t.Run("bad key", func(t *testing.T) {
		cl := &screenclient.Client{URL: base, Key: "nk_read_nope"}
		err := (cl).Screen(context.Background(), []byte("123456780\n"), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("error %v, want the server's 401", err)
		}
	})
}

// TestScreenClientRetryAfter: against the server's real rate limiter
// (limit.Local on the API's fake clock, one request a second), each part
// after the first is refused 429 with Retry-After 1; the client waits
// exactly that (its sleep moves the clock) and sends the part again.
func TestScreenClientRetryAfter(t *testing.T) {
	plans := testPlans()
	for name, p := range plans {
		p.RequestsPerSecond, p.Burst = 1, 1
		plans[name] = p
	}
	f := newWatchFixture(t, plans)
	deps := f.srv.deps
	deps.Limiter = limit.NewLocal(4, f.clock.Now)
	f.srv = New(config.Default(), deps)
	base := f.listen(t)
	var waits []time.Duration
	var progress, out bytes.Buffer
	cl := &screenclient.Client{URL: base, Key: f.read, Rows: 3, Progress: &progress,
		Sleep: func(_ context.Context, d time.Duration) error {
			waits = append(waits, d)
			f.clock.Advance(d)
			return nil
		}}
	if err := cl.Screen(context.Background(), []byte(clientBook), &out); err != nil {
		t.Fatalf("screen: %v\n%s", err, progress.String())
	}
	if want := []time.Duration{time.Second, time.Second}; fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Errorf("waited %v, want %v (Retry-After of parts 2 and 3)", waits, want)
	}
	if !strings.Contains(progress.String(), "part 2 of 3: 429 Too Many Requests: rate_limited:") {
		t.Errorf("progress does not show the 429:\n%s", progress.String())
	}
	f.clock.Advance(time.Minute)
	want := f.sendCSV(t, http.MethodPost, "/v1/match", "text/csv", "text/csv", []byte(clientBook))
	if !bytes.Equal(out.Bytes(), want.body) {
		t.Errorf("joined answer\n%q\nwant\n%q", out.String(), want.body)
	}
	t.Run("gives up", func(t *testing.T) {
		f.clock.Advance(time.Minute)
		cl := &screenclient.Client{URL: base, Key: f.read, Rows: 3, Retries: 2,
			Sleep: func(context.Context, time.Duration) error { return nil }} // the clock stands still
		err := cl.Screen(context.Background(), []byte(clientBook), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "part 2 of 3") || !strings.Contains(err.Error(), "gave up after 3 tries") {
			t.Fatalf("error %v", err)
		}
	})
}

// TestScreenClientRealLimit: a file of 50,001 rows goes as two requests,
// 50,000 rows and 1, and the answer has every row.
func TestScreenClientRealLimit(t *testing.T) {
	f := newWatchFixture(t, nil)
	base := f.listen(t)
	file := "acn\n" + strings.Repeat("123456780\n", 50000) + "333333332\n"
	ct := &countingTransport{}
	var out bytes.Buffer
	cl := &screenclient.Client{URL: base, Key: f.read, HTTP: &http.Client{Transport: ct}}
	if err := cl.Screen(context.Background(), []byte(file), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\r\n"), "\r\n")
	if ct.n != 2 || len(lines) != 50002 || !strings.HasPrefix(lines[50001], "333333332,333333332,unmatched,") {
		t.Errorf("%d requests, %d lines, last %q; want 2 requests, 50,002 lines, 333333332 unmatched last", ct.n, len(lines), lines[len(lines)-1])
	}
}
