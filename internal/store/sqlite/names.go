package sqlite

import (
	"context"
	"fmt"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// CompaniesByName finds register companies by the words of one of their
// names: the register_fts index gives the rows holding every word (the
// last as a prefix), at most notice.MaxNameRows of them, and
// notice.RankNames ranks them, as on every backend.
func (s *Store) CompaniesByName(ctx context.Context, q notice.NameQuery) (notice.NamePage, error) {
	match, ok := nameMatch(q.Words)
	if !ok {
		return notice.NamePage{Companies: []notice.NameMatch{}}, nil
	}
	rows, err := s.read.QueryContext(ctx, `SELECT rowid, `+registerColumns+` FROM register
		WHERE rowid IN (SELECT rowid FROM register_fts WHERE register_fts MATCH ? LIMIT ?)`, match, notice.MaxNameRows+1)
	if err != nil {
		return notice.NamePage{}, fmt.Errorf("sqlite: company name search: %w", err)
	}
	defer rows.Close()
	var found []notice.RankRow
	for rows.Next() {
		var r notice.RankRow
		if err := rows.Scan(&r.Row, &r.CompanyName, &r.ACN, &r.Type, &r.Class, &r.SubClass, &r.Status,
			&r.RegisteredOn, &r.DeregisteredOn, &r.PreviousState, &r.StateRegistrationNumber,
			&r.ModifiedSinceLastReport, &r.CurrentNameIndicator, &r.ABN, &r.CurrentName, &r.CurrentNameStart); err != nil {
			return notice.NamePage{}, fmt.Errorf("sqlite: company name search: %w", err)
		}
		r.Row-- // rowid counts from 1, the file's rows from 0
		found = append(found, r)
	}
	if err := rows.Err(); err != nil {
		return notice.NamePage{}, fmt.Errorf("sqlite: company name search: %w", err)
	}
	return notice.AnswerNames(ctx, q, found, s.RegisterNames)
}

// nameMatch renders the words as an FTS5 query: every word, the last as a
// prefix.
func nameMatch(words []string) (string, bool) {
	terms := make([]query.Node, len(words))
	for i, w := range words {
		terms[i] = query.Term{Text: w, Prefix: i == len(words)-1}
	}
	return query.FTS5(query.And{Children: terms})
}
