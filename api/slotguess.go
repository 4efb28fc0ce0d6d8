package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/limit"
)

// Heavy slots taken on a guess.
//
// A heavy request (heavyRoutes) needs its key checked, a rate token and a
// heavy slot. The rate token is taken with the key check on the guess of
// the key's principal (rateguess.go); the slot is taken the same way. In
// the scale mode (Deps.HeavyGate) the key check, the token and the
// account's part of the slot are one Redis script call, in the account's
// cluster slot, and the service's part a second call (the service's heavy
// set is in the namespace's slot), so a heavy request with a key this
// server has seen waits two round trips before its handler; without a
// HeavyGate the slot is taken by the Limiter beside the key check. The work still
// starts only once the slot is held: the slot caps the work itself.
//
// The HeavyGate takes the slot only for the guessed principal, active, and
// when its rate token is allowed. Taken beside the check, the slot is
// given back at once when the check refuses the key (401, 402) or the rate
// refuses the request (429). When the principal is not the guessed one
// (the account changed plan) the request takes the right slot as without a
// guess. When the guessed slot was refused (the key or the service at its
// cap), the request queues for one as before (acquireHeavy).

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

// takeSlotGuess starts taking the heavy slot of guess g, the principal
// the key had last time, beside the key check (without a HeavyGate).
func (s *Server) takeSlotGuess(ctx context.Context, g rateGuess) *slotGuess {
	sg := &slotGuess{guess: g, ch: make(chan slotAnswer, 1)}
	perAccount := s.heavyCap(g.plan)
	go func() {
		release, d, err := s.limiter.Acquire(ctx, heavyKey(g.principal()), perAccount)
		sg.ch <- slotAnswer{release: release, d: d, err: err}
	}()
	return sg
}

// answeredSlot is the slot taken on guess g, answered a.
func answeredSlot(g rateGuess, a slotAnswer) *slotGuess {
	sg := &slotGuess{guess: g, ch: make(chan slotAnswer, 1)}
	sg.ch <- a
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
