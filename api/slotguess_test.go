package api

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/store"
)

// slotWatch sits between the server and its real limiter and accounts
// store and tells a key check whether a heavy slot was being taken
// while it ran: armed, Authenticate waits (up to a generous bound, never
// reached when the slot is taken beside it) for an Acquire to start.
type slotWatch struct {
	Limiter
	store.Accounts
	armed      atomic.Bool
	acquiring  chan struct{}
	concurrent atomic.Int32 // key checks that saw an Acquire start while they ran
}

func (w *slotWatch) Acquire(ctx context.Context, key string, perKey int) (limit.Release, limit.Decision, error) {
	select {
	case w.acquiring <- struct{}{}:
	default:
	}
	return w.Limiter.Acquire(ctx, key, perKey)
}

func (w *slotWatch) Authenticate(ctx context.Context, key string) (account.Principal, error) {
	if w.armed.Load() {
		select {
		case <-w.acquiring:
			w.concurrent.Add(1)
		case <-time.After(5 * time.Second): // taken after the check: the case fails
		}
	}
	return w.Accounts.Authenticate(ctx, key)
}

// TestHeavySlotGuess: a heavy request with a key this server has seen
// takes its heavy slot while the key is checked (slotguess.go), and every
// refusal gives that slot back: a lapsed subscription (402), a key over its
// rate (429) and a key at its heavy cap, which still queues and then runs.
// The standard plan allows one heavy request per key, so a slot kept by
// mistake refuses the direct Acquire that follows each refusal.
func TestHeavySlotGuess(t *testing.T) {
	ctx := context.Background()
	for name, newLimiter := range limiters() {
		t.Run(name, func(t *testing.T) {
			f := newLimitFixture(t, nil, 3)
			w := &slotWatch{Limiter: newLimiter(t), Accounts: f.store, acquiring: make(chan struct{}, 1)}
			f.srv.limiter, f.srv.deps.Accounts = w, w
			created, err := f.store.CreateAccount(ctx, "Slot Co", "standard")
			if err != nil {
				t.Fatal(err)
			}
			key := created.ReadKey
			p, err := f.store.Authenticate(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			slotFree := func(after string) {
				t.Helper()
				rel, d, err := w.Limiter.Acquire(ctx, heavyKey(p), 1)
				if err != nil || !d.Allowed {
					t.Fatalf("after %s the key's one heavy slot is still taken: %+v, %v", after, d, err)
				}
				rel()
			}
			heavy := "/v1/stats?q=liquidator"

			// Unseen key: checked, then limited; nothing is guessed.
			if res := f.do(t, "GET", heavy, key); res.status != 200 {
				t.Fatalf("first heavy request: HTTP %d %s", res.status, res.body)
			}
			// Seen: the slot is taken while the key is checked.
			select {
			case <-w.acquiring: // the first request's, taken after its check
			default:
			}
			w.armed.Store(true)
			if res := f.do(t, "GET", heavy, key); res.status != 200 {
				t.Fatalf("heavy request on a guess: HTTP %d %s", res.status, res.body)
			}
			w.armed.Store(false)
			if n := w.concurrent.Load(); n != 1 {
				t.Fatalf("%d key checks saw the heavy slot being taken beside them, want 1", n)
			}
			slotFree("a heavy request")

			// At the cap: the guessed slot is refused, the request queues
			// (50 ms here) and is refused; the held slot runs out.
			rel, d, err := w.Limiter.Acquire(ctx, heavyKey(p), 1)
			if err != nil || !d.Allowed {
				t.Fatalf("acquire: %+v, %v", d, err)
			}
			wantError(t, f.do(t, "GET", heavy, key), 429, "rate_limited")
			rel()

			// Lapsed: 402, and the slot taken on the guess is given back.
			if err := f.store.SetSubscription(ctx, created.AccountID, false); err != nil {
				t.Fatal(err)
			}
			wantError(t, f.do(t, "GET", heavy, key), 402, "subscription_inactive")
			slotFree("a 402")
			if err := f.store.SetSubscription(ctx, created.AccountID, true); err != nil {
				t.Fatal(err)
			}

			// Over the rate (a burst of 3, the clock stands still for the
			// in-process limiter; Redis refills 1 a second, far slower than
			// these requests): 429, and the slot is given back.
			for range 3 {
				if res := f.do(t, "GET", "/v1/notices", key); res.status == 429 {
					break
				}
			}
			res := f.do(t, "GET", heavy, key)
			wantError(t, res, 429, "rate_limited")
			if msg := errorMessage(t, res); !strings.Contains(msg, "faster than plan") {
				t.Fatalf("want the rate's refusal, got %q", msg)
			}
			slotFree("a rate refusal")
		})
	}
}
