package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/watch"
)

// screen is POST /v1/match, the one-off bulk screen. Any valid key may call
// it. Every distinct submitted identifier (after removing spaces and
// duplicates) lands in exactly one of matched, unmatched and unresolved, in
// the caller's first-seen order; counts.submitted is the number of those
// distinct identifiers, so it equals the sum of the other three counts.
func (s *Server) screen(c *fiber.Ctx) error {
	body, err := s.requestBody(c)
	if err != nil {
		return err
	}
	req, err := parseScreenRequest(c, body)
	if err != nil {
		return err
	}
	asCSV := wantsCSV(c)
	raw := false
	if asCSV {
		if raw, err = csvRaw(c); err != nil {
			return err
		}
	}
	f, err := req.Filters.NoticeFilter()
	if err != nil {
		return err
	}
	ws, err := s.watches()
	if err != nil {
		return err
	}
	res, err := ws.Screen(c.UserContext(), req.Identifiers, f)
	if err != nil {
		return err
	}
	if res.Matched == nil {
		res.Matched = []watch.Matched{}
	}
	if res.Unmatched == nil {
		res.Unmatched = []string{}
	}
	if res.Unresolved == nil {
		res.Unresolved = []string{}
	}
	res.Counts = watch.ScreenCounts{
		Submitted:  len(req.Identifiers),
		Matched:    len(res.Matched),
		Unmatched:  len(res.Unmatched),
		Unresolved: len(res.Unresolved),
	}
	if asCSV {
		s.writeScreenCSV(c, res, req.Identifiers, raw)
		return nil
	}
	writeScreen(c, res)
	return nil
}
