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

// Company returns the company view; see store.Notices. An ABN is resolved
// to the first ACN the register gives it.
//
// The view's notices are those carrying id or an identifier of the other
// kind that the register rows carrying id give (companyQueryOf), so they
// depend on those rows. They are read together anyway, in one _msearch
// (companySearches): the notices of id or of the identifiers the register
// almost always gives (guessOthers: an ACN's ABN is two check digits
// followed by it), kept only when the rows give no other identifier, and
// filtered to the ones the rows do give. A register giving another
// identifier costs a second request, the exact one.
func (s *Store) Company(ctx context.Context, id ident.ID) (notice.Company, error) {
	req := companySearches(s, id)
	ans, err := s.msearch(ctx, req.searches)
	if err != nil {
		return notice.Company{}, err
	}
	own, err := s.registerRows(ctx, req.field, id.Value, &ans[0])
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

// companyRequest is what Company sends first, in one _msearch.
type companyRequest struct {
	// field is the register field id is looked up in (acn or abn).
	field string
	// guess is the other identifiers the notices are read with
	// (guessOthers).
	guess []string
	// guessACN, for an ABN, is the ACN whose register rows are read as
	// the company's own (the third search), "" when none is.
	guessACN string
	// searches: the register rows carrying id, the notices of id or
	// guess, and for an ABN the register rows of guessACN; each the first
	// page of what registerRows and scanNotices page through.
	searches []msearchItem
}

// companySearches is the _msearch of id's company view.
func companySearches(s *Store, id ident.ID) companyRequest {
	r := companyRequest{field: "acn", guess: guessOthers(id)}
	if id.Kind == ident.ABN {
		r.field = "abn"
	}
	register, notices := s.Alias(mappings.Register), s.Alias(mappings.Notices)
	r.searches = []msearchItem{
		{register, pageBody(registerBody(r.field, id.Value), 0, window, nil)},
		{notices, pageBody(scanBody(companyQueryWith(id, r.guess), sortPublishedDesc), 0, 1<<30, nil)},
	}
	if id.Kind == ident.ABN && len(r.guess) == 1 {
		r.guessACN = r.guess[0]
		r.searches = append(r.searches, msearchItem{register, pageBody(registerBody("acn", r.guessACN), 0, window, nil)})
	}
	return r
}

// guessOthers is the other identifiers the register almost always gives a
// company: for an ACN, the ABNs formed from it (two check digits followed
// by the ACN; ident.ABNFromACN gives the first of them); for an ABN of 11
// digits, the ACN it ends with.
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

// ofCompany reports whether n is one of the notices companyQueryWith(id,
// others) selects: it carries id, or one of others of the other kind (the
// fields the query's term and terms match are the notice's own acn and
// abn, stored as they are).
func ofCompany(n notice.Notice, id ident.ID, others []string) bool {
	own, other := n.ACN, n.ABN
	if id.Kind == ident.ABN {
		own, other = n.ABN, n.ACN
	}
	return own != nil && *own == id.Value || other != nil && slices.Contains(others, *other)
}
