package sqlite

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/noticesd/noticesd/internal/notice"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one schema step: migrations/NNNN_name.sql, applied once, in
// version order, inside one transaction.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the embedded migrations in version order. Files are
// append-only: a released migration is never edited, only followed.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("sqlite: migration file %s must be named NNNN_description.sql", name)
		}
		body, err := migrationFiles.ReadFile("migrations/" + name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("sqlite: migrations %s and %s share version %d: renumber the newer one", out[i-1].Name, out[i].Name, out[i].Version)
		}
	}
	return out, nil
}

// migrateThrough, when a test sets it above 0, stops migrate after that
// version, to build a file as an older release left it.
var migrateThrough int

// migrate applies pending migrations, each in its own immediate transaction
// so two processes opening the same new file do not both apply one.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	if _, err := s.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: create schema_migrations in %s: %w", s.path, err)
	}
	for _, m := range ms {
		if migrateThrough > 0 && m.Version > migrateThrough {
			break
		}
		if err := s.apply(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) apply(ctx context.Context, m Migration) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: migrate %s: %w", s.path, err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations WHERE version = ?", m.Version).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: migrate %s: %w", s.path, err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("sqlite: migration %s failed on %s: %w", m.Name, s.path, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.Version, m.Name, notice.Timestamp(s.now())); err != nil {
		return fmt.Errorf("sqlite: record migration %s on %s: %w", m.Name, s.path, err)
	}
	return tx.Commit()
}

// SchemaVersion returns the highest applied migration version.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.read.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&v)
	return v, err
}
