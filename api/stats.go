package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/notice"
)

// stats is GET /v1/stats: counts grouped by group_by (default month).
// Months run ascending with every month between from and to present (0 when
// empty; with open bounds, between the first and last month holding data);
// other groupings run by count descending, then key.
func (s *Server) stats(c *fiber.Ctx) error {
	sq, err := params{c}.stats()
	if err != nil {
		return err
	}
	st, err := s.deps.Notices.Stats(c.UserContext(), sq)
	if err != nil {
		return err
	}
	st.GroupBy = sq.GroupBy
	notice.FinishStats(&st, sq.From, sq.To)
	if st.Data == nil {
		st.Data = []notice.Bucket{}
	}
	return writeJSON(c, fiber.StatusOK, st)
}
