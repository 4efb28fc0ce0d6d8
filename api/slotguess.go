package api

import (
	"crypto/sha256"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/limit"
)

// Heavy slots taken on a guess.
//
// A heavy request (heavyRoutes) needs its key checked, a rate token and a
// heavy slot, all three Redis round trips in the scale mode. The rate
// token is already taken beside the key check on the guess of the key's
// principal (rateguess.go); the slot is taken the same way, so a heavy
// request with a key this server has seen waits one round trip before its
// handler instead of two. The work still starts only once the slot is
// held: the slot caps the work itself.
//
// When the check refuses the key (401, 402), the rate refuses the request
// (429) or the principal is not the guessed one (the account changed
// plan), the slot taken is given back at once, and in the last case the
// request takes the right one as without a guess. When the guessed slot was
// refused (the key or the service at its cap), the request queues for one
// as before (acquireHeavy).

// slotAnswer is the limiter's answer to a slot taken on a guess.
type slotAnswer struct {
	release limit.Release
	d       limit.Decision
	err     error
}

// slotGuess is a heavy slot being taken on a guess; checkKey owns it and
// gives it back unless limitRequest takes it over.
type slotGuess struct {
	guess  rateGuess
	ch     chan slotAnswer
	handed bool
}

// slotGuessKey is the fiber Locals key of a request's *slotGuess.
type slotGuessKey struct{}

// guessSlot starts taking the heavy slot of the principal the key of
// digest h had last time, when the request is heavy and the key has been
// seen; nil otherwise.
func (s *Server) guessSlot(c *fiber.Ctx, h [sha256.Size]byte) *slotGuess {
	if !s.heavy(c) {
		return nil
	}
	g, ok := s.guesses.get(h)
	if !ok {
		return nil
	}
	sg := &slotGuess{guess: g, ch: make(chan slotAnswer, 1)}
	ctx, perKey := c.UserContext(), s.deps.Plans[g.plan].Heavy
	go func() {
		release, d, err := s.limiter.Acquire(ctx, g.key, perKey)
		sg.ch <- slotAnswer{release: release, d: d, err: err}
	}()
	return sg
}

// settle gives the slot back unless limitRequest took it over. It is a
// no-op on a nil *slotGuess.
func (sg *slotGuess) settle() {
	if sg == nil || sg.handed {
		return
	}
	sg.handed = true
	if a := <-sg.ch; a.err == nil && a.d.Allowed {
		a.release()
	}
}

// takenSlot returns the answer to the slot taken on a guess for p, if one
// was taken and the guess was right; the caller then owns the slot (if it
// was allowed). A wrong guess's slot is given back.
func takenSlot(c *fiber.Ctx, p account.Principal) (slotAnswer, bool) {
	sg, ok := c.Locals(slotGuessKey{}).(*slotGuess)
	if !ok || sg.handed {
		return slotAnswer{}, false
	}
	if sg.guess != guessFor(p) {
		sg.settle()
		return slotAnswer{}, false
	}
	sg.handed = true
	return <-sg.ch, true
}
