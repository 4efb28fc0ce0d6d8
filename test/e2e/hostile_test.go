package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/test/testbin"
)

// TestHeadersOnlyFlood runs the built binary and opens 200 connections that
// send only the headers of POST /v1/match declaring an 8,000,000-byte body
// (with a valid key, so the server must keep them open waiting for the
// body) and hold them. The server's RSS, read from /proc, must grow by
// less than 50 MB, a normal request meanwhile must be answered, and once
// the connections close RSS must come back within 20 MB of the start.
// The same flood without a key is answered 401 at once.
func TestHeadersOnlyFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const (
		conns       = 200
		declared    = 8_000_000
		maxGrowth   = 50 << 20
		maxResidual = 20 << 20
	)
	bin := testbin.Build(t)
	env := []string{"NOTICES_DATA_DIR=" + t.TempDir(), "NOTICES_SOURCE=none", "NOTICES_LOG_LEVEL=error", "NOTICES_WEBHOOKS=off"}
	keys := createAccount(t, bin, env, "Flood", "standard")
	srv := startServe(t, bin, env)
	pid := srv.cmd.Process.Pid
	addr := strings.TrimPrefix(srv.base, "http://")
	normal := func() {
		t.Helper()
		call(t, http.MethodGet, srv.base+"/v1/notices?limit=5", keys.ReadKey, nil, http.StatusOK, nil)
	}
	for range 20 { // warm up the process before the baseline
		normal()
	}
	baseFDs := testbin.FDs(t, pid)
	start := testbin.RSS(t, pid)

	held := make([]net.Conn, 0, conns)
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	head := fmt.Sprintf("POST /v1/match HTTP/1.1\r\nHost: %s\r\nX-API-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, keys.ReadKey, declared)
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", len(held)+1, err)
		}
		held = append(held, c)
		if _, err := c.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
	}
	testbin.WaitFor(t, 20*time.Second, "the server to hold all connections", func() bool { return testbin.FDs(t, pid) >= baseFDs+conns })
	time.Sleep(500 * time.Millisecond) // let every connection's headers be read
	peak := testbin.RSS(t, pid)
	// Descriptors other than the held connections (the keys' lookups may
	// have opened more database connections) stay; the connections go.
	heldFDs := testbin.FDs(t, pid)
	t.Logf("RSS: %d MiB at start, %d MiB with %d connections holding %d-byte bodies", start>>20, peak>>20, conns, declared)
	if peak-start >= maxGrowth {
		t.Errorf("RSS grew by %d MiB with %d header-only connections; want under %d MiB", (peak-start)>>20, conns, maxGrowth>>20)
	}
	normal()

	for _, c := range held {
		c.Close()
	}
	held = held[:0]
	testbin.WaitFor(t, 20*time.Second, "the server to close the connections", func() bool { return testbin.FDs(t, pid) <= heldFDs-conns+2 })
	var after int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		after = testbin.RSS(t, pid)
		if after-start < maxResidual || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("RSS: %d MiB after the connections closed", after>>20)
	if after-start >= maxResidual {
		t.Errorf("RSS stayed %d MiB above the start after the connections closed; want within %d MiB", (after-start)>>20, maxResidual>>20)
	}
	normal()

	t.Run("without a key", func(t *testing.T) {
		keyless := fmt.Sprintf("POST /v1/match HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", addr, declared)
		for i := range conns {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Write([]byte(keyless)); err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("connection %d: no answer without sending the body: %v", i+1, err)
			}
			res.Body.Close()
			c.Close()
			if res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("connection %d: HTTP %d, want 401", i+1, res.StatusCode)
			}
		}
	})
}
