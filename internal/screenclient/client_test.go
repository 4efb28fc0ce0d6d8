package screenclient

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestTarget: the URL of POST /v1/match from a base URL or the route's
// own, with the query added; anything but http(s) with a host is refused.
func TestTarget(t *testing.T) {
	for _, c := range []struct{ url, want, err string }{
		{"https://notices.example.com", "https://notices.example.com/v1/match?state=NSW", ""},
		{"https://notices.example.com/", "https://notices.example.com/v1/match?state=NSW", ""},
		{"http://127.0.0.1:8080/api", "http://127.0.0.1:8080/api/v1/match?state=NSW", ""},
		{"https://notices.example.com/v1/match?raw=true", "https://notices.example.com/v1/match?raw=true&state=NSW", ""},
		{"notices.example.com", "", "is not an http:// or https:// URL"},
		{"ftp://notices.example.com", "", "is not an http:// or https:// URL"},
	} {
		t.Run(c.url, func(t *testing.T) {
			got, err := (&Client{URL: c.url, Query: url.Values{"state": {"NSW"}}}).target()
			if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Errorf("target %q, %v; want %q, %q", got, err, c.want, c.err)
			}
		})
	}
}

// TestRetryAfter: seconds or an HTTP date; absent or unreadable, the
// backoff of the attempt (1 s, 2 s, 4 s ... at most 30 s).
func TestRetryAfter(t *testing.T) {
	for _, c := range []struct {
		h       string
		attempt int
		want    time.Duration
	}{
		{"1", 0, time.Second},
		{" 7 ", 3, 7 * time.Second},
		{"0", 0, 0},
		{"", 0, time.Second},
		{"", 2, 4 * time.Second},
		{"soon", 10, maxBackoff},
		{"-1", 1, 2 * time.Second},
		{time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), 0, 0},
	} {
		if got := retryAfter(c.h, c.attempt); got != c.want {
			t.Errorf("retryAfter(%q, %d) = %v, want %v", c.h, c.attempt, got, c.want)
		}
	}
}

// TestSplitRefuses: a file with no rows to screen, or that is not CSV, is
// refused before anything is sent.
func TestSplitRefuses(t *testing.T) {
	for _, c := range []struct{ name, file, err string }{
		{"empty", "", "holds no rows to screen"},
		{"header only", "acn,name\r\n", "holds no rows to screen"},
		{"bare quote", "123456780\n12\"3\n", "is not valid CSV"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := (&Client{}).split([]byte(c.file)); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %v, want %q", err, c.err)
			}
		})
	}
}
