package api

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"noticesd/internal/account"
	"noticesd/internal/errs"
)

// HeaderAPIKey is the request header that carries the API key.
const HeaderAPIKey = "X-API-Key"

// queryAPIKey is the query parameter that may carry the API key instead.
const queryAPIKey = "api_key"

// principalKey is the fiber Locals key of the authenticated principal.
type principalKey struct{}

// authenticate checks the API key of a /v1/ request: missing or unknown is
// 401 unauthorised, a lapsed subscription 402 subscription_inactive. The key
// comes from the X-API-Key header, else from the api_key query parameter
// (the header wins when both are sent). The principal is stored for the
// handlers (see principal).
func (s *Server) authenticate(c *fiber.Ctx) error {
	key := strings.TrimSpace(c.Get(HeaderAPIKey))
	if key == "" {
		key = strings.TrimSpace(c.Query(queryAPIKey))
	}
	if key == "" {
		return errs.New(errs.Unauthorised, "an API key is required: send it in the %s header or the %s query parameter", HeaderAPIKey, queryAPIKey)
	}
	p, err := s.deps.Accounts.Authenticate(c.UserContext(), key)
	if err != nil {
		if errs.Is(err, errs.Unauthorised) {
			return errs.New(errs.Unauthorised, "the API key is not recognised; check it for typos or ask for a new key")
		}
		return err
	}
	if !p.Account.Active {
		return errs.New(errs.SubscriptionInactive, "the subscription of account %s has lapsed; reactivate it and the same key works again", p.Account.ID)
	}
	c.Locals(principalKey{}, p)
	return c.Next()
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
