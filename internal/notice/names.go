package notice

import (
	"context"
	"sort"
	"strings"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/query"
)

// MaxNameRows is the most register names (rows) a company name search
// ranks: a name whose words match more is refused (errs.InvalidParameter,
// asking for more of the name) by every backend alike, rather than ranked
// from a part of its matches.
const MaxNameRows = 1000

// NameQuery is one page of GET /v1/companies?name=: Words are the folded
// words of name (at least one).
type NameQuery struct {
	Words []string
	Limit int // 1..100
	Page  int // from 1
}

// NamePage is one page of a company name search with the exact total of
// companies found.
type NamePage struct {
	Companies []NameMatch
	Total     int64
}

// NameMatch is one company a name search found, by its best-ranked name.
type NameMatch struct {
	ACN string  `json:"acn"`
	ABN *string `json:"abn"`
	// Name is the company's name (its current register name).
	Name string `json:"name"`
	// MatchedName is the register name that matched: Name, or a former
	// name.
	MatchedName string `json:"matched_name"`
	// Status is the register status code of the matched row (REGD, DRGD...).
	Status string `json:"status"`
}

// Name match tiers, best first.
const (
	tierExact  = iota // the name's words are the query's words
	tierPrefix        // the name's words begin with the query's
	tierWords         // the name holds every word, the last as a prefix
)

// nameTier ranks a register name against the query's words: whether it
// matches, and how well. The candidates every backend's index returns
// (each word a word of the name, the last a prefix of one) are checked
// again here, so the answer depends on this rule alone.
func nameTier(words []string, name string) (int, bool) {
	ts := query.Words(name)
	key, qkey := strings.Join(ts, " "), strings.Join(words, " ")
	switch {
	case len(words) == 0:
		return 0, false
	case key == qkey:
		return tierExact, true
	case strings.HasPrefix(key, qkey):
		return tierPrefix, true
	}
	last := len(words) - 1
	for i, w := range words {
		found := false
		for _, t := range ts {
			if t == w || (i == last && strings.HasPrefix(t, w)) {
				found = true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
	return tierWords, true
}

// NameMatchesWords reports whether a register name matches the words of
// a name search: each a word of the name, the last a prefix of one.
func NameMatchesWords(words []string, name string) bool {
	_, ok := nameTier(words, name)
	return ok
}

// RankNames answers a name search from rows, the register rows its
// backend's index found (a superset of the matching ones, in any order;
// Row is each one's position in the register file): it keeps the rows
// nameTier matches and ranks the companies by their best row, by
//
//  1. tier: exact name, then a name beginning with the words, then a name
//     holding them;
//  2. a row marked current before the others;
//  3. the name's folded words, in byte order;
//  4. ACN, then the row's position in the file;
//
// and returns the best row of each company on the page q asks for, with
// the number of companies.
func RankNames(q NameQuery, rows []RankRow) ([]RankRow, int64) {
	type ranked struct {
		RankRow
		tier int
		key  string
	}
	var rs []ranked
	for _, r := range rows {
		tier, ok := nameTier(q.Words, r.CompanyName)
		if !ok {
			continue
		}
		rs = append(rs, ranked{RankRow: r, tier: tier, key: strings.Join(query.Words(r.CompanyName), " ")})
	}
	sort.Slice(rs, func(i, j int) bool {
		a, b := &rs[i], &rs[j]
		if a.tier != b.tier {
			return a.tier < b.tier
		}
		if a.IsCurrent() != b.IsCurrent() {
			return a.IsCurrent()
		}
		if a.key != b.key {
			return a.key < b.key
		}
		if a.ACN != b.ACN {
			return a.ACN < b.ACN
		}
		return a.Row < b.Row
	})
	seen := make(map[string]bool, len(rs))
	var best []RankRow
	for _, r := range rs {
		if !seen[r.ACN] {
			seen[r.ACN] = true
			best = append(best, r.RankRow)
		}
	}
	from := min((q.Page-1)*q.Limit, len(best))
	to := min(from+q.Limit, len(best))
	return best[from:to], int64(len(best))
}

// RankRow is a register row a name search found, with its position in
// the register file.
type RankRow struct {
	RegisterRow
	Row int64
}

// NameMatches builds the answer's companies from ranked rows and the
// current name of each (names[i] for rows[i]; "" keeps the row's own).
func NameMatches(rows []RankRow, names []string) []NameMatch {
	out := make([]NameMatch, len(rows))
	for i, r := range rows {
		m := NameMatch{ACN: r.ACN, Name: names[i], MatchedName: r.CompanyName, Status: r.Status}
		if m.Name == "" {
			m.Name = r.CompanyName
		}
		if r.ABN != "" {
			abn := r.ABN
			m.ABN = &abn
		}
		out[i] = m
	}
	return out
}

// TooManyNames is the error of a name search whose words match more than
// MaxNameRows register names.
func TooManyNames(words []string) error {
	return errs.New(errs.InvalidParameter, "name %s matches more than %d register names; give more of the name",
		errs.Quote(strings.Join(words, " ")), MaxNameRows)
}

// AnswerNames is the end of every backend's name search: found, the rows
// its index gave (at most MaxNameRows+1 of them: more is TooManyNames),
// ranked by RankNames, the page's companies named by registerNames (the
// store's RegisterNames: each ACN's current name).
func AnswerNames(ctx context.Context, q NameQuery, found []RankRow, registerNames func(context.Context, []string) ([]string, error)) (NamePage, error) {
	if len(found) > MaxNameRows {
		return NamePage{}, TooManyNames(q.Words)
	}
	page, total := RankNames(q, found)
	acns := make([]string, len(page))
	for i, r := range page {
		acns[i] = r.ACN
	}
	names, err := registerNames(ctx, acns)
	if err != nil {
		return NamePage{}, err
	}
	return NamePage{Companies: NameMatches(page, names), Total: total}, nil
}
