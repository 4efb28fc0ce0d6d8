package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestOneAccountLeavesASlot: one account, whatever its plan allows and
// however many keys it uses, never holds every heavy slot of the service
// (two here, the plan allowing two): while it runs one heavy request, its
// second (with its other key) is refused with 429 naming the account's
// cap, and another account's heavy request runs. Before, each key had its
// own cap, so the account's two keys took both slots and the other
// account waited out its queue for a 429. Embedded, Redis and the scale
// wiring.
func TestOneAccountLeavesASlot(t *testing.T) {
	ctx := context.Background()
	const heavy = "/v1/stats?q=liquidator"
	for name, backend := range limitBackends() {
		t.Run(name, func(t *testing.T) {
			f := newLimitFixtureOn(t, backend, 100)
			plans := limitPlans(100)
			std := plans["standard"]
			std.Heavy = 2 // as many as the service has
			plans["standard"] = std
			f.srv.deps.Plans = plans
			other, err := f.accounts.CreateAccount(ctx, "Other Co", "standard")
			if err != nil {
				t.Fatal(err)
			}
			hold := &statsHold{Notices: f.srv.deps.Notices, entered: make(chan struct{}), release: make(chan struct{})}
			f.srv.deps.Notices = hold
			// send runs a heavy request with key in the background.
			send := func(key string) chan response {
				out := make(chan response, 1)
				go func() {
					req := httptest.NewRequest(http.MethodGet, heavy, nil)
					req.Header.Set(HeaderAPIKey, key)
					res, err := f.srv.App().Test(req, 10000)
					if err != nil {
						out <- response{}
						return
					}
					b, _ := io.ReadAll(res.Body)
					res.Body.Close()
					out <- response{status: res.StatusCode, header: res.Header, body: b}
				}()
				return out
			}

			hold.armed.Store(true)
			first := send(f.read)
			<-hold.entered // the account's first heavy request runs, holding a slot
			second := send(f.acct)
			held := 1
			select {
			case <-hold.entered: // it took the service's other slot
				held++
				hold.armed.Store(false)
				t.Errorf("the account's second heavy request (its other key) took the service's last slot")
			case res := <-second:
				hold.armed.Store(false)
				wantError(t, res, http.StatusTooManyRequests, "rate_limited")
				if msg := errorMessage(t, res); !strings.Contains(msg, "this account (its two keys together) already runs 1 heavy") {
					t.Errorf("the account's second heavy request: %q, want the account's cap", msg)
				}
			}
			if res := f.do(t, http.MethodGet, heavy, other.ReadKey); res.status != http.StatusOK {
				t.Errorf("another account's heavy request while the account runs one: HTTP %d %s, want 200", res.status, res.body)
			}
			for range held {
				hold.release <- struct{}{}
			}
			if res := <-first; res.status != http.StatusOK {
				t.Errorf("the account's first heavy request: HTTP %d %s", res.status, res.body)
			}
			if held == 2 {
				<-second
			}
		})
	}
}
