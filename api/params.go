package api

import (
	"errors"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// Paging limits of GET /v1/notices.
const (
	DefaultLimit = 20
	MaxLimit     = 100
	// MaxDepth is the largest page*limit accepted; deeper reads use filters
	// or the matches cursor.
	MaxDepth = 10000
)

// params reads the query string of one request. Unknown parameters are
// ignored. A scalar parameter given more than once is invalid_parameter,
// since which one was meant cannot be known.
type params struct {
	c *fiber.Ctx
}

// values returns every value of a parameter, in order.
func (p params) values(name string) []string {
	raw := p.c.Context().QueryArgs().PeekMulti(name)
	out := make([]string, len(raw))
	for i, v := range raw {
		out[i] = string(v)
	}
	return out
}

// scalar returns the one value of a parameter and whether it was sent.
func (p params) scalar(name string) (string, bool, error) {
	vs := p.values(name)
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
		return vs[0], true, nil
	}
	return "", false, errs.New(errs.InvalidParameter, "%s was given %d times; give it once", name, len(vs))
}

// list returns the values of a multi-valued filter parameter: repeated
// and comma-separated values, trimmed, empties dropped, duplicates removed.
func (p params) list(name string) []string {
	var out []string
	for _, v := range p.values(name) {
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			if part != "" && !slices.Contains(out, part) {
				out = append(out, part)
			}
		}
	}
	return out
}

// filter parses the parameters shared by search, filters and stats:
// q, acn, the enumerated filters, from, to and include_deregistration
// (default false on these routes, as API.md says: even notice_purpose=
// Deregistration needs include_deregistration=true).
func (p params) filter() (notice.Filter, error) {
	var f notice.Filter
	q, _, err := p.scalar("q")
	if err != nil {
		return f, err
	}
	qid, qIsID := ident.Normalise(q)
	if !qIsID {
		if f.Q, err = parseQ(q); err != nil {
			return f, err
		}
	}
	if acn, ok, err := p.scalar("acn"); err != nil {
		return f, err
	} else if ok {
		id, err := ident.ParseParam(acn)
		if err != nil {
			return f, errs.New(errs.InvalidACN, "acn %s is not a 9-digit ACN or 11-digit ABN; send digits only (spaces are allowed)", errs.Quote(acn))
		}
		if qIsID && id != qid {
			return f, errs.New(errs.InvalidParameter, "q %s is an ACN or ABN, which finds that company's notices as acn does, and acn %s names another; send one of them",
				errs.Quote(q), errs.Quote(acn))
		}
		f.Company = &id
	}
	if qIsID {
		// q of 9 or 11 digits (spaces allowed) is the company's
		// identifier, not words: its notices, as acn finds them.
		f.Company = &qid
	}
	f.AppointmentType = p.list("appointment_type")
	f.NoticePurpose = p.list("notice_purpose")
	f.NoticeCode = p.list("notice_code")
	f.State = p.list("state")
	f.Status = p.list("status")
	if f.From, err = p.date("from"); err != nil {
		return f, err
	}
	if f.To, err = p.date("to"); err != nil {
		return f, err
	}
	if f.From != "" && f.To != "" && f.From > f.To {
		return f, errs.New(errs.InvalidDate, "from %s is after to %s; from must be on or before to", f.From, f.To)
	}
	// Deregistration notices are left out unless include_deregistration=true.
	if f.IncludeDeregistration, err = p.boolean("include_deregistration", false); err != nil {
		return f, err
	}
	return f, nil
}

// parseQ parses q; empty or blank is no query.
func parseQ(q string) (query.Node, error) {
	if strings.TrimSpace(q) == "" {
		return nil, nil
	}
	n, err := query.Parse(q)
	if err != nil {
		if _, ok := errs.As(err); ok {
			return nil, err
		}
		return nil, errs.New(errs.InvalidQuery, "q could not be parsed: %v", err)
	}
	return n, nil
}

// date parses an optional YYYY-MM-DD parameter.
func (p params) date(name string) (string, error) {
	v, ok, err := p.scalar(name)
	if err != nil || !ok {
		return "", err
	}
	if _, valid := notice.ParseDate(v); !valid {
		return "", errs.New(errs.InvalidDate, "%s %s is not a date in YYYY-MM-DD form, such as 2026-02-01", name, errs.Quote(v))
	}
	return v, nil
}

// boolean parses an optional true/false parameter.
func (p params) boolean(name string, def bool) (bool, error) {
	v, ok, err := p.scalar(name)
	if err != nil || !ok {
		return def, err
	}
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errs.New(errs.InvalidParameter, "%s %s must be true or false", name, errs.Quote(v))
}

// integer parses an optional integer parameter within [lo, hi].
func (p params) integer(name string, def, lo, hi int) (int, error) {
	v, ok, err := p.scalar(name)
	if err != nil || !ok {
		return def, err
	}
	n, err := strconv.Atoi(v)
	if errors.Is(err, strconv.ErrRange) {
		return 0, errs.New(errs.InvalidParameter, "%s %s is out of range; send a whole number from %d to %d", name, errs.Quote(v), lo, hi)
	}
	if err != nil {
		return 0, errs.New(errs.InvalidParameter, "%s %s is not an integer; send a whole number from %d to %d", name, errs.Quote(v), lo, hi)
	}
	if n < lo || n > hi {
		return 0, errs.New(errs.InvalidParameter, "%s %d is out of range; send a whole number from %d to %d", name, n, lo, hi)
	}
	return n, nil
}

// search parses the parameters of GET /v1/notices.
func (p params) search() (notice.SearchQuery, error) {
	sq, err := p.searchOrder()
	if err != nil {
		return sq, err
	}
	sq.Limit, sq.Page, err = p.paging("narrow the search with filters (from, to, state, ...) or read a watch's matches with its since cursor")
	return sq, err
}

// paging parses limit (1..MaxLimit, default DefaultLimit) and page (from
// 1), whose product may not pass MaxDepth; deeper says what to do instead.
func (p params) paging(deeper string) (limit, page int, err error) {
	if limit, err = p.integer("limit", DefaultLimit, 1, MaxLimit); err != nil {
		return 0, 0, err
	}
	if page, err = p.integer("page", 1, 1, math.MaxInt32); err != nil {
		return 0, 0, err
	}
	if page*limit > MaxDepth {
		return 0, 0, errs.New(errs.InvalidParameter, "page %d with limit %d reaches past result %d, the deepest a search pages; %s",
			page, limit, MaxDepth, deeper)
	}
	return limit, page, nil
}

// names parses the parameters of GET /v1/companies?name=: name (required,
// at most MaxNameLength characters, with a letter or digit), limit and
// page as on GET /v1/notices.
func (p params) names() (notice.NameQuery, error) {
	var nq notice.NameQuery
	name, ok, err := p.scalar("name")
	if err != nil {
		return nq, err
	}
	if !ok || strings.TrimSpace(name) == "" {
		return nq, errs.New(errs.InvalidParameter, "name is required: the words of a company name, such as name=acme holdings (or GET /v1/companies/{acn_or_abn} for an ACN or ABN)")
	}
	if n := utf8.RuneCountInString(name); n > MaxNameLength {
		return nq, errs.New(errs.InvalidParameter, "name is %d characters long; send at most %d", n, MaxNameLength)
	}
	if nq.Words = query.Words(name); len(nq.Words) == 0 {
		return nq, errs.New(errs.InvalidParameter, "name %s has no letter or digit to search for; send words of the company's name", errs.Quote(name))
	}
	nq.Limit, nq.Page, err = p.paging("give more of the name")
	return nq, err
}

// searchOrder parses the filters and the sort of GET /v1/notices, not its
// paging: all a CSV export reads (it ignores limit and page).
func (p params) searchOrder() (notice.SearchQuery, error) {
	var sq notice.SearchQuery
	f, err := p.filter()
	if err != nil {
		return sq, err
	}
	sq.Filter = f
	sort, ok, err := p.scalar("sort")
	if err != nil {
		return sq, err
	}
	switch {
	case !ok && f.Q != nil:
		sq.Sort = notice.SortRelevance
	case !ok:
		sq.Sort = notice.SortPublishedDesc
	case sort == notice.SortPublishedDesc, sort == notice.SortPublishedAsc:
		sq.Sort = sort
	case sort == notice.SortRelevance:
		// Without q nothing is scored; relevance means newest first.
		sq.Sort = notice.SortRelevance
		if f.Q == nil {
			sq.Sort = notice.SortPublishedDesc
		}
	default:
		return sq, errs.New(errs.InvalidParameter, "sort %s is not one of published_desc, published_asc, relevance", errs.Quote(sort))
	}
	return sq, nil
}

// stats parses the parameters of GET /v1/stats: group_by (default month)
// and the shared filters.
func (p params) stats() (notice.StatsQuery, error) {
	var sq notice.StatsQuery
	g, ok, err := p.scalar("group_by")
	if err != nil {
		return sq, err
	}
	if !ok {
		g = "month"
	}
	if !slices.Contains(notice.GroupByKeys, g) {
		return sq, errs.New(errs.InvalidGroupBy, "group_by %s is not one of %s", errs.Quote(g), strings.Join(notice.GroupByKeys, ", "))
	}
	sq.GroupBy = g
	if sq.Filter, err = p.filter(); err != nil {
		return sq, err
	}
	return sq, nil
}

// pathParam returns a path parameter percent-decoded, so
// /v1/companies/123%20456%20780 reads "123 456 780".
func pathParam(c *fiber.Ctx, name string) string {
	v := c.Params(name)
	if d, err := url.PathUnescape(v); err == nil {
		return d
	}
	return v
}
