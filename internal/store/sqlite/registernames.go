package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
)

// RegisterNames returns the current name of each of acns: that of its
// first register row marked current, else of its first row ("" for an ACN
// the register lacks), as the bulk screen names a company. The Redis store
// reads a matched company's name here when this store is its notice
// source (redisstore.RegisterNamer).
func (s *Store) RegisterNames(ctx context.Context, acns []string) ([]string, error) {
	out := make([]string, len(acns))
	if len(acns) == 0 {
		return out, nil
	}
	b, err := json.Marshal(acns)
	if err != nil {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx, `SELECT m.key, coalesce(
			(SELECT r.company_name FROM register r WHERE r.acn = m.value AND r.current_name_indicator IN ('Y', 'y') ORDER BY r.rowid LIMIT 1),
			(SELECT r.company_name FROM register r WHERE r.acn = m.value ORDER BY r.rowid LIMIT 1), '')
		FROM json_each(?) m`, string(b))
	if err != nil {
		return nil, fmt.Errorf("sqlite: register names: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		var name string
		if err := rows.Scan(&i, &name); err != nil {
			return nil, fmt.Errorf("sqlite: register names: %w", err)
		}
		out[i] = name
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: register names: %w", err)
	}
	return out, nil
}
