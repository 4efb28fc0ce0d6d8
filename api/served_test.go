package api

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/limit"
)

// servedModes are the two wirings a served fixture runs: "embedded" (the
// SQLite store for keys and watches, limit.Local) and "scale" (keys and
// watches in the Redis store, limit.Redis on its Redis and namespace, and
// the store's Gate and HeavyGate, as cmd/noticesd wires them).
var servedModes = []string{"embedded", "scale"}

// served is a fixture serving on real loopback listeners: one server,
// and in the scale mode a second replica on the same Redis namespace
// (replica; the embedded mode has none: nil).
type served struct {
	*fixture
	// logs are every server's log lines (safe to read while they serve).
	logs          *syncBuffer
	base, replica string
	// srvs are the servers behind base and replica.
	srvs []*Server
}

// newServed builds the fixture of mode with cfg and serves it; the scale
// mode also serves a second replica sharing its limits and keys.
func newServed(t *testing.T, mode string, cfg config.Config) *served {
	t.Helper()
	f := newFixture(t)
	plans := account.DefaultPlans()
	logs := &syncBuffer{}
	deps := func() Deps {
		return Deps{Notices: f.store, Accounts: f.store, Watches: f.store, Plans: plans,
			Limiter: limit.NewLocal(cfg.HeavyConcurrency, nil), Now: func() time.Time { return fixedNow },
			Logger: slog.New(slog.NewTextHandler(logs, nil))}
	}
	s := &served{fixture: f, logs: logs}
	switch mode {
	case "embedded":
		f.srv = New(cfg, deps())
		s.srvs = []*Server{f.srv}
		s.base = f.listen(t)
	case "scale":
		rs, rdb, ns := scaleRedisStore(t, f)
		for range 2 {
			d := deps()
			l := limit.NewRedis(rdb, ns, cfg.HeavyConcurrency, 0)
			d.Accounts, d.Watches, d.Limiter, d.Gate, d.HeavyGate = rs, rs, l, rs.AuthenticateAndAllow, rs.SlotGate(l)
			f.srv = New(cfg, d)
			s.srvs = append(s.srvs, f.srv)
			s.replica, s.base = s.base, f.listen(t)
		}
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	f.accounts = f.srv.deps.Accounts
	return s
}

// rawRequest is one request written as is on a connection.
type rawRequest struct {
	method, target, key string
	header              map[string]string
	body                string
}

// bytes is the request on the wire.
func (r rawRequest) bytes() string {
	var b strings.Builder
	b.WriteString(r.method + " " + r.target + " HTTP/1.1\r\nHost: test\r\n")
	if r.key != "" {
		b.WriteString(HeaderAPIKey + ": " + r.key + "\r\n")
	}
	for k, v := range r.header {
		b.WriteString(k + ": " + v + "\r\n")
	}
	if r.body != "" || r.method == http.MethodPost {
		b.WriteString("Content-Length: " + strconv.Itoa(len(r.body)) + "\r\n")
	}
	b.WriteString("\r\n" + r.body)
	return b.String()
}

// dial opens a raw connection to base (http://host:port) with a deadline.
func dial(t *testing.T, base string, d time.Duration) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(d))
	return conn
}

// readResponses reads n responses from br, in order, each with its whole
// body; a response that does not arrive fails the test.
func readResponses(t *testing.T, br *bufio.Reader, reqs []rawRequest) []response {
	t.Helper()
	var out []response
	for i, r := range reqs {
		req, err := http.NewRequest(r.method, r.target, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatalf("response %d of %d (to %s %s): %v", i+1, len(reqs), r.method, r.target, err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatalf("response %d (to %s %s): body: %v", i+1, r.method, r.target, err)
		}
		out = append(out, response{status: res.StatusCode, header: res.Header, body: body})
	}
	return out
}

// syncBuffer is a log destination a test reads while servers write to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
