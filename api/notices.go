package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// searchResponse is the envelope of GET /v1/notices. Data is
// []notice.Notice, or []highlighted when the search has a q of words.
type searchResponse struct {
	Data    any   `json:"data"`
	Page    int   `json:"page"`
	Limit   int   `json:"limit"`
	Total   int64 `json:"total"`
	HasMore bool  `json:"has_more"`
}

// highlighted is a search result with the fragments of its text around
// the words of q (query.Highlight: one rule, computed here from the stored
// text, so both backends answer the same bytes).
type highlighted struct {
	notice.Notice
	Highlight []string `json:"highlight"`
}

// withHighlights returns ns as search results: with their highlight
// when q (a parsed q of words) is given, as they are otherwise.
func withHighlights(ns []notice.Notice, q query.Node) any {
	ns = presentNotices(ns)
	if q == nil {
		return ns
	}
	out := make([]highlighted, len(ns))
	for i, n := range ns {
		out[i] = highlighted{Notice: n, Highlight: query.Highlight(q, n.Text)}
	}
	return out
}

// searchNotices is GET /v1/notices: one page of matching notices and the
// exact total.
func (s *Server) searchNotices(c *fiber.Ctx) error {
	if wantsCSV(c) {
		return s.exportNotices(c)
	}
	sq, err := params{c}.search()
	if err != nil {
		return err
	}
	page, err := s.deps.Notices.Search(c.UserContext(), sq)
	if err != nil {
		return err
	}
	return writeJSON(c, fiber.StatusOK, searchResponse{
		Data:    withHighlights(page.Notices, sq.Q),
		Page:    sq.Page,
		Limit:   sq.Limit,
		Total:   page.Total,
		HasMore: int64(sq.Page)*int64(sq.Limit) < page.Total,
	})
}

// getNotice is GET /v1/notices/{id}.
func (s *Server) getNotice(c *fiber.Ctx) error {
	n, err := s.deps.Notices.Notice(c.UserContext(), pathParam(c, "id"))
	if err != nil {
		return err
	}
	return writeJSON(c, fiber.StatusOK, presentNotice(n))
}

// presentNotices returns notices ready to encode: never a null list.
func presentNotices(ns []notice.Notice) []notice.Notice {
	if ns == nil {
		return []notice.Notice{}
	}
	for i := range ns {
		ns[i] = presentNotice(ns[i])
	}
	return ns
}

// presentNotice returns n ready to encode: practitioners is [] not null.
func presentNotice(n notice.Notice) notice.Notice {
	if n.Practitioners == nil {
		n.Practitioners = []notice.Practitioner{}
	}
	return n
}
