package api

import (
	"context"
	"crypto/sha256"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/limit"
)

// rateGuesses lets a request take its rate token while its key is being
// checked, instead of after: in scale mode both are Redis round trips, and
// done one after the other they were most of what the API added to an
// Elasticsearch answer of a few milliseconds.
//
// The limiter key and the rate depend on the principal (its account, key
// kind and plan), known only once the key is checked. So the server
// remembers, for each key that authenticated, what its principal was, and
// the next request with that key takes a token for the remembered
// principal concurrently with the key check. The check still runs on
// every request, so a lapsed subscription, a rotated key or an unknown
// key is refused exactly as before (in the same order: 401, 402, 403,
// then 429). When the checked principal is not the remembered one (the
// account changed plan), the token taken is left unused and the request
// takes one for the right principal, as without a guess. A key never seen
// before is checked first, then limited: unknown keys never reach the
// limiter.
//
// The one observable difference: a request refused after the key check
// (402 subscription_inactive, 403 account_required) may have used a
// token of its key's rate.
type rateGuesses struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]guessEntry
}

// guessEntry is what the server remembers of one key.
type guessEntry struct {
	guess rateGuess
	// holdUntil: the key was refused its rate at an early read; no early
	// read before this time (earlyread.go).
	holdUntil time.Time
}

// rateGuess is what a key's last successful check said of its principal.
type rateGuess struct {
	bucket    string // rateBucket of the principal
	plan      string
	accountID string
	kind      account.KeyKind
}

// principal is the principal the guess expects (its account's ID and
// plan, and the key's kind).
func (g rateGuess) principal() account.Principal {
	return account.Principal{Account: account.Account{ID: g.accountID, Plan: g.plan}, Kind: g.kind}
}

// maxRateGuesses bounds the map (a key refused is dropped from it at its
// next request; keys never used again stay until it is cleared).
const maxRateGuesses = 100_000

func (g *rateGuesses) get(h [sha256.Size]byte) (rateGuess, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.m[h]
	return e.guess, ok
}

// held returns the guess for h and the end of its hold when the key is
// held (refused its rate until then) at now.
func (g *rateGuesses) held(h [sha256.Size]byte, now time.Time) (rateGuess, time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.m[h]
	return e.guess, e.holdUntil, ok && now.Before(e.holdUntil)
}

// early returns the guess for h when an early read may run on it: the key
// authenticated before and is not held after a refused rate.
func (g *rateGuesses) early(h [sha256.Size]byte, now time.Time) (rateGuess, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.m[h]
	return e.guess, ok && !now.Before(e.holdUntil)
}

// set records r for h unless it is recorded already.
func (g *rateGuesses) set(h [sha256.Size]byte, r rateGuess) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.m[h]; ok && old.guess == r {
		return
	}
	if g.m == nil || len(g.m) >= maxRateGuesses {
		g.m = make(map[[sha256.Size]byte]guessEntry)
	}
	g.m[h] = guessEntry{guess: r}
}

// hold refuses h's requests until until (heldRefusal), without asking
// the limiter or the key's store.
func (g *rateGuesses) hold(h [sha256.Size]byte, until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e, ok := g.m[h]; ok {
		e.holdUntil = until
		g.m[h] = e
	}
}

// forget drops h: the key was refused (unknown, or its subscription
// lapsed), so its next request is checked before anything runs.
func (g *rateGuesses) forget(h [sha256.Size]byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, h)
}

// keyDigest is the map key of an API key (its SHA-256, so the map holds
// no key in clear).
func keyDigest(key string) [sha256.Size]byte {
	return sha256.Sum256([]byte(strings.TrimSpace(key)))
}

// rateAnswer is the limiter's answer to a token taken on a guess.
type rateAnswer struct {
	guess rateGuess
	d     limit.Decision
	err   error
}

// rateTakenKey is the fiber Locals key of the chan rateAnswer of a token
// taken on a guess.
type rateTakenKey struct{}

// checkGuessed checks key and takes the rate token of guess g, the
// principal the key had last time, at the same time: with a Gate (scale
// mode) in one call, else side by side. The token's answer is on the
// returned channel, nil when no token was taken (the key is refused or is
// not g's principal any more: limitRequest takes the right one). A heavy
// request also takes its heavy slot on the guess (slotguess.go): with a
// HeavyGate in the same call, else beside the check.
func (s *Server) checkGuessed(ctx context.Context, key string, g rateGuess, heavy bool) (account.Principal, chan rateAnswer, *slotGuess, error) {
	if heavy && s.deps.HeavyGate != nil {
		return s.checkGuessedHeavy(ctx, key, g)
	}
	var slot *slotGuess
	if heavy {
		slot = s.takeSlotGuess(ctx, g)
	}
	if s.deps.Gate == nil {
		token := s.takeRate(ctx, g)
		p, err := s.deps.Accounts.Authenticate(ctx, key)
		return p, token, slot, err
	}
	p, taken, d, err := s.deps.Gate(ctx, key, g.principal(), g.bucket, s.planRate(g.plan))
	if err != nil || !taken {
		return p, nil, slot, err
	}
	return p, answeredRate(g, d), slot, nil
}

// checkGuessedHeavy is checkGuessed of a heavy request with a HeavyGate:
// the key check, the rate token and the heavy slot in one call.
func (s *Server) checkGuessedHeavy(ctx context.Context, key string, g rateGuess) (account.Principal, chan rateAnswer, *slotGuess, error) {
	p, taken, d, slot, err := s.deps.HeavyGate(ctx, key, g.principal(), g.bucket, s.planRate(g.plan), s.heavyCap(g.plan))
	var sg *slotGuess
	if slot.Asked {
		sg = answeredSlot(g, slotAnswer{release: slot.Release, d: slot.Decision})
	}
	if err != nil || !taken {
		return p, nil, sg, err
	}
	return p, answeredRate(g, d), sg, nil
}

// answeredRate is the channel of a token taken on guess g with answer d.
func answeredRate(g rateGuess, d limit.Decision) chan rateAnswer {
	token := make(chan rateAnswer, 1)
	token <- rateAnswer{guess: g, d: d}
	return token
}

// planRate is the request rate of plan.
func (s *Server) planRate(plan string) limit.Rate {
	p := s.deps.Plans[plan]
	return limit.Rate{PerSecond: p.RequestsPerSecond, Burst: p.Burst}
}

// checkKeyRate checks key and, when the key of digest h authenticated on
// this server before, takes its rate token (and, for a heavy request, its
// heavy slot) at the same time (checkGuessed); the first request of a key
// is checked alone.
func (s *Server) checkKeyRate(ctx context.Context, key string, h [sha256.Size]byte, heavy bool) (account.Principal, chan rateAnswer, *slotGuess, error) {
	g, ok := s.guesses.get(h)
	if !ok {
		p, err := s.deps.Accounts.Authenticate(ctx, key)
		return p, nil, nil, err
	}
	return s.checkGuessed(ctx, key, g, heavy)
}

// takeRate starts taking the rate token of guess g; the answer arrives on
// the returned channel.
func (s *Server) takeRate(ctx context.Context, g rateGuess) chan rateAnswer {
	ch := make(chan rateAnswer, 1)
	go func() {
		d, err := s.limiter.Allow(ctx, g.accountID, g.bucket, s.planRate(g.plan))
		ch <- rateAnswer{guess: g, d: d, err: err}
	}()
	return ch
}

// guessFor is the guess that principal p makes right.
func guessFor(p account.Principal) rateGuess {
	return rateGuess{bucket: rateBucket(p), plan: p.Account.Plan, accountID: p.Account.ID, kind: p.Kind}
}

// rememberRate records the principal the key of digest h authenticated
// as, for the next request's guess, and hands the token taken on this
// request's guess (if any) to limitRequest.
func (s *Server) rememberRate(h [sha256.Size]byte, p account.Principal, guessed chan rateAnswer, c *fiber.Ctx) {
	if guessed != nil {
		c.Locals(rateTakenKey{}, guessed)
	}
	s.guesses.set(h, guessFor(p))
}

// takenRate returns the answer to a token taken on a guess for p, if one
// was taken and the guess was right.
func takenRate(c *fiber.Ctx, p account.Principal) (rateAnswer, bool) {
	ch, ok := c.Locals(rateTakenKey{}).(chan rateAnswer)
	if !ok {
		return rateAnswer{}, false
	}
	a := <-ch
	return a, a.guess == guessFor(p)
}
