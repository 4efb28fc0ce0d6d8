// Package matcher is the one place that decides whether a notice matches a
// watch. FilterMatches applies a notice.Filter to one notice with the same
// semantics as the SQL backend; Index finds, for an arriving notice, every
// watch naming its company plus every filter-only watch, without looking at
// the others.
package matcher

import (
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// DocFor returns the searchable text of a notice for query.Match, split
// into the same four fields as the full-text index: company name, notice
// type, text, and the practitioners' names and firms joined by spaces.
func DocFor(n *notice.Notice) *query.Doc {
	return query.NewDoc(n.CompanyName, n.NoticeType, n.Text, notice.PractitionerText(n.Practitioners))
}

// FilterMatches reports whether n passes every part of f, as the SQL
// backend would:
//   - each non-empty enumerated list (appointment_type, notice_purpose,
//     notice_code, state, status) must hold the notice's value, compared
//     ignoring ASCII case (the columns are COLLATE NOCASE); a notice
//     without an appointment_type fails a non-empty appointment_type list;
//   - deregistration notices fail unless f.IncludeDeregistration;
//   - From and To bound published_date inclusively;
//   - Q must match the notice's text (query.Match over DocFor(n));
//   - Company, when set, must equal the notice's own acn or abn. Resolution
//     through the register is the caller's part (Index.Match does it with
//     its resolveABN).
//
// doc is the notice's searchable text when the caller already has it; nil
// builds it only if f has a q.
func FilterMatches(f notice.Filter, n *notice.Notice, doc *query.Doc) bool {
	ok, _ := filterMatches(&f, n, doc)
	return ok
}

// filterMatches is FilterMatches that also returns the doc it used, so a
// caller checking many filters against one notice builds the doc once.
func filterMatches(f *notice.Filter, n *notice.Notice, doc *query.Doc) (bool, *query.Doc) {
	if !f.IncludeDeregistration && n.IsDeregistration() {
		return false, doc
	}
	if !inList(f.AppointmentType, n.AppointmentType) ||
		!inList(f.NoticePurpose, &n.NoticePurpose) ||
		!inList(f.NoticeCode, &n.NoticeCode) ||
		!inList(f.State, &n.State) ||
		!inList(f.Status, &n.Status) {
		return false, doc
	}
	if f.From != "" && n.PublishedDate < f.From {
		return false, doc
	}
	if f.To != "" && n.PublishedDate > f.To {
		return false, doc
	}
	if f.Company != nil && !equalPtr(n.ACN, f.Company.Value) && !equalPtr(n.ABN, f.Company.Value) {
		return false, doc
	}
	if f.Q != nil {
		if doc == nil {
			doc = DocFor(n)
		}
		if !query.Match(f.Q, doc) {
			return false, doc
		}
	}
	return true, doc
}

// inList reports whether v is in values (ASCII case folded); an empty list
// accepts everything, a nil v nothing else.
func inList(values []string, v *string) bool {
	if len(values) == 0 {
		return true
	}
	if v == nil {
		return false
	}
	for _, x := range values {
		if notice.EqualFoldASCII(x, *v) {
			return true
		}
	}
	return false
}

func equalPtr(p *string, v string) bool { return p != nil && *p == v }
