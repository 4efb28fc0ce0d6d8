package sqlite

import (
	"context"
	"fmt"
)

// Ready reports whether the store can serve: the file answers and every
// embedded migration is applied (GET /ready). A file migrated by a newer
// binary is ready too: migrations only ever add.
func (s *Store) Ready(ctx context.Context) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: read the schema version of %s: %w", s.path, err)
	}
	if want := ms[len(ms)-1].Version; v < want {
		return fmt.Errorf("sqlite: %s is at schema version %d, this binary needs %d; restart to migrate", s.path, v, want)
	}
	return nil
}
