package api

import (
	"context"
	"crypto/sha256"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/limit"
)

// HeaderAPIKey is the request header that carries the API key.
const HeaderAPIKey = "X-API-Key"

// queryAPIKey is the query parameter that may carry the API key instead.
const queryAPIKey = "api_key"

// bearerScheme is the Authorization scheme that carries the API key
// (Authorization: Bearer <key>).
const bearerScheme = "Bearer"

// requestKey returns the API key of a request: the X-API-Key header, else
// an Authorization: Bearer header, else the api_key query parameter. No key
// is 401 unauthorised. An Authorization header of another scheme (Basic,
// from a proxy or a browser) is not a key: it is passed over when a key
// comes in X-API-Key or api_key, and named in the 401 when none does.
func requestKey(h *fasthttp.RequestHeader, query []byte) (string, error) {
	if key := strings.TrimSpace(string(h.Peek(HeaderAPIKey))); key != "" {
		return key, nil
	}
	otherScheme := false
	if auth := strings.TrimSpace(string(h.Peek(fiber.HeaderAuthorization))); auth != "" {
		scheme, token, _ := strings.Cut(auth, " ")
		token = strings.TrimSpace(token)
		if strings.EqualFold(scheme, bearerScheme) && token != "" {
			return token, nil
		}
		otherScheme = true
	}
	var args fasthttp.Args
	args.ParseBytes(query)
	if key := strings.TrimSpace(string(args.Peek(queryAPIKey))); key != "" {
		return key, nil
	}
	if otherScheme {
		return "", errs.New(errs.Unauthorised, "the Authorization header must be '%s <key>' with the API key; other schemes are not accepted (or send the key in the %s header or the %s query parameter)", bearerScheme, HeaderAPIKey, queryAPIKey)
	}
	return "", errs.New(errs.Unauthorised, "an API key is required: send it as 'Authorization: %s <key>', in the %s header or in the %s query parameter", bearerScheme, HeaderAPIKey, queryAPIKey)
}

// principalKey is the fiber Locals key of the authenticated principal.
type principalKey struct{}

// authenticate checks the API key of a /v1/ request: missing or unknown is
// 401 unauthorised, a lapsed subscription 402 subscription_inactive. The key
// comes from requestKey (X-API-Key, else Authorization: Bearer, else the
// api_key query parameter). The principal is stored for the handlers (see
// principal).
func (s *Server) authenticate(c *fiber.Ctx) error {
	key, err := requestKey(&c.Request().Header, c.Request().URI().QueryString())
	if err != nil {
		return err
	}
	digest := keyDigest(key)
	if err := s.heldRefusal(c, digest); err != nil {
		return err
	}
	return s.checkKey(c, key, digest)
}

// KeyGate checks an API key and, when it belongs to the expected
// principal (the same account, key kind and plan) and that account is
// active, takes one request token of the account's bucket (a rateBucket)
// at rate r in the same step; taken says whether it did, d is then the
// rate's answer.
// It is Accounts.Authenticate and Limiter.Allow in one: in the scale mode
// redisstore's AuthenticateAndAllow, one Redis round trip instead of two.
// Its errors are Authenticate's.
type KeyGate func(ctx context.Context, key string, expect account.Principal, bucket string, r limit.Rate) (p account.Principal, taken bool, d limit.Decision, err error)

// HeavyGate is KeyGate for a heavy request: when it takes the rate token
// and the token is allowed, it also takes a heavy slot of the expected
// account (heavyKey: at most perKey at once, 0 for no cap, and one of the
// service's). slot.Asked says whether the slot was tried; an allowed
// slot's Release gives it back. It is KeyGate and Limiter.Acquire in one:
// in the scale mode the Redis store's SlotGate on the limit.Redis, the
// key, token and account's slot in one script call in the account's
// Redis Cluster slot, the service's slot in a second call.
type HeavyGate func(ctx context.Context, key string, expect account.Principal, bucket string, r limit.Rate, perKey int) (p account.Principal, taken bool, d limit.Decision, slot limit.Slot, err error)

// digestKey is the fiber Locals key of the digest of the request's key.
type digestKey struct{}

// checkKey checks key (its digest computed by the caller) and, when it is
// admitted, runs the rest of the chain.
func (s *Server) checkKey(c *fiber.Ctx, key string, digest [sha256.Size]byte) error {
	// The rate token, and a heavy request's slot, are taken with the
	// check (rateguess.go, slotguess.go).
	p, guessed, slot, err := s.checkKeyRate(c.UserContext(), key, digest, s.heavy(c))
	defer slot.settle() // given back unless limitRequest took it
	if err := s.admit(digest, p, err); err != nil {
		return err
	}
	c.Locals(principalKey{}, p)
	c.Locals(digestKey{}, digest)
	s.rememberRate(digest, p, guessed, c)
	if slot != nil {
		c.Locals(slotGuessKey{}, slot)
	}
	return c.Next()
}

// admit turns the answer of a key check into the request's fate: nil for
// an active principal, 401 unauthorised for an unknown key, 402
// subscription_inactive for a lapsed subscription, the store's error when
// the key could not be checked. A refused key is forgotten (rateguess.go):
// its next request is checked before anything else runs.
func (s *Server) admit(digest [sha256.Size]byte, p account.Principal, err error) error {
	if err != nil {
		if errs.Is(err, errs.Unauthorised) {
			s.guesses.forget(digest)
			return errs.New(errs.Unauthorised, "the API key is not recognised; check it for typos or ask for a new key")
		}
		return err
	}
	if !p.Account.Active {
		s.guesses.forget(digest)
		return errs.New(errs.SubscriptionInactive, "the subscription of account %s has lapsed; reactivate it and the same key works again", p.Account.ID)
	}
	return nil
}

// requireAccountKey lets only account keys through (watch and webhook
// routes); a read-only key is 403 account_required. It runs after
// authenticate.
func requireAccountKey(c *fiber.Ctx) error {
	if p, ok := principal(c); !ok || p.Kind != account.AccountKey {
		return errs.New(errs.AccountRequired, "this route needs the account key; the read-only key can only search and read")
	}
	return c.Next()
}

// principal returns the authenticated caller of a /v1/ request.
func principal(c *fiber.Ctx) (account.Principal, bool) {
	p, ok := c.Locals(principalKey{}).(account.Principal)
	return p, ok
}
