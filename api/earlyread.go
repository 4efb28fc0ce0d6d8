package api

import (
	"context"
	"crypto/sha256"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/noticesd/noticesd/internal/account"
)

// Early reads.
//
// In the scale mode a request's key check and its rate token are Redis
// round trips (rateguess.go already runs them side by side). Before the
// handler, they were about a third of the time the API took to answer a
// read that Elasticsearch answers in under a millisecond (filters, stats,
// a company). So a GET or HEAD on a read route (the routes a read-only key
// may use and that only read: search, notice, company, filters, stats),
// sent with a key that authenticated on this server before, runs its
// handler while the key is being checked and its token taken, rather than
// after.
//
// Nothing of that answer leaves the server before both have allowed the
// request: the handler only fills the response, which is sent when the
// middleware chain returns. When either refuses (401 unknown key, 402
// lapsed subscription, 429 over the rate, 503 Redis unreachable), the
// handler's answer is thrown away, its work is cancelled, and the request
// gets exactly the error it would have got had the handler never run, in
// API.md's order of checks (401, 402, then the rate, then the handler's
// own 400 or 404).
//
// Not early: a key this server has not seen authenticate (it is checked
// first, as every key used to be), a key refused since, or whose check
// failed because Redis was unreachable (forgotten until it authenticates
// again, so an outage does not make every read run for nothing), a key refused its rate (held until its Retry-After
// has passed), heavy requests (filters and stats with q: their heavy slot
// caps the work itself, so it is taken first) and every route that writes
// or needs the account key.
//
// What it costs: a key revoked or lapsed since its last request to this
// server makes one read run for nothing, and so does a key over its rate,
// once per Retry-After. noticesd_http_early_reads_total counts early reads
// kept and discarded.

// earlyKey is the fiber Locals key set on a request that runs early.
type earlyKey struct{}

// isEarly reports whether the request runs early (its key and rate are
// settled after its handler).
func isEarly(c *fiber.Ctx) bool {
	_, ok := c.Locals(earlyKey{}).(bool)
	return ok
}

// keyAnswer is the answer of a key check run beside the handler, with
// the rate token taken with it (nil when none was).
type keyAnswer struct {
	p     account.Principal
	err   error
	token chan rateAnswer
}

// authenticateRead is authenticate for GET and HEAD on the read routes:
// the request runs early when its key allows it (see above), else it is
// checked first.
func (s *Server) authenticateRead(c *fiber.Ctx) error {
	key, err := requestKey(&c.Request().Header, c.Request().URI().QueryString())
	if err != nil {
		return err
	}
	digest := keyDigest(key)
	if err := s.heldRefusal(c, digest); err != nil {
		return err
	}
	g, ok := s.guesses.early(digest, s.deps.Now())
	if !ok || s.heavy(c) {
		return s.checkKey(c, key, digest)
	}
	return s.readEarly(c, key, digest, g)
}

// readEarly runs the rest of the chain while key is checked and the rate
// token of guess g is taken, then keeps the answer or replaces it with the
// refusal.
func (s *Server) readEarly(c *fiber.Ctx, key string, digest [sha256.Size]byte, g rateGuess) error {
	parent := c.UserContext()
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	checked := make(chan keyAnswer, 1)
	go func() {
		p, token, _, err := s.checkGuessed(parent, key, g, false)
		if err != nil || !p.Account.Active {
			cancel() // the handler's answer will not be used
		}
		checked <- keyAnswer{p: p, err: err, token: token}
	}()

	var head fasthttp.ResponseHeader
	c.Response().Header.CopyTo(&head)
	c.Locals(earlyKey{}, true)
	c.SetUserContext(ctx)
	handled := s.recoverPanic(c) // a panic's 500 must not pass a refused key
	c.SetUserContext(parent)
	discard := func() {
		head.CopyTo(&c.Response().Header)
		c.Response().ResetBody()
		s.metrics.ObserveEarlyRead(false)
	}

	a := <-checked
	if err := s.admit(digest, a.p, a.err); err != nil {
		discard()
		s.guesses.forget(digest) // also when Redis is away: fail fast, no read
		return err
	}
	c.Locals(principalKey{}, a.p)
	var r rateAnswer
	if a.token != nil {
		r = <-a.token
	}
	d, err := r.d, r.err
	if a.token == nil || r.guess != guessFor(a.p) { // the account changed plan: its own token
		d, err = s.allow(parent, a.p)
	}
	if err != nil || !d.Allowed {
		discard()
		if err != nil {
			s.guesses.forget(digest)
		} else {
			s.holdRate(digest, d)
		}
		return s.rateRefusal(c, a.p, d, err)
	}
	s.guesses.set(digest, guessFor(a.p))
	s.metrics.ObserveEarlyRead(true)
	return handled
}
