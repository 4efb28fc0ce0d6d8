package api

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// statsHold sits between the server and its real notices store: armed,
// Stats says it has started (entered) and waits for release before it
// answers, so a test can look at the limits while a heavy request runs.
type statsHold struct {
	store.Notices
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (h *statsHold) Stats(ctx context.Context, q notice.StatsQuery) (notice.Stats, error) {
	if h.armed.Load() {
		h.entered <- struct{}{}
		<-h.release
	}
	return h.Notices.Stats(ctx, q)
}

// TestHeavyGateOneCommand: in the scale mode's wiring, a heavy request
// with a key the server has seen sends Redis two commands before its
// handler (the key check, the rate token and the account's heavy slot in
// one script call in the account's slot, then the service's slot, in the
// namespace's), and its slot's release (one pipeline) after. The slot is really
// held while the request runs (the key's set and the service's hold it,
// and a second heavy request of the key, the standard plan allowing one,
// queues and is refused) and is freed after. A wrong guess (the key is
// another account's than the guessed one), a lapsed subscription and a
// key rotated away take no slot: the guessed principal's set stays empty
// and nothing is released but the slot the request really needed.
func TestHeavyGateOneCommand(t *testing.T) {
	ctx := context.Background()
	var cmds redisCommands
	var (
		lim *limit.Redis
		rdb redis.UniversalClient
		ns  string
	)
	f := newLimitFixtureOn(t, func(t *testing.T, f *fixture) limitWiring {
		l, rs, client, space := newScaleLimits(t, f)
		client.AddHook(&cmds)
		lim, rdb, ns = l, client, space
		return scaleWiring(l, rs)
	}, 10)
	hold := &statsHold{Notices: f.srv.deps.Notices, entered: make(chan struct{}), release: make(chan struct{})}
	f.srv.deps.Notices = hold
	p, err := f.accounts.Authenticate(ctx, f.read)
	if err != nil {
		t.Fatal(err)
	}
	const heavy = "/v1/stats?q=liquidator"
	// slots is how many heavy slots the set of key and the service's hold.
	slots := func(key string) (int64, int64) {
		t.Helper()
		sets := limit.HeavyKeys(ns, key)
		return rdb.ZCard(ctx, sets[0]).Val(), rdb.ZCard(ctx, sets[1]).Val()
	}
	// request sends a heavy request with key and, once it is answered and
	// the slots it released are freed in Redis, says how many commands it
	// sent alone and how many pipelines.
	request := func(name, key string, status int) (single, pipes int64) {
		t.Helper()
		n, np := cmds.single.Load(), cmds.pipes.Load()
		res := f.do(t, "GET", heavy, key)
		if res.status != status {
			t.Fatalf("%s: HTTP %d, want %d: %s", name, res.status, status, res.body)
		}
		if err := lim.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return cmds.single.Load() - n, cmds.pipes.Load() - np
	}
	noSlots := func(after, key string) {
		t.Helper()
		if k, all := slots(key); k != 0 || all != 0 {
			t.Errorf("after %s: the sets of %s and of the service hold %d and %d slots, want none", after, key, k, all)
		}
	}
	key := heavyKey(p)

	request("a key's first heavy request", f.read, 200) // checked, then limited
	if single, pipes := request("a heavy request with a seen key", f.read, 200); single != 2 || pipes != 1 {
		t.Errorf("a heavy request with a seen key: %d Redis commands and %d pipelines, want 2 (key, rate and the account's slot in one script; the service's slot) and 1 (the release)", single, pipes)
	}
	noSlots("a heavy request", key)

	// A bulk screen (a body) with a seen key: no lookup when its headers
	// arrive (keyAccepted), so two commands too.
	match := func(name string, status int) (single, pipes int64) {
		t.Helper()
		n, np := cmds.single.Load(), cmds.pipes.Load()
		res := f.send(t, "POST", "/v1/match", f.read, []byte(`{"identifiers":["004085616"]}`))
		if res.status != status {
			t.Fatalf("%s: HTTP %d, want %d: %s", name, res.status, status, res.body)
		}
		if err := lim.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return cmds.single.Load() - n, cmds.pipes.Load() - np
	}
	if single, pipes := match("a screen with a seen key", 200); single != 2 || pipes != 1 {
		t.Errorf("a screen with a seen key: %d Redis commands and %d pipelines, want 2 (key, rate and the account's slot in one script; the service's slot) and 1 (the release)", single, pipes)
	}
	noSlots("a screen", key)

	// The slot is held while the request runs.
	hold.armed.Store(true)
	done := make(chan int, 1)
	go func() {
		req := httptest.NewRequest("GET", heavy, nil)
		req.Header.Set(HeaderAPIKey, f.read)
		res, err := f.srv.App().Test(req, 10000)
		if err != nil {
			done <- 0
			return
		}
		res.Body.Close()
		done <- res.StatusCode
	}()
	<-hold.entered
	hold.armed.Store(false)
	if k, all := slots(key); k != 1 || all != 1 {
		t.Errorf("while a heavy request runs the sets of its key and of the service hold %d and %d slots, want 1 and 1", k, all)
	}
	res := f.do(t, "GET", heavy, f.read) // the plan allows one: queues 50 ms, then 429
	wantError(t, res, 429, "rate_limited")
	if msg := errorMessage(t, res); !strings.Contains(msg, "already runs 1 heavy") {
		t.Errorf("a second heavy request of the key: %q, want the key's heavy cap", msg)
	}
	hold.release <- struct{}{}
	if status := <-done; status != 200 {
		t.Fatalf("the held heavy request: HTTP %d", status)
	}
	if err := lim.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	noSlots("the held request", key)

	// A wrong guess: the server takes f.read for another account's key.
	other, err := f.accounts.CreateAccount(ctx, "Other Co", "standard")
	if err != nil {
		t.Fatal(err)
	}
	op, err := f.accounts.Authenticate(ctx, other.ReadKey)
	if err != nil {
		t.Fatal(err)
	}
	f.srv.guesses.set(keyDigest(f.read), guessFor(op))
	if _, pipes := request("a wrong guess", f.read, 200); pipes != 1 {
		t.Errorf("a wrong guess: %d releases, want 1 (the right slot's; none taken on the guess)", pipes)
	}
	noSlots("a wrong guess", heavyKey(op))
	noSlots("a wrong guess", key)

	// A lapsed subscription.
	if err := f.accounts.SetSubscription(ctx, p.Account.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, pipes := request("a lapsed subscription", f.read, 402); pipes != 0 {
		t.Errorf("a lapsed subscription: %d releases, want 0 (no slot taken)", pipes)
	}
	noSlots("a lapsed subscription", key)
	if err := f.accounts.SetSubscription(ctx, p.Account.ID, true); err != nil {
		t.Fatal(err)
	}

	// A key rotated away (seen again first: a refused key is forgotten).
	request("a reactivated key's heavy request", f.read, 200)
	if _, err := f.accounts.RotateKeys(ctx, p.Account.ID); err != nil {
		t.Fatal(err)
	}
	if _, pipes := request("a key rotated away", f.read, 401); pipes != 0 {
		t.Errorf("a key rotated away: %d releases, want 0 (no slot taken)", pipes)
	}
	noSlots("a key rotated away", key)
	// Refused, it is forgotten: its screen's key is looked up again when
	// its headers arrive (so its body is not read), then checked.
	if single, _ := match("a screen with a key refused before", 401); single != 2 {
		t.Errorf("a screen with a key refused before: %d Redis commands, want 2 (the lookup when its headers arrive, the check)", single)
	}
	noSlots("a screen with a key refused before", key)
}
