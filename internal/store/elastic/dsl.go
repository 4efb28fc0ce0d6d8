package elastic

import (
	"context"
	"strings"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// ftsField is the folded full-text field (see esdoc.AppendNotice).
const ftsField = "fts"

// maxPhraseExpansions bounds the words a phrase's trailing prefix expands
// to; FTS5 has no bound, so past it a phrase may find fewer notices here
// (docs/elasticsearch.md).
const maxPhraseExpansions = 10000

type obj = map[string]any

var (
	matchAll  = obj{"match_all": obj{}}
	matchNone = obj{"match_none": obj{}}
)

// compileQ translates a parsed q into query DSL over the folded text, as
// query.Match: a word is a token of any field, a phrase consecutive tokens
// of one field, a prefix any token starting with it; And/Or/Not as bool
// must/should/must_not.
func compileQ(n query.Node) obj {
	switch n := query.Deref(n).(type) {
	case nil:
		return matchAll
	case query.Term:
		return textQuery(n.Text, n.Prefix)
	case query.Phrase:
		return textQuery(strings.Join(n.Words, " "), n.Prefix)
	case query.And:
		if len(n.Children) == 0 {
			return matchAll
		}
		var must, mustNot []obj
		for _, c := range n.Children {
			if not, ok := query.Deref(c).(query.Not); ok {
				mustNot = append(mustNot, compileQ(not.Child))
			} else {
				must = append(must, compileQ(c))
			}
		}
		return boolOf("must", must, "must_not", mustNot)
	case query.Or:
		if len(n.Children) == 0 {
			return matchNone
		}
		should := make([]obj, len(n.Children))
		for i, c := range n.Children {
			should[i] = compileQ(c)
		}
		return obj{"bool": obj{"should": should, "minimum_should_match": 1}}
	case query.Not:
		return obj{"bool": obj{"must_not": []obj{compileQ(n.Child)}}}
	default:
		return matchNone
	}
}

// textQuery matches the tokens of text, folded here too (as FTS5 folds a
// query's), consecutively in one field, the last as a prefix when prefix
// is set. Phrases go through the field's analyzer (whitespace since
// mapping version 3: query.Fold's tokens; docs/elasticsearch.md); a
// prefix query is one folded word, not analysed.
func textQuery(text string, prefix bool) obj {
	folded := query.Fold(text)
	if folded == "" {
		return matchNone
	}
	if !prefix {
		return obj{"match_phrase": obj{ftsField: obj{"query": folded}}}
	}
	if !strings.Contains(folded, " ") {
		return obj{"prefix": obj{ftsField: obj{"value": folded}}}
	}
	return obj{"match_phrase_prefix": obj{ftsField: obj{"query": folded, "max_expansions": maxPhraseExpansions}}}
}

// ranked reports whether relevance ranks q (a q FTS5 can express, as embedded).
func ranked(q query.Node) bool {
	if q == nil {
		return false
	}
	_, ok := query.FTS5(q)
	return ok
}

// anyOf matches a keyword field equal to one of values, ignoring case (the
// embedded store's columns are COLLATE NOCASE).
func anyOf(field string, values []string) obj {
	should := make([]obj, len(values))
	for i, v := range values {
		should[i] = obj{"term": obj{field: obj{"value": v, "case_insensitive": true}}}
	}
	return obj{"bool": obj{"should": should, "minimum_should_match": 1}}
}

// filterQuery translates a filter into one bool query; q scores (must).
func (s *Store) filterQuery(ctx context.Context, f notice.Filter) (obj, error) {
	var must, filter []obj
	if f.Q != nil {
		must = append(must, compileQ(f.Q))
	}
	if !f.IncludeDeregistration {
		filter = append(filter, obj{"term": obj{"dereg": false}})
	}
	for i, values := range [][]string{f.AppointmentType, f.NoticePurpose, f.NoticeCode, f.State, f.Status} {
		if len(values) > 0 {
			filter = append(filter, anyOf(facetFields[i], values))
		}
	}
	if f.From != "" || f.To != "" {
		r := obj{}
		if f.From != "" {
			r["gte"] = f.From
		}
		if f.To != "" {
			r["lte"] = f.To
		}
		filter = append(filter, obj{"range": obj{"published_date": r}})
	}
	if f.Company != nil {
		c, err := s.companyQuery(ctx, *f.Company)
		if err != nil {
			return nil, err
		}
		filter = append(filter, c)
	}
	if len(must) == 0 && len(filter) == 0 {
		return matchAll, nil
	}
	return boolOf("must", must, "filter", filter), nil
}

// boolOf is the bool query of two clause lists, each left out when empty.
func boolOf(k1 string, l1 []obj, k2 string, l2 []obj) obj {
	b := obj{}
	if len(l1) > 0 {
		b[k1] = l1
	}
	if len(l2) > 0 {
		b[k2] = l2
	}
	return obj{"bool": b}
}

// companyQuery selects the notices of id's company (id or othersOf its rows).
func (s *Store) companyQuery(ctx context.Context, id ident.ID) (obj, error) {
	rows, err := s.registerRows(ctx, idField(id), id.Value, nil)
	if err != nil {
		return nil, err
	}
	return companyQueryWith(id, othersOf(id, rows)), nil
}

// idField is the field of id's kind in both indices: acn or abn.
func idField(id ident.ID) string { return strings.ToLower(id.Kind.String()) }

// othersOf is the other kind's identifiers the rows carrying id give, each once.
func othersOf(id ident.ID, rows []notice.RegisterRow) []string {
	var others []string
	seen := map[string]bool{}
	for _, r := range rows {
		v := r.ABN
		if id.Kind == ident.ABN {
			v = r.ACN
		}
		if v != "" && r.ABN != "" && !seen[v] {
			seen[v] = true
			others = append(others, v)
		}
	}
	return others
}

// companyQueryWith selects the notices carrying id or one of others.
func companyQueryWith(id ident.ID, others []string) obj {
	field, other := "acn", "abn"
	if id.Kind == ident.ABN {
		field, other = "abn", "acn"
	}
	should := []obj{{"term": obj{field: id.Value}}}
	if len(others) > 0 {
		should = append(should, obj{"terms": obj{other: others}})
	}
	return obj{"bool": obj{"should": should, "minimum_should_match": 1}}
}
