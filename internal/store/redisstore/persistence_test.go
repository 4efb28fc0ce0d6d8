package redisstore

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/sqlite"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/internal/watch"
)

// ownRedis is a redis-server process this test starts (and restarts) in a
// directory of its own, with appendonly yes: the shared dev server is never
// restarted.
type ownRedis struct {
	dir, port string
	cmd       *exec.Cmd
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

func startOwnRedis(t *testing.T) *ownRedis {
	t.Helper()
	testservers.Redis(t) // the live suite's gate: loud skip or CI failure without Redis
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("this test starts its own redis-server to restart it, and none is on PATH: %v", err)
	}
	r := &ownRedis{dir: t.TempDir(), port: freePort(t)}
	r.start(t, bin)
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *ownRedis) start(t *testing.T, bin string) {
	t.Helper()
	r.cmd = exec.Command(bin, "--port", r.port, "--bind", "127.0.0.1", "--dir", r.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "")
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + r.port})
	defer rdb.Close()
	for i := 0; ; i++ {
		if rdb.Ping(context.Background()).Err() == nil {
			return
		}
		if i == 200 {
			t.Fatalf("own redis-server on port %s did not answer", r.port)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// stop kills the server without letting it save: only the AOF survives.
func (r *ownRedis) stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		r.cmd = nil
	}
}

func (r *ownRedis) url() string { return "redis://127.0.0.1:" + r.port + "/0" }

// store opens a Store on the server under namespace ns, with a fresh
// SQLite notice source.
func (r *ownRedis) store(t *testing.T, ns string) (*Store, redis.UniversalClient, *sqlite.Store) {
	t.Helper()
	rdb, err := Dial(config.Config{RedisURL: r.url()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	sq, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "n.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	s, err := New(rdb, ns, sq, Options{Secrets: testBox(t)})
	if err != nil {
		t.Fatal(err)
	}
	return s, rdb, sq
}

// TestAOFRestart: accounts, watches and the match log survive a kill -9 of
// a redis-server running with appendonly yes.
func TestAOFRestart(t *testing.T) {
	ctx := context.Background()
	r := startOwnRedis(t)
	s, rdb, sq := r.store(t, "aof")
	acc, err := s.CreateAccount(ctx, "Durable", "standard")
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, acn(1), acn(2)), Name: "kept"},
		acc.AccountID, time.Now()), account.DefaultPlans()["standard"])
	if err != nil {
		t.Fatal(err)
	}

	if _, err := s.SetWebhook(ctx, acc.AccountID, w.ID, "https://hooks.example.com/kept", "whsec_kept", time.Now()); err != nil {
		t.Fatal(err)
	}
	// A notice arriving after the watch: matched and owed a delivery.
	arrived := recent(genNotice(t, storetest.Notices(t)[0], "AOF-1", 1), time.Now())
	if _, err := (composite{notices: sq, rs: s}).UpsertNotices(ctx, []notice.Notice{arrived}); err != nil {
		t.Fatal(err)
	}
	if err := s.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}

	r.stop()
	bin, _ := exec.LookPath("redis-server")
	r.start(t, bin)

	if n, err := rdb.ZCard(ctx, s.akey(acc.AccountID, outboxKey)).Result(); err != nil || n != 1 {
		t.Errorf("after the restart the delivery outbox holds %d (%v), want the 1 pending", n, err)
	}
	page, err := s.Matches(ctx, acc.AccountID, w.ID, 0, 10)
	if err != nil || len(page.Notices) != 1 || page.Notices[0].SourceID != "AOF-1" {
		t.Errorf("after the restart the match log gives %+v, %v", page, err)
	}
	p, err := s.Authenticate(ctx, acc.AccountKey)
	if err != nil || p.Account.ID != acc.AccountID {
		t.Fatalf("after the restart the account key gives %+v, %v", p, err)
	}
	got, err := s.Watch(ctx, acc.AccountID, w.ID)
	if err != nil || got.Name != "kept" || len(got.Identifiers) != 2 {
		t.Fatalf("after the restart the watch reads %+v, %v", got, err)
	}
	n, err := rdb.SCard(ctx, s.akey(acc.AccountID, companiesKey)).Result()
	if err != nil || n != 2 {
		t.Errorf("after the restart the quota counts %d companies (%v), want 2", n, err)
	}
}

// TestRedisDown: with Redis gone every call fails fast with
// backend_unavailable (503), and the same store recovers by itself once
// Redis is back.
func TestRedisDown(t *testing.T) {
	ctx := context.Background()
	r := startOwnRedis(t)
	s, _, _ := r.store(t, "down")
	acc, err := s.CreateAccount(ctx, "Patient", "standard")
	if err != nil {
		t.Fatal(err)
	}
	r.stop()
	calls := map[string]func() error{
		"Authenticate": func() error { _, err := s.Authenticate(ctx, acc.AccountKey); return err },
		"ListWatches":  func() error { _, err := s.ListWatches(ctx, acc.AccountID); return err },
		"CreateWatch": func() error {
			_, err := s.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, acn(3))}, acc.AccountID, time.Now()),
				account.DefaultPlans()["standard"])
			return err
		},
		"Screen":  func() error { _, err := s.Screen(ctx, idsOf(t, acn(3)), noFilter()); return err },
		"Matches": func() error { _, err := s.Matches(ctx, acc.AccountID, "wat_x", 0, 10); return err },
	}
	for name, call := range calls {
		err := call()
		if !errs.Is(err, errs.BackendUnavailable) {
			t.Errorf("%s with Redis down: %v, want backend_unavailable", name, err)
			continue
		}
		// The message names the server and the step, not only watches:
		// Redis holds the accounts and keys every route checks first.
		if msg := err.Error(); !strings.Contains(msg, "Redis (accounts, API keys, quotas and watches) does not answer, so the service could not ") ||
			!strings.HasSuffix(msg, "; retry shortly") {
			t.Errorf("%s with Redis down says %q, want it to name Redis, the step and the retry", name, msg)
		}
	}
	if _, err := s.Authenticate(ctx, acc.AccountKey); err == nil || !strings.Contains(err.Error(), "could not authenticate;") {
		t.Errorf("Authenticate with Redis down says %v, want it to say it could not authenticate", err)
	}
	bin, _ := exec.LookPath("redis-server")
	r.start(t, bin)
	if _, err := s.Authenticate(ctx, acc.AccountKey); err != nil {
		t.Errorf("after Redis came back: %v", err)
	}
}
