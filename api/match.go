package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/watch"
)

// screen is POST /v1/match, the one-off bulk screen. Any valid key may call
// it. Every distinct submitted identifier (after removing spaces and
// duplicates) lands in exactly one of matched, unmatched and unresolved, in
// the caller's first-seen order; counts.submitted is the number of those
// distinct identifiers, so it equals the sum of the other three counts.
// A CSV body takes its filters from the query string (screenQueryFilters)
// and its CSV answer gives the upload back with the results appended.
func (s *Server) screen(c *fiber.Ctx) error {
	body, err := s.requestBody(c)
	if err != nil {
		return err
	}
	req, err := parseScreenRequest(c, body)
	if err != nil {
		return err
	}
	if req.Filters, err = screenQueryFilters(c, req); err != nil {
		return err
	}
	asCSV := wantsCSV(c)
	var opts csvOptions
	if asCSV {
		if opts, err = csvOpts(c); err != nil {
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
	if res.UnmatchedCompanies == nil {
		res.UnmatchedCompanies = []watch.UnmatchedCompany{}
	}
	res.Counts = watch.ScreenCounts{
		Submitted:  len(req.Identifiers),
		Matched:    len(res.Matched),
		Unmatched:  len(res.Unmatched),
		Unresolved: len(res.Unresolved),
	}
	if asCSV {
		s.writeScreenCSV(c, res, req, opts)
		return nil
	}
	writeScreen(c, res)
	return nil
}

// screenFilterParams are the query parameters of a CSV body's filters, the
// names of the JSON form's filters members.
var screenFilterParams = []string{"appointment_type", "notice_purpose", "notice_code", "state", "status", "q", "include_deregistration"}

// screenQueryFilters reads the filters of a CSV body from the query string:
// the enumerated filters repeated or comma-separated (as on GET
// /v1/notices), q in the search grammar, include_deregistration true or
// false (true when absent, as on the JSON form). A JSON body carries its
// filters in the body: any of these parameters beside one is
// invalid_filter, rather than silently ignored.
func screenQueryFilters(c *fiber.Ctx, req watch.MatchRequest) (watch.Filters, error) {
	p := params{c}
	if req.Upload == nil {
		for _, name := range screenFilterParams {
			if len(p.values(name)) > 0 {
				return req.Filters, errs.New(errs.InvalidFilter, "the query parameter %s filters a CSV body only; with a JSON body send it in the body's filters member", name)
			}
		}
		return req.Filters, nil
	}
	f := watch.Filters{
		AppointmentType: p.list("appointment_type"),
		NoticePurpose:   p.list("notice_purpose"),
		NoticeCode:      p.list("notice_code"),
		State:           p.list("state"),
		Status:          p.list("status"),
	}
	q, _, err := p.scalar("q")
	if err != nil {
		return f, err
	}
	if _, err := parseQ(q); err != nil {
		return f, errs.New(errs.InvalidFilter, "q is not a valid search query: %s", problem(err))
	}
	f.Q = q
	if _, ok, err := p.scalar("include_deregistration"); err != nil {
		return f, err
	} else if ok {
		b, err := p.boolean("include_deregistration", true)
		if err != nil {
			return f, errs.New(errs.InvalidFilter, "%s", problem(err))
		}
		f.IncludeDeregistration = &b
	}
	return f, nil
}

// problem is the message of an *errs.Error, or the error's text.
func problem(err error) string {
	if e, ok := errs.As(err); ok {
		return e.Message
	}
	return err.Error()
}
