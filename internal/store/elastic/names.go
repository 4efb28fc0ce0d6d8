package elastic

import (
	"context"
	"errors"
	"fmt"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/mappings"
)

// errTooManyNames stops a name search past notice.MaxNameRows rows.
var errTooManyNames = errors.New("too many names")

// CompaniesByName finds register companies by the words of one of their
// names: the blocks whose names hold every word (the last as a prefix),
// in row order, their rows checked one by one and ranked as on every
// backend (notice.AnswerNames); past notice.MaxNameRows rows, refused.
func (s *Store) CompaniesByName(ctx context.Context, q notice.NameQuery) (notice.NamePage, error) {
	if len(q.Words) == 0 {
		return notice.NamePage{Companies: []notice.NameMatch{}}, nil
	}
	var must []obj
	last := len(q.Words) - 1
	for _, w := range q.Words[:last] {
		must = append(must, obj{"term": obj{"names": w}})
	}
	must = append(must, obj{"prefix": obj{"names": q.Words[last]}})
	body := obj{"query": obj{"bool": obj{"filter": must}}, "sort": []obj{{"row": "asc"}}, "_source": []string{"row", "data"}}
	var found []notice.RankRow
	err := pages(ctx, s, s.Alias(mappings.Register), body, 1<<30, nil, func(hs []hit) error {
		for _, h := range hs {
			first, rows, err := registerRowsOf(h.Source, "", "")
			if err != nil {
				return fmt.Errorf("elastic: decode register document %s: %w", h.ID, err)
			}
			for i, r := range rows {
				if !notice.NameMatchesWords(q.Words, r.CompanyName) {
					continue
				}
				found = append(found, notice.RankRow{RegisterRow: r, Row: first + int64(i)})
				if len(found) > notice.MaxNameRows {
					return errTooManyNames
				}
			}
		}
		return nil
	})
	if errors.Is(err, errTooManyNames) {
		return notice.NamePage{}, notice.TooManyNames(q.Words)
	}
	if err != nil {
		return notice.NamePage{}, err
	}
	return notice.AnswerNames(ctx, q, found, s.RegisterNames)
}
