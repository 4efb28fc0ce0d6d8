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

// NoticeSummaries calls fn with every notice whose seq is at most
// through, ascending by seq, read in pages of 1,000 (each in its own read
// transaction). The notice fn is given is reused: fn must copy what it
// keeps.
func (s *Store) NoticeSummaries(ctx context.Context, through int64, fn func(*notice.Notice) error) error {
	const page = 1000
	for after := int64(0); ; {
		tx, err := s.read.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("sqlite: read notices: %w", err)
		}
		rows, err := tx.QueryContext(ctx, "SELECT "+noticeColumns+" FROM notices n WHERE n.seq > ? AND n.seq <= ? ORDER BY n.seq LIMIT ?", after, through, page)
		if err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlite: read notices: %w", err)
		}
		ns, err := scanNotices(rows)
		tx.Rollback()
		if err != nil {
			return fmt.Errorf("sqlite: read notices: %w", err)
		}
		for i := range ns {
			if err := fn(&ns[i]); err != nil {
				return err
			}
		}
		if len(ns) < page {
			return nil
		}
		after = ns[len(ns)-1].Seq
	}
}

// CarriedIdentifiers returns which of ids (ACN or ABN values) some stored
// notice carries as its acn or abn.
func (s *Store) CarriedIdentifiers(ctx context.Context, ids []string) (map[string]bool, error) {
	kj, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx, `WITH keys(v) AS MATERIALIZED (SELECT value FROM json_each(?))
		SELECT v FROM keys WHERE EXISTS (SELECT 1 FROM notices WHERE acn = keys.v) OR EXISTS (SELECT 1 FROM notices WHERE abn = keys.v)`, string(kj))
	if err != nil {
		return nil, fmt.Errorf("sqlite: carried identifiers: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("sqlite: carried identifiers: %w", err)
		}
		out[v] = true
	}
	return out, rows.Err()
}
