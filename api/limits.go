package api

import (
	"context"
	"crypto/sha256"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/limit"
)

// Limiter enforces the request limits of API keys: a request rate per key
// and caps on heavy requests running at once, per account (heavyKey) and
// for the whole service. limit.Local is the in-process implementation (embedded mode,
// one process); limit.Redis shares the limits among the replicas of a
// scale deployment.
type Limiter interface {
	// Allow takes one request token of account's bucket (a rateBucket)
	// at rate r.
	Allow(ctx context.Context, account, bucket string, r limit.Rate) (limit.Decision, error)
	// Acquire takes a heavy slot of key, a heavyKey (at most perKey at
	// once, 0 for no cap of its own), and one of the service's; the
	// Release gives them back.
	Acquire(ctx context.Context, key string, perKey int) (limit.Release, limit.Decision, error)
}

// heavyRoute decides whether a request on a route is heavy.
type heavyRoute func(s *Server, c *fiber.Ctx) bool

// heavyRoutes are the routes that can be heavy, by method and route path.
var heavyRoutes = map[string]heavyRoute{
	"POST /v1/match": func(*Server, *fiber.Ctx) bool { return true },
	// A webhook test holds the request open for up to the delivery
	// timeout while it calls the receiver.
	"POST /v1/watches/:id/webhook/test": func(*Server, *fiber.Ctx) bool { return true },
	// Creating a watch is heavy when its body is large (many identifiers)
	// or of unknown size (chunked).
	"POST /v1/watches": func(s *Server, c *fiber.Ctx) bool {
		n := c.Request().Header.ContentLength()
		return n == -1 || n > s.cfg.MaxSmallBodyBytes
	},
	// A CSV export reads every matching notice.
	"GET /v1/notices":  func(_ *Server, c *fiber.Ctx) bool { return wantsCSV(c) },
	"HEAD /v1/notices": func(_ *Server, c *fiber.Ctx) bool { return wantsCSV(c) },
	"GET /v1/filters":  withQuery,
	"HEAD /v1/filters": withQuery,
	"GET /v1/stats":    withQuery,
	"HEAD /v1/stats":   withQuery,
}

// withQuery: counting over a full-text query is heavy, plain counts are not.
func withQuery(_ *Server, c *fiber.Ctx) bool {
	for _, v := range c.Context().QueryArgs().PeekMulti("q") {
		if strings.TrimSpace(string(v)) != "" {
			return true
		}
	}
	return false
}

// limitRequest runs after authentication on every /v1/ route: the key's
// request rate, then, for heavy requests, a heavy slot of the account
// (heavyCap) and of the service, queueing up to cfg.HeavyWait for one. Past the rate, or
// without a slot at the end of the wait, it is 429 rate_limited with
// Retry-After; if the
// limits cannot be checked (their store is unreachable) it is 503
// unavailable.
//
// An early read (earlyread.go) passes straight through: its key and rate
// are settled after its handler, before anything is sent.
func (s *Server) limitRequest(c *fiber.Ctx) error {
	if isEarly(c) {
		return c.Next()
	}
	p, _ := principal(c)
	ctx := c.UserContext()
	taken, ok := takenRate(c, p)
	d, err := taken.d, taken.err
	if !ok {
		d, err = s.allow(ctx, p)
	}
	if refusal := s.rateRefusal(c, p, d, err); refusal != nil {
		if h, ok := c.Locals(digestKey{}).([sha256.Size]byte); ok && err == nil {
			s.holdRate(h, d)
		}
		return refusal
	}
	if !s.heavy(c) {
		return c.Next()
	}
	perAccount := s.heavyCap(p.Account.Plan)
	guessed, ok := takenSlot(c, p) // taken beside the key check (slotguess.go)
	release, d, err := guessed.release, guessed.d, guessed.err
	if !ok || (err == nil && !d.Allowed) { // no guess, or at a cap: queue for one
		release, d, err = s.acquireHeavy(ctx, heavyKey(p), perAccount)
	}
	if err != nil {
		return s.limiterDown(err)
	}
	if !d.Allowed {
		setRetryAfter(c, d.RetryAfter)
		if d.Global {
			return errs.New(errs.RateLimited, "the service is running as many heavy requests (bulk screens, CSV exports, large watch creations, filters and stats with q, webhook tests) as it allows at once; retry after %s", retryText(d.RetryAfter))
		}
		return errs.New(errs.RateLimited, "this account (its two keys together) already runs %d heavy requests (bulk screens, CSV exports, large watch creations, filters and stats with q, webhook tests), the most it may run at once on plan %s; wait for one to finish and retry after %s",
			perAccount, p.Account.Plan, retryText(d.RetryAfter))
	}
	defer release() // the answer is ready: a slow reader holds no slot (exportNotices, writeScreen)
	return c.Next()
}

// allow takes one request token of p's key at the rate of p's plan.
func (s *Server) allow(ctx context.Context, p account.Principal) (limit.Decision, error) {
	plan := s.deps.Plans[p.Account.Plan]
	return s.limiter.Allow(ctx, p.Account.ID, rateBucket(p), limit.Rate{PerSecond: plan.RequestsPerSecond, Burst: plan.Burst})
}

// rateRefusal is the answer to p's rate token when it refuses the
// request (429 rate_limited with Retry-After, or 503 when the limits could
// not be checked), nil when it allows it.
func (s *Server) rateRefusal(c *fiber.Ctx, p account.Principal, d limit.Decision, err error) error {
	if err != nil {
		return s.limiterDown(err)
	}
	if d.Allowed {
		return nil
	}
	plan := s.deps.Plans[p.Account.Plan]
	setRetryAfter(c, d.RetryAfter)
	return errs.New(errs.RateLimited, "this key is sending requests faster than plan %s allows (%d a second, bursts of %d); retry after %s",
		p.Account.Plan, plan.RequestsPerSecond, max(plan.Burst, plan.RequestsPerSecond), retryText(d.RetryAfter))
}

// rateHoldMax bounds how long this server refuses a key on its own
// after the limiter refused it the rate (heldRefusal), and so how long a
// key rotated away or an account lapsed meanwhile answers 429 instead of
// 401 or 402.
const rateHoldMax = time.Second

// holdRate remembers that the key of digest h was refused its rate with
// d: until d.RetryAfter has passed (at most rateHoldMax), the rate would
// refuse it again, so its requests are refused here without asking the
// limiter or the key's store (heldRefusal).
func (s *Server) holdRate(h [sha256.Size]byte, d limit.Decision) {
	s.guesses.hold(h, s.deps.Now().Add(min(d.RetryAfter, rateHoldMax)))
}

// heldRefusal is the 429 rate_limited of a request whose key is held
// (holdRate), with the Retry-After left of the hold; nil when it is not
// held. A held key costs its server a map lookup and no Redis or
// database work, so a key hammering past its rate does not slow others.
// The rate is GCRA: a refusal does not change the bucket, and others'
// tokens only move it further away, so the limiter would refuse the
// request too. What it cannot see is a change of the key in its hold: a
// key rotated away or a lapsed account answers 429 until the hold ends
// (at most rateHoldMax), then 401 or 402 as always.
func (s *Server) heldRefusal(c *fiber.Ctx, h [sha256.Size]byte) error {
	now := s.deps.Now()
	g, until, ok := s.guesses.held(h, now)
	if !ok || s.askHeld {
		return nil
	}
	return s.rateRefusal(c, g.principal(), limit.Decision{RetryAfter: until.Sub(now)}, nil)
}

// heavy reports whether the request is heavy (heavyRoutes).
func (s *Server) heavy(c *fiber.Ctx) bool {
	isHeavy, ok := heavyRoutes[c.Method()+" "+c.Route().Path]
	return ok && isHeavy(s, c)
}

// Polling for a heavy slot: the first retry comes soon (a slot often frees
// within milliseconds of a screen's end), later ones further apart.
const (
	heavyPollFirst = 10 * time.Millisecond
	heavyPollMax   = 100 * time.Millisecond
)

// acquireHeavy takes a heavy slot, queueing for up to cfg.HeavyWait while
// the key or the service is at its cap: a queued request holds its
// connection and nothing else (its body is not read yet), so light
// requests keep their latency while heavy ones wait their turn. The last
// refusal is returned when the wait ends without a slot.
func (s *Server) acquireHeavy(ctx context.Context, key string, perKey int) (limit.Release, limit.Decision, error) {
	deadline := time.Now().Add(s.cfg.HeavyWait)
	pause := heavyPollFirst
	for {
		release, d, err := s.limiter.Acquire(ctx, key, perKey)
		if err != nil || d.Allowed || time.Now().Add(pause).After(deadline) {
			return release, d, err
		}
		select {
		case <-ctx.Done():
			return nil, d, nil
		case <-time.After(pause):
		}
		pause = min(2*pause, heavyPollMax)
	}
}

// heavyKey names whose heavy slots a principal's heavy request takes:
// its account's, shared by the account's two keys.
func heavyKey(p account.Principal) string { return p.Account.ID }

// heavyCap is how many heavy requests one account may run at once on
// plan: the plan's number (Heavy; 0 is no cap of its own), but never
// every one of the service's slots when it has more than one, so one
// account cannot keep every other's heavy requests waiting.
func (s *Server) heavyCap(plan string) int {
	n := s.deps.Plans[plan].Heavy
	if g := s.cfg.HeavyConcurrency; g > 1 && (n <= 0 || n >= g) {
		n = g - 1
	}
	return n
}

// rateBucket names the bucket of the API key a principal used among its
// account's: each of an account's two keys has its own request rate.
func rateBucket(p account.Principal) string {
	if p.Kind == account.AccountKey {
		return "acct"
	}
	return "read"
}

func (s *Server) limiterDown(err error) error {
	s.log.Error("request limits could not be checked", "error", err)
	return errs.New(errs.BackendUnavailable, "the request limits could not be checked because their store is unreachable; retry shortly")
}

// setRetryAfter sets Retry-After in whole seconds, at least 1.
func setRetryAfter(c *fiber.Ctx, d time.Duration) {
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retrySeconds(d)))
}

func retrySeconds(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }

func retryText(d time.Duration) string {
	if n := retrySeconds(d); n != 1 {
		return strconv.Itoa(n) + " seconds"
	}
	return "1 second"
}
