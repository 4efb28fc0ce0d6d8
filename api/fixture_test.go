package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/metrics"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/secretbox"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/sqlite"
)

// fixedNow is the clock of every test: collected_at of seeded notices.
var fixedNow = time.Date(2026, 4, 3, 0, 0, 0, 0, time.UTC)

// fixture is an API server over a real SQLite file seeded from testdata.
type fixture struct {
	srv   *Server
	store *sqlite.Store
	logs  *bytes.Buffer
	// keys: an active account's read and account keys, and a lapsed
	// account's keys.
	read, acct, lapsedRead, lapsedAcct string
	// accounts holds the keys (limit fixtures: the SQLite store, or the
	// Redis store in the scale mode's wiring); clock is the server's
	// (limit fixtures only).
	accounts store.Accounts
	clock    *movableClock
}

type fixtureOpts struct {
	cfg    *config.Config
	health HealthSource
	checks map[string]Check
	// dir is where the SQLite file goes; "" means t.TempDir().
	dir string
	// writeProbe wires the store's CheckWrite as Deps.StoreWritable.
	writeProbe bool
	// limiter replaces the default in-process limiter.
	limiter Limiter
	// ready replaces the readiness probe (nil: the store's Ready).
	ready Check
	// redis reports the Redis primary on /health and /ready.
	redis RedisSource
	// build is the version and commit /health reports.
	build Build
	// searchNodes is Deps.SearchNodes (nil: none, as in the embedded mode).
	searchNodes SearchNodesSource
}

// newFixture opens a fresh SQLite store in t.TempDir(), loads
// testdata/notices.json and testdata/register.json and builds the server.
func newFixture(t *testing.T, opts ...fixtureOpts) *fixture {
	t.Helper()
	var o fixtureOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	ctx := context.Background()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	box, err := secretbox.New(bytes.Repeat([]byte{7}, secretbox.KeySize), nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(o.dir, "notices.db"), sqlite.WithClock(func() time.Time { return fixedNow }),
		sqlite.WithSecretBox(box))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })

	if _, err := st.UpsertNotices(ctx, loadNotices(t)); err != nil {
		t.Fatalf("seed notices: %v", err)
	}
	var rows []notice.RegisterRow
	readJSON(t, "testdata/register.json", &rows)
	load, err := st.BeginRegister(ctx)
	if err != nil {
		t.Fatalf("begin register: %v", err)
	}
	if err := load.Add(ctx, rows); err != nil {
		t.Fatalf("add register rows: %v", err)
	}
	if err := load.Commit(ctx); err != nil {
		t.Fatalf("commit register: %v", err)
	}

	f := &fixture{store: st, logs: &bytes.Buffer{}}
	active, err := st.CreateAccount(ctx, "Active Co", "standard")
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	lapsed, err := st.CreateAccount(ctx, "Lapsed Co", "free")
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	if err := st.SetSubscription(ctx, lapsed.AccountID, false); err != nil {
		t.Fatalf("lapse subscription: %v", err)
	}
	f.read, f.acct = active.ReadKey, active.AccountKey
	f.lapsedRead, f.lapsedAcct = lapsed.ReadKey, lapsed.AccountKey

	cfg := config.Default()
	if o.cfg != nil {
		cfg = *o.cfg
	}
	var writable Check
	if o.writeProbe {
		writable = st.CheckWrite
	}
	ready := o.ready
	if ready == nil {
		ready = st.Ready
	}
	f.srv = New(cfg, Deps{
		Ready:         ready,
		Metrics:       metrics.New(st, nil),
		Notices:       st,
		Accounts:      st,
		Health:        o.health,
		Checks:        o.checks,
		StoreWritable: writable,
		SearchNodes:   o.searchNodes,
		Limiter:       o.limiter,
		Redis:         o.redis,
		Build:         o.build,
		Now:           func() time.Time { return fixedNow },
		Logger:        slog.New(slog.NewTextHandler(f.logs, nil)),
	})
	return f
}

// loadNotices reads testdata/notices.json into notices as a collector
// hands them to the store: id, published_date and published_at set.
func loadNotices(t *testing.T) []notice.Notice {
	t.Helper()
	var ns []notice.Notice
	readJSON(t, "testdata/notices.json", &ns)
	for i := range ns {
		at, err := time.Parse(time.RFC3339, ns[i].PublishedAt)
		if err != nil {
			t.Fatalf("fixture %s: published_at: %v", ns[i].SourceID, err)
		}
		ns[i].ID = notice.IDFor(ns[i].SourceID)
		ns[i].PublishedAt = notice.Timestamp(at)
		ns[i].PublishedDate = notice.PublishedDate(at)
	}
	return ns
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
}

// response is what a test request returned.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request through the app with an optional X-API-Key.
func (f *fixture) do(t *testing.T, method, target, key string) response {
	t.Helper()
	return f.send(t, method, target, key, nil)
}

func (f *fixture) send(t *testing.T, method, target, key string, body []byte) response {
	t.Helper()
	var r io.Reader = http.NoBody
	if body != nil {
		r = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	if body != nil {
		req.ContentLength = int64(len(body))
	}
	if key != "" {
		req.Header.Set(HeaderAPIKey, key)
	}
	return f.roundTrip(t, req)
}

// roundTrip sends req through the app and reads the whole response. Every
// api test request goes through here.
func (f *fixture) roundTrip(t *testing.T, req *http.Request) response {
	t.Helper()
	res, err := f.srv.App().Test(req, 10000)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	out := response{status: res.StatusCode, header: res.Header, body: b}
	validateResponse(t, req, out)
	return out
}

// get sends a GET with the active read key and requires 200 and JSON.
func (f *fixture) get(t *testing.T, target string, v any) {
	t.Helper()
	res := f.do(t, http.MethodGet, target, f.read)
	if res.status != http.StatusOK {
		t.Fatalf("GET %s: status %d, want 200; body %s", target, res.status, res.body)
	}
	wantJSONType(t, res)
	if err := json.Unmarshal(res.body, v); err != nil {
		t.Fatalf("GET %s: decode: %v; body %s", target, err, res.body)
	}
}

func wantJSONType(t *testing.T, res response) {
	t.Helper()
	if ct := res.header.Get("Content-Type"); ct != contentTypeJSON {
		t.Errorf("Content-Type %q, want %q", ct, contentTypeJSON)
	}
}

// wantError checks status, the exact error shape and the code.
func wantError(t *testing.T, res response, status int, code string) {
	t.Helper()
	if res.status != status {
		t.Errorf("status %d, want %d; body %s", res.status, status, res.body)
	}
	wantJSONType(t, res)
	var shape map[string]map[string]any
	if err := json.Unmarshal(res.body, &shape); err != nil || len(shape) != 1 || shape["error"] == nil {
		t.Fatalf("body %s is not {\"error\": {...}}", res.body)
	}
	e := shape["error"]
	if len(e) != 2 {
		t.Errorf("error object %v, want exactly code and message", e)
	}
	if e["code"] != code {
		t.Errorf("code %v, want %s; message %v", e["code"], code, e["message"])
	}
	if m, _ := e["message"].(string); strings.TrimSpace(m) == "" {
		t.Errorf("empty error message")
	}
}

// errorMessage returns the message of an error body.
func errorMessage(t *testing.T, res response) string {
	t.Helper()
	var b errorBody
	if err := json.Unmarshal(res.body, &b); err != nil {
		t.Fatalf("decode error body %s: %v", res.body, err)
	}
	return b.Error.Message
}
