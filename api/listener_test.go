package api

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
)

// TestConnectionLimits serves on a real listener admitting 3 connections,
// 2 per address: the third from one address is 429 rate_limited, the
// fourth overall 503 unavailable, both JSON with Retry-After; a closed
// connection frees its place.
func TestConnectionLimits(t *testing.T) {
	cfg := config.Default()
	cfg.MaxConns, cfg.MaxConnsPerIP = 3, 2
	f := newFixture(t, fixtureOpts{cfg: &cfg})
	addr := strings.TrimPrefix(f.listen(t), "http://")
	_, port, _ := net.SplitHostPort(addr)

	dial := func(from string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", "127.0.0.1:"+port)
		if err != nil {
			t.Fatalf("dial from %s: %v", from, err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	get := func(c net.Conn) (*http.Response, []byte) {
		t.Helper()
		if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("read response: %v", err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, body
	}
	refused := func(c net.Conn, status int, code string) {
		t.Helper()
		res, body := get(c)
		var e errorBody
		if res.StatusCode != status || json.Unmarshal(body, &e) != nil || string(e.Error.Code) != code || res.Header.Get("Retry-After") != "1" {
			t.Fatalf("HTTP %d Retry-After %q body %s; want %d %s with Retry-After 1", res.StatusCode, res.Header.Get("Retry-After"), body, status, code)
		}
	}
	a1, a2 := dial("127.0.0.1"), dial("127.0.0.1")
	for _, c := range []net.Conn{a1, a2} {
		if res, body := get(c); res.StatusCode != 200 {
			t.Fatalf("admitted connection: HTTP %d %s", res.StatusCode, body)
		}
	}
	refused(dial("127.0.0.1"), 429, "rate_limited")
	b1 := dial("127.0.0.2")
	if res, _ := get(b1); res.StatusCode != 200 {
		t.Fatalf("another address must be admitted: HTTP %d", res.StatusCode)
	}
	refused(dial("127.0.0.3"), 503, "unavailable")
	a1.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := dial("127.0.0.3")
		res, _ := get(c)
		if res.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed connection did not free its place: HTTP %d", res.StatusCode)
		}
		c.Close()
		time.Sleep(50 * time.Millisecond)
	}
}
