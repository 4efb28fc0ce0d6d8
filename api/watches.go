package api

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/watch"
)

// Paging limits of GET /v1/watches/{id}/matches.
const (
	DefaultMatchesLimit = 100
	MaxMatchesLimit     = 500
)

// watchList is the envelope of GET /v1/watches.
type watchList struct {
	Data []watch.Summary `json:"data"`
}

// matchesResponse is the envelope of GET /v1/watches/{id}/matches.
type matchesResponse struct {
	Data      []notice.Notice `json:"data"`
	Since     int64           `json:"since"`
	NextSince int64           `json:"next_since"`
	HasMore   bool            `json:"has_more"`
}

// createWatch is POST /v1/watches: validate the body (API.md's order), then
// store it if the account's plan has room. The watch-count and company
// checks and the write are one atomic step in the store, so a rejected
// request writes nothing and concurrent creates cannot overshoot. 201 with
// the full watch object and a Location header naming it.
func (s *Server) createWatch(c *fiber.Ctx) error {
	body, err := s.requestBody(c)
	if err != nil {
		return err
	}
	req, err := watch.ParseCreate(body)
	if err != nil {
		return err
	}
	ws, err := s.watches()
	if err != nil {
		return err
	}
	p, _ := principal(c)
	plan, err := s.planOf(p.Account)
	if err != nil {
		return err
	}
	w, err := ws.CreateWatch(c.UserContext(), watch.New(req, p.Account.ID, s.deps.Now()), plan)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderLocation, "/v1/watches/"+w.ID)
	return writeJSON(c, fiber.StatusCreated, w)
}

// listWatches is GET /v1/watches: the account's watches, oldest first,
// each without its identifiers array.
func (s *Server) listWatches(c *fiber.Ctx) error {
	ws, err := s.watches()
	if err != nil {
		return err
	}
	p, _ := principal(c)
	list, err := ws.ListWatches(c.UserContext(), p.Account.ID)
	if err != nil {
		return err
	}
	out := watchList{Data: make([]watch.Summary, len(list))}
	for i, w := range list {
		out.Data[i] = w.Summary()
	}
	return writeJSON(c, fiber.StatusOK, out)
}

// getWatch is GET /v1/watches/{id}: the full watch object. Another
// account's watch is 404, exactly like a missing one.
func (s *Server) getWatch(c *fiber.Ctx) error {
	ws, err := s.watches()
	if err != nil {
		return err
	}
	p, _ := principal(c)
	w, err := ws.Watch(c.UserContext(), p.Account.ID, pathParam(c, "id"))
	if err != nil {
		return err
	}
	return writeJSON(c, fiber.StatusOK, w)
}

// patchWatch is PATCH /v1/watches/{id}: the body is validated before the
// watch is looked up (API.md's order: a bad body is 400 even on a watch
// that is not the caller's). 200 with the updated watch.
func (s *Server) patchWatch(c *fiber.Ctx) error {
	body, err := s.requestBody(c)
	if err != nil {
		return err
	}
	patch, err := watch.ParsePatch(body)
	if err != nil {
		return err
	}
	ws, err := s.watches()
	if err != nil {
		return err
	}
	p, _ := principal(c)
	w, err := ws.UpdateWatch(c.UserContext(), p.Account.ID, pathParam(c, "id"), patch, s.deps.Now())
	if err != nil {
		return err
	}
	// A reactivation releases held deliveries: wake delivery now.
	s.watchChanged(c, w.ID)
	return writeJSON(c, fiber.StatusOK, w)
}

// deleteWatch is DELETE /v1/watches/{id}: 204 with no body; the watch's
// companies no longer count against the plan.
func (s *Server) deleteWatch(c *fiber.Ctx) error {
	ws, err := s.watches()
	if err != nil {
		return err
	}
	p, _ := principal(c)
	if err := ws.DeleteWatch(c.UserContext(), p.Account.ID, pathParam(c, "id")); err != nil {
		return err
	}
	c.Status(fiber.StatusNoContent)
	return nil
}

// watchMatches is GET /v1/watches/{id}/matches?since=N&limit=L: notices
// matching the watch with notice_seq > since, ascending, full history.
// Polling with since=next_since never misses or repeats a notice.
func (s *Server) watchMatches(c *fiber.Ctx) error {
	pr := params{c}
	since, err := pr.since()
	if err != nil {
		return err
	}
	limit, err := pr.integer("limit", DefaultMatchesLimit, 1, MaxMatchesLimit)
	if err != nil {
		return err
	}
	ws, err := s.watches()
	if err != nil {
		return err
	}
	p, _ := principal(c)
	page, err := ws.Matches(c.UserContext(), p.Account.ID, pathParam(c, "id"), since, limit)
	if err != nil {
		return err
	}
	return writeJSON(c, fiber.StatusOK, matchesResponse{
		Data:      presentNotices(page.Notices),
		Since:     since,
		NextSince: page.NextSince,
		HasMore:   page.HasMore,
	})
}

// since parses the matches cursor: absent is 0; otherwise exactly one
// integer of ASCII digits with at most one leading sign and no spaces. A
// negative one reads as 0, one past int64 as the largest int64. Any other
// value, an empty one or a repeated parameter is invalid_since.
func (p params) since() (int64, error) {
	vs := p.values("since")
	switch len(vs) {
	case 0:
		return 0, nil
	case 1:
	default:
		return 0, errs.New(errs.InvalidSince, "since was given %d times; give it once, as the next_since of the previous page (0 for the start)", len(vs))
	}
	v := vs[0]
	digits := v // without one leading sign
	if v != "" && (v[0] == '+' || v[0] == '-') {
		digits = v[1:]
	}
	bad := digits == ""
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			bad = true
			break
		}
	}
	if bad {
		return 0, errs.New(errs.InvalidSince, "since %s is not an integer; send the next_since of the previous page (0 for the start)", errs.Quote(v))
	}
	// Any integer is accepted: one below 0 is read as 0 (the start), one
	// past every notice_seq (even past int64) reads an empty page.
	if strings.HasPrefix(v, "-") {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil { // out of range: the digits were checked above
		return math.MaxInt64, nil
	}
	return n, nil
}

// watches returns the watch store; a server built without one answers the
// watch routes with a logged server_error.
func (s *Server) watches() (store.Watches, error) {
	if s.deps.Watches == nil {
		return nil, errs.New(errs.ServerError, "no watch store configured (api.Deps.Watches is nil)")
	}
	return s.deps.Watches, nil
}

// planOf returns the limits of an account's plan. An account on a plan the
// configuration does not define is an operator error: logged, and the
// caller gets server_error.
func (s *Server) planOf(a account.Account) (account.Plan, error) {
	if p, ok := s.deps.Plans[a.Plan]; ok {
		return p, nil
	}
	return account.Plan{}, fmt.Errorf("account %s is on plan %q, which the configured plans do not define", a.ID, a.Plan)
}
