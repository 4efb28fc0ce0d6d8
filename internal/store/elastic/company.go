package elastic

import (
	"context"
	"slices"
	"strconv"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/mappings"
)

// Company returns the company view (store.Notices); an ABN is resolved to
// the first ACN the register gives it. Rows and notices are read in one
// _msearch (docs/elasticsearch.md, "The company view in one round trip");
// a register giving an identifier guessOthers missed costs a second one.
func (s *Store) Company(ctx context.Context, id ident.ID) (notice.Company, error) {
	req := companySearches(s, id)
	ans, err := s.msearch(ctx, req.searches)
	if err != nil {
		return notice.Company{}, err
	}
	own, err := s.registerRows(ctx, idField(id), id.Value, &ans[0])
	if err != nil {
		return notice.Company{}, err
	}
	others := othersOf(id, own)
	var ns []notice.Notice
	if !slices.ContainsFunc(others, func(v string) bool { return !slices.Contains(req.guess, v) }) { // others within guess
		ns, err = s.scanNotices(ctx, companyQueryWith(id, req.guess), sortPublishedDesc, 1<<30, &ans[1])
		ns = slices.DeleteFunc(ns, func(n notice.Notice) bool { return !ofCompany(n, id, others) })
	} else {
		ns, err = s.scanNotices(ctx, companyQueryWith(id, others), sortPublishedDesc, 1<<30, nil)
	}
	if err != nil {
		return notice.Company{}, err
	}
	// For an ABN, the company's own rows are those of its first ACN.
	regs := own
	if id.Kind == ident.ABN && len(own) > 0 {
		if own[0].ACN == req.guessACN {
			regs, err = s.registerRows(ctx, "acn", req.guessACN, &ans[2])
		} else {
			regs, err = s.registerRows(ctx, "acn", own[0].ACN, nil)
		}
		if err != nil {
			return notice.Company{}, err
		}
	}
	if len(regs) == 0 && len(ns) == 0 {
		return notice.Company{}, errs.New(errs.NotFound,
			"no company with %s %s in the register or the notices; check the number (a company's ABN is two digits followed by its ACN)", id.Kind, id.Value)
	}
	return notice.BuildCompany(id, regs, ns), nil
}

// companyRequest is what Company sends first, in one _msearch: the first
// pages of id's register rows, of the notices of id or guess
// (guessOthers), and for an ABN of guessACN's rows (the company's own).
type companyRequest struct {
	guessACN string
	guess    []string
	searches []msearchItem
}

// companySearches is the _msearch of id's company view.
func companySearches(s *Store, id ident.ID) companyRequest {
	r := companyRequest{guess: guessOthers(id)}
	register, notices := s.Alias(mappings.Register), s.Alias(mappings.Notices)
	r.searches = []msearchItem{
		{register, pageBody(registerBody(idField(id), id.Value), scanPage, nil)},
		{notices, pageBody(scanBody(companyQueryWith(id, r.guess), sortPublishedDesc), scanPage, nil)},
	}
	if id.Kind == ident.ABN && len(r.guess) == 1 {
		r.guessACN = r.guess[0]
		r.searches = append(r.searches, msearchItem{register, pageBody(registerBody("acn", r.guessACN), scanPage, nil)})
	}
	return r
}

// guessOthers is the identifiers the register almost always gives a
// company: an ACN's ABNs (two check digits followed by it), an ABN's ACN
// (what it ends with).
func guessOthers(id ident.ID) []string {
	switch {
	case !digits(id.Value):
		return nil
	case id.Kind == ident.ABN && len(id.Value) == 11:
		return []string{id.Value[2:]}
	case id.Kind == ident.ABN || len(id.Value) != 9:
		return nil
	}
	var out []string
	for p := 10; p <= 99; p++ {
		if abn := strconv.Itoa(p) + id.Value; ident.ValidABN(abn) {
			out = append(out, abn)
		}
	}
	return out
}

// ofCompany reports whether companyQueryWith(id, others) selects n.
func ofCompany(n notice.Notice, id ident.ID, others []string) bool {
	own, other := n.ACN, n.ABN
	if id.Kind == ident.ABN {
		own, other = n.ABN, n.ACN
	}
	return own != nil && *own == id.Value || other != nil && slices.Contains(others, *other)
}
