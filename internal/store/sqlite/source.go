package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/noticesd/noticesd/internal/notice"
)

// The methods here let the SQLite store serve as the notice side of the
// Redis backend (redisstore.NoticeSource): notices by seq, and the seqs of
// the notices carrying some identifiers and passing a filter.

// NoticesBySeq returns the notices with the given seqs, in the given order;
// a seq no notice has is left out.
func (s *Store) NoticesBySeq(ctx context.Context, seqs []int64) ([]notice.Notice, error) {
	out := make([]notice.Notice, 0, len(seqs))
	for len(seqs) > 0 {
		chunk := seqs[:min(len(seqs), 500)]
		seqs = seqs[len(chunk):]
		tx, err := s.read.BeginTx(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("sqlite: read notices: %w", err)
		}
		ns, err := noticesBySeq(ctx, tx, chunk)
		tx.Rollback()
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			if n.ID != "" {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

// MatchingSeqs returns up to limit seqs in (after, through], ascending, of
// the notices passing f whose acn or abn is one of keys; with keys nil,
// of every notice passing f (a filter-only watch).
func (s *Store) MatchingSeqs(ctx context.Context, keys []string, f notice.Filter, after, through int64, limit int) ([]int64, error) {
	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: matching notices: %w", err)
	}
	defer tx.Rollback()
	c := filterCond(f)
	c.add("n.seq > ?", after)
	c.add("n.seq <= ?", through)
	with := ""
	var args []any
	if keys != nil {
		kj, err := json.Marshal(keys)
		if err != nil {
			return nil, err
		}
		with = `WITH keys(v) AS MATERIALIZED (SELECT value FROM json_each(?)),
		hits(seq) AS (
		SELECT h.seq FROM keys CROSS JOIN notices h WHERE h.acn = keys.v AND h.seq > ? AND h.seq <= ?
		UNION SELECT h.seq FROM keys CROSS JOIN notices h WHERE h.abn = keys.v AND h.seq > ? AND h.seq <= ?) `
		args = []any{string(kj), after, through, after, through}
		c.add("n.seq IN (SELECT seq FROM hits)")
	}
	where, wargs := c.where()
	return querySeqs(ctx, tx, "matching notices",
		with+"SELECT n.seq FROM "+c.from()+where+" ORDER BY n.seq LIMIT ?", append(append(args, wargs...), limit))
}
