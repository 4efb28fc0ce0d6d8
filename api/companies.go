package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
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

// MaxNameLength is the longest name a company name search accepts, in
// characters.
const MaxNameLength = 200

// companiesResponse is the envelope of GET /v1/companies?name=, the
// search envelope of GET /v1/notices.
type companiesResponse struct {
	Data    []notice.NameMatch `json:"data"`
	Page    int                `json:"page"`
	Limit   int                `json:"limit"`
	Total   int64              `json:"total"`
	HasMore bool               `json:"has_more"`
}

// findCompanies is GET /v1/companies?name=: the register companies one of
// whose names (current or former) holds the words of name, ranked
// (notice.RankNames), one page.
func (s *Server) findCompanies(c *fiber.Ctx) error {
	nq, err := params{c}.names()
	if err != nil {
		return err
	}
	page, err := s.deps.Notices.CompaniesByName(c.UserContext(), nq)
	if err != nil {
		return err
	}
	data := page.Companies
	if data == nil {
		data = []notice.NameMatch{}
	}
	return writeJSON(c, fiber.StatusOK, companiesResponse{
		Data:    data,
		Page:    nq.Page,
		Limit:   nq.Limit,
		Total:   page.Total,
		HasMore: int64(nq.Page)*int64(nq.Limit) < page.Total,
	})
}
