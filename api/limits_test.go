package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/limit/limittest"
	"github.com/noticesd/noticesd/internal/store"
)

// limitPlans are the plans of the limit tests: standard allows burst
// requests (no refill within a test: the clock stands still) and 1 heavy request
// per key, the service 2 heavy requests.
func limitPlans(burst int) map[string]account.Plan {
	p := account.DefaultPlans()
	s := p["standard"]
	s.RequestsPerSecond, s.Burst, s.Heavy = 1, burst, 1
	p["standard"] = s
	return p
}

// newLimitFixture is the fixture with the watch store and limiter l.
func newLimitFixture(t *testing.T, l Limiter, burst int) *fixture {
	t.Helper()
	return newLimitFixtureOn(t, func(*testing.T, *fixture) limitWiring { return limitWiring{limiter: l} }, burst)
}

// limitBackend wires the limits of a limit fixture.
type limitBackend func(t *testing.T, f *fixture) limitWiring

// limitWiring is a limit fixture's limits: its limiter, the accounts keys
// are checked against (nil: the fixture's SQLite store), the Gate and the
// HeavyGate (nil: none).
type limitWiring struct {
	limiter   Limiter
	accounts  store.Accounts
	gate      KeyGate
	heavyGate HeavyGate
}

// newLimitFixtureOn is the fixture with the limits of backend, its server
// on f.clock (standing still at fixedNow until a test moves it; the
// limiters' own clocks stand still).
func newLimitFixtureOn(t *testing.T, backend limitBackend, burst int) *fixture {
	t.Helper()
	f := newFixture(t)
	w := backend(t, f)
	f.accounts = f.store
	if w.accounts != nil {
		f.accounts = w.accounts
	}
	f.clock = &movableClock{}
	cfg := config.Default()
	cfg.HeavyConcurrency = 2
	cfg.HeavyWait = 50 * time.Millisecond // a refusal comes after a short queue
	f.srv = New(cfg, Deps{
		Notices:   f.store,
		Accounts:  f.accounts,
		Watches:   f.store,
		Plans:     limitPlans(burst),
		Limiter:   w.limiter,
		Gate:      w.gate,
		HeavyGate: w.heavyGate,
		Now:       f.clock.now,
		Logger:    slog.New(slog.NewTextHandler(f.logs, nil)),
	})
	return f
}

// movableClock is fixedNow moved on by the test.
type movableClock struct{ moved atomic.Int64 }

func (c *movableClock) now() time.Time          { return fixedNow.Add(time.Duration(c.moved.Load())) }
func (c *movableClock) advance(d time.Duration) { c.moved.Add(int64(d)) }

// limitBackends are the ways the api runs its limits: the two limiters
// (limiters) with the keys in SQLite, and the scale mode's wiring
// (scaleLimits): keys in Redis, checked with the rate token in one call.
func limitBackends() map[string]limitBackend {
	out := map[string]limitBackend{"scale": scaleLimits}
	for name, newLimiter := range limiters() {
		out[name] = func(t *testing.T, _ *fixture) limitWiring { return limitWiring{limiter: newLimiter(t)} }
	}
	return out
}

// limiters are the two implementations the api runs on: in process
// (embedded mode) on a clock that stands still, and Redis (scale mode) on
// the dev Redis in this test's namespace.
func limiters() map[string]func(t *testing.T) Limiter {
	return map[string]func(t *testing.T) Limiter{
		"embedded": func(*testing.T) Limiter {
			return limit.NewLocal(2, func() time.Time { return fixedNow })
		},
		"redis": func(t *testing.T) Limiter {
			l, _, _ := limittest.Redis(t, 2)
			return l
		},
	}
}

// TestRateLimited drives one key past its plan's rate: 429 rate_limited
// with Retry-After; the account's other key and another account's key go
// on unaffected.
func TestRateLimited(t *testing.T) {
	for name, backend := range limitBackends() {
		t.Run(name, func(t *testing.T) {
			f := newLimitFixtureOn(t, backend, 3)
			other, err := f.accounts.CreateAccount(context.Background(), "Other Co", "standard")
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if res := f.do(t, "GET", "/v1/notices", f.read); res.status != 200 {
					t.Fatalf("request %d within the burst: HTTP %d %s", i+1, res.status, res.body)
				}
			}
			res := f.do(t, "GET", "/v1/notices", f.read)
			wantError(t, res, 429, "rate_limited")
			if ra := res.header.Get("Retry-After"); ra != "1" {
				t.Errorf("Retry-After %q, want 1 (one request a second)", ra)
			}
			if msg := errorMessage(t, res); !strings.Contains(msg, "plan standard") || !strings.Contains(msg, "retry after 1 second") {
				t.Errorf("message %q should name the plan and when to retry", msg)
			}
			for _, key := range []string{f.acct, other.ReadKey} {
				if res := f.do(t, "GET", "/v1/notices", key); res.status != 200 {
					t.Errorf("another key was limited too: HTTP %d %s", res.status, res.body)
				}
			}
			wantError(t, f.do(t, "GET", "/v1/notices", "nk_read_unknown"), 401, "unauthorised")
		})
	}
}

// TestHeavyLimited holds heavy slots the way running requests would and
// checks that heavy requests of that key get 429 while its light requests
// pass, then that the service-wide cap refuses every key.
func TestHeavyLimited(t *testing.T) {
	ctx := context.Background()
	for name, newLimiter := range limiters() {
		t.Run(name, func(t *testing.T) {
			l := newLimiter(t)
			f := newLimitFixture(t, l, 100)
			p, err := f.store.Authenticate(ctx, f.read)
			if err != nil {
				t.Fatal(err)
			}
			release, d, err := l.Acquire(ctx, heavyKey(p), 1) // a screen of this key is running
			if err != nil || !d.Allowed {
				t.Fatalf("acquire: %+v %v", d, err)
			}
			heavy := []struct{ method, target, body string }{
				{http.MethodPost, "/v1/match", `{"identifiers": ["123456780"]}`},
				{http.MethodGet, "/v1/stats?q=liquidator", ""},
				{http.MethodGet, "/v1/filters?q=liquidator", ""},
			}
			res := f.send(t, heavy[0].method, heavy[0].target, f.read, []byte(heavy[0].body))
			wantError(t, res, 429, "rate_limited")
			if res.header.Get("Retry-After") == "" || !strings.Contains(errorMessage(t, res), "already runs 1 heavy request") {
				t.Errorf("heavy refusal: Retry-After %q, message %q", res.header.Get("Retry-After"), errorMessage(t, res))
			}
			if res := f.do(t, "GET", "/v1/stats", f.read); res.status != 200 {
				t.Errorf("stats without q is light and must pass: HTTP %d %s", res.status, res.body)
			}
			// A webhook test holds the request open while it calls the
			// receiver: heavy, on the account's slots (both its keys).
			wantError(t, f.send(t, http.MethodPost, "/v1/watches/wch_aaaaaaaaaaaaaaaaaaaaaaaaaa/webhook/test", f.acct, nil), 429, "rate_limited")
			release()
			for _, h := range heavy[:2] {
				if res := f.send(t, h.method, h.target, f.read, []byte(h.body)); res.status != 200 {
					t.Errorf("%s %s after the slot was released: HTTP %d %s", h.method, h.target, res.status, res.body)
				}
			}
			// Two other keys fill the service's two heavy slots.
			for _, key := range []string{"other:read", "another:read"} {
				rel, d, err := l.Acquire(ctx, key, 1)
				if err != nil || !d.Allowed {
					t.Fatalf("acquire %s: %+v %v", key, d, err)
				}
				defer rel()
			}
			res = f.send(t, heavy[2].method, heavy[2].target, f.acct, nil)
			wantError(t, res, 429, "rate_limited")
			if !strings.Contains(errorMessage(t, res), "the service is running") {
				t.Errorf("global refusal message %q", errorMessage(t, res))
			}
		})
	}
}

// TestHeavyQueues: a heavy request over the key's cap waits for the slot
// and runs once it is released, instead of being refused.
func TestHeavyQueues(t *testing.T) {
	ctx := context.Background()
	l := limit.NewLocal(2, nil)
	f := newLimitFixture(t, l, 100)
	f.srv.cfg.HeavyWait = 30 * time.Second // longer than the test will ever wait
	p, err := f.store.Authenticate(ctx, f.read)
	if err != nil {
		t.Fatal(err)
	}
	release, d, err := l.Acquire(ctx, heavyKey(p), 1)
	if err != nil || !d.Allowed {
		t.Fatalf("acquire: %+v %v", d, err)
	}
	done := make(chan response, 1)
	go func() {
		done <- f.send(t, http.MethodPost, "/v1/match", f.read, []byte(`{"identifiers": ["123456780"]}`))
	}()
	select {
	case res := <-done:
		t.Fatalf("the queued request was answered while the slot was held: HTTP %d %s", res.status, res.body)
	case <-time.After(200 * time.Millisecond):
	}
	if res := f.do(t, "GET", "/v1/notices", f.read); res.status != 200 {
		t.Errorf("a light request of the same key must not queue: HTTP %d", res.status)
	}
	release()
	if res := <-done; res.status != 200 {
		t.Fatalf("the queued request after the release: HTTP %d %s", res.status, res.body)
	}
}

// TestHugeIdentifierShortError sends one 8 MB identifier: the 400 names it
// by a short prefix and its length, and the whole answer stays under 1 KB.
func TestHugeIdentifierShortError(t *testing.T) {
	f := newLimitFixture(t, nil, 100)
	huge := strings.Repeat("7", 8_000_000)
	for _, tt := range []struct{ method, target, body, code string }{
		{http.MethodPost, "/v1/match", `{"identifiers": ["123456780", "` + huge + `"]}`, "invalid_identifier"},
		{http.MethodPost, "/v1/watches", `{"identifiers": ["` + huge + `"]}`, "invalid_identifier"},
	} {
		t.Run(tt.target, func(t *testing.T) {
			res := f.send(t, tt.method, tt.target, f.acct, []byte(tt.body))
			wantError(t, res, 400, tt.code)
			if len(res.body) >= 1024 {
				t.Errorf("the 400 is %d bytes, want under 1 KB", len(res.body))
			}
			if msg := errorMessage(t, res); !strings.Contains(msg, "(8000000 bytes)") || !strings.Contains(msg, "position 1") && tt.target == "/v1/match" {
				t.Errorf("message %q should give the value's length and position", msg)
			}
		})
	}
	t.Run("query parameter", func(t *testing.T) {
		res := f.do(t, "GET", "/v1/notices?limit="+strings.Repeat("9", 8000), f.read)
		wantError(t, res, 400, "invalid_parameter")
		if len(res.body) >= 1024 {
			t.Errorf("the 400 is %d bytes, want under 1 KB", len(res.body))
		}
	})
}

// TestLongIDShortError: a long id in the path is quoted by a short prefix
// and its length in a 404, as every client value in a message is.
func TestLongIDShortError(t *testing.T) {
	f := newWatchFixture(t, nil)
	long := strings.Repeat("n", 500)
	for _, tt := range []struct{ method, target, key string }{
		{http.MethodGet, "/v1/notices/" + long, f.read},
		{http.MethodGet, "/v1/watches/wch_" + long, f.acct},
		{http.MethodGet, "/v1/watches/wch_" + long + "/matches", f.acct},
		{http.MethodDelete, "/v1/watches/wch_" + long, f.acct},
		{http.MethodGet, "/v1/" + long, f.read},
	} {
		t.Run(tt.method+" "+tt.target[:min(len(tt.target), 20)], func(t *testing.T) {
			res := f.call(t, tt.method, tt.target, tt.key, "")
			wantError(t, res, 404, "not_found")
			if msg := errorMessage(t, res); len(msg) > 300 || !strings.Contains(msg, "...") || !strings.Contains(msg, " bytes)") {
				t.Errorf("message (%d bytes) %q should quote a prefix of the id and its length", len(msg), msg)
			}
		})
	}
}

// TestRateGuessKeepsTheCheckOrder: a key that authenticated before takes
// its rate token while it is checked again (rateguess.go). With the
// key's burst used up, a lapsed subscription must still answer 402 and a
// rotated-away key 401, not 429, once the hold of its last 429 has
// passed (heldRefusal: at most rateHoldMax; the limiters' clocks stand
// still, so the bucket does not refill meanwhile); a reactivated account
// is limited again where it stopped; the new key after a rotation starts
// with nothing guessed and is limited as the same principal.
func TestRateGuessKeepsTheCheckOrder(t *testing.T) {
	ctx := context.Background()
	for name, backend := range limitBackends() {
		t.Run(name, func(t *testing.T) {
			f := newLimitFixtureOn(t, backend, 2)
			created, err := f.accounts.CreateAccount(ctx, "Guess Co", "standard")
			if err != nil {
				t.Fatal(err)
			}
			key := created.AccountKey
			for i := range 2 {
				if res := f.do(t, "GET", "/v1/notices", key); res.status != 200 {
					t.Fatalf("request %d within the burst: HTTP %d %s", i+1, res.status, res.body)
				}
			}
			wantError(t, f.do(t, "GET", "/v1/notices", key), 429, "rate_limited")
			if err := f.accounts.SetSubscription(ctx, created.AccountID, false); err != nil {
				t.Fatal(err)
			}
			f.clock.advance(rateHoldMax)
			wantError(t, f.do(t, "GET", "/v1/notices", key), 402, "subscription_inactive")
			if err := f.accounts.SetSubscription(ctx, created.AccountID, true); err != nil {
				t.Fatal(err)
			}
			wantError(t, f.do(t, "GET", "/v1/notices", key), 429, "rate_limited")
			rotated, err := f.accounts.RotateKeys(ctx, created.AccountID)
			if err != nil {
				t.Fatal(err)
			}
			f.clock.advance(rateHoldMax)
			wantError(t, f.do(t, "GET", "/v1/notices", key), 401, "unauthorised")
			wantError(t, f.do(t, "GET", "/v1/notices", rotated.AccountKey), 429, "rate_limited")
			if res := f.do(t, "GET", "/v1/notices", rotated.ReadKey); res.status != 200 {
				t.Fatalf("the account's read key has its own rate: HTTP %d %s", res.status, res.body)
			}
		})
	}
}
