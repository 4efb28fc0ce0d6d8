package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
)

// getCompany is GET /v1/companies/{acn_or_abn}: every notice of the company
// (deregistration included), newest first, with its register data. 404
// only when neither the register nor the notices know the identifier.
func (s *Server) getCompany(c *fiber.Ctx) error {
	raw := pathParam(c, "id")
	id, err := ident.ParseParam(raw)
	if err != nil {
		return errs.New(errs.InvalidACN, "%s is not a 9-digit ACN or 11-digit ABN; send digits only (spaces are allowed)", errs.Quote(raw))
	}
	co, err := s.deps.Notices.Company(c.UserContext(), id)
	if err != nil {
		return err
	}
	co.Notices = presentNotices(co.Notices)
	if co.Register != nil && co.Register.FormerNames == nil {
		co.Register.FormerNames = []string{}
	}
	return writeJSON(c, fiber.StatusOK, co)
}
