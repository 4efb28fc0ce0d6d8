package api

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/notice"
)

// seedLargeExport stores notices whose CSV export is about size bytes
// (long company names), more than the loopback socket buffers hold, so
// a client that reads slowly keeps the server writing.
func seedLargeExport(t *testing.T, f *fixture, size int) {
	t.Helper()
	base := loadNotices(t)
	name := strings.Repeat("Slow Reader Holdings ", 150) // ~3 KB a row
	var batch []notice.Notice
	for i := range size / len(name) {
		n := base[i%len(base)]
		n.SourceID = fmt.Sprintf("slow-%d", i)
		n.ID = notice.IDFor(n.SourceID)
		n.CompanyName = name + strconv.Itoa(i)
		batch = append(batch, n)
	}
	if _, err := f.store.UpsertNotices(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
}

// dialSlow opens a connection to base whose receive buffer is as small
// as the kernel allows (set before the handshake, so the window stays
// small): what the client does not read stays on the server.
func dialSlow(t *testing.T, base string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	return conn
}

// cutExport matches the log line of an export cut before its end.
var cutExport = regexp.MustCompile(`msg="CSV export cut before its end[^"]*" rows_sent=(\d+) rows_total=(\d+)`)

// TestSlowExportHoldsNoSlot: a CSV export read slowly through a real
// socket does not hold a heavy slot while the client reads, so another
// account's bulk screens run beside it (200, not 429 after their wait),
// in both modes (in the scale mode on the other replica too, the slots
// being shared in Redis). With one heavy slot for the service and a short
// queue, before the fix the export held the slot until its last byte was
// written, so every screen waited out NOTICES_HEAVY_WAIT and got 429. The
// export the client stops reading is cut at the write timeout, and the
// cut is logged with the rows sent (before, nothing was logged).
func TestSlowExportHoldsNoSlot(t *testing.T) {
	for _, mode := range servedModes {
		t.Run(mode, func(t *testing.T) {
			cfg := config.Default()
			cfg.HeavyConcurrency = 1
			cfg.HeavyWait = 300 * time.Millisecond
			cfg.WriteTimeout = 3 * time.Second // the slow reader is cut then
			s := newServed(t, mode, cfg)
			seedLargeExport(t, s.fixture, 8<<20)
			other, err := s.accounts.CreateAccount(context.Background(), "Other Co", "standard")
			if err != nil {
				t.Fatal(err)
			}

			conn := dialSlow(t, s.base)
			export := rawRequest{method: http.MethodGet, target: "/v1/notices?include_deregistration=true", key: s.read,
				header: map[string]string{"Accept": "text/csv"}}
			if _, err := io.WriteString(conn, export.bytes()); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("export: %v", err)
			}
			if res.StatusCode != http.StatusOK {
				t.Fatalf("export: HTTP %d", res.StatusCode)
			}
			// The client reads 1 KiB every 10 ms (100 KiB/s) while the
			// screens run, then stops reading.
			stop, stopped := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(stopped)
				buf := make([]byte, 1<<10)
				for {
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
					if _, err := res.Body.Read(buf); err != nil {
						return
					}
				}
			}()
			targets := []string{s.base}
			if s.replica != "" {
				targets = append(targets, s.replica)
			}
			body := `{"identifiers":["123456780","333333332"]}`
			for i := range 3 {
				for _, base := range targets {
					req, err := http.NewRequest(http.MethodPost, base+"/v1/match", strings.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					req.Header.Set(HeaderAPIKey, other.ReadKey)
					r, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(r.Body)
					r.Body.Close()
					if r.StatusCode != http.StatusOK {
						t.Errorf("screen %d on %s beside a slow export: HTTP %d %s, want 200", i+1, base, r.StatusCode, b)
					}
				}
			}
			close(stop)
			<-stopped

			// The server cuts the export at its write timeout and logs it.
			deadline := time.Now().Add(15 * time.Second)
			var m []string
			for m == nil && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				m = cutExport.FindStringSubmatch(s.logs.String())
			}
			if m == nil {
				t.Fatalf("the export cut at the write timeout was not logged: %s", s.logs.String())
			}
			sent, _ := strconv.Atoi(m[1])
			total, _ := strconv.Atoi(m[2])
			if sent <= 0 || sent >= total {
				t.Errorf("logged rows_sent=%d of rows_total=%d, want some but not all", sent, total)
			}
		})
	}
}
