package api

import (
	"cmp"
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/notice"
)

// filters is GET /v1/filters: the values of each enumerated field among the
// notices matching the search filters and q, with counts,
// each list by count descending, then value.
func (s *Server) filters(c *fiber.Ctx) error {
	f, err := params{c}.filter()
	if err != nil {
		return err
	}
	fc, err := s.deps.Notices.Filters(c.UserContext(), f)
	if err != nil {
		return err
	}
	for _, l := range []*[]notice.ValueCount{&fc.AppointmentType, &fc.NoticePurpose, &fc.NoticeCode, &fc.State, &fc.Status} {
		if *l == nil {
			*l = []notice.ValueCount{}
		}
		slices.SortStableFunc(*l, func(a, b notice.ValueCount) int {
			if a.Count != b.Count {
				return cmp.Compare(b.Count, a.Count)
			}
			return cmp.Compare(a.Value, b.Value)
		})
	}
	return writeJSON(c, fiber.StatusOK, fc)
}
