// Package sqlite is the embedded backend: notices, their full-text index,
// the company register and accounts in one SQLite file (WAL mode).
//
// It implements store.Notices, store.NoticeWriter, store.RegisterWriter and
// store.Accounts. Writes go through a pool of one connection (so writers of
// this process never contend among themselves) and commit per batch; reads
// use a separate pool, so a long ingest never blocks readers. Other processes
// (`noticesd ingest`) may write the same file concurrently; busy_timeout and
// short write transactions keep that safe.
//
// The package needs SQLite's FTS5: build with `-tags sqlite_fts5` (the
// Makefile always does). Open fails with an explanation otherwise.
package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/secretbox"
	"github.com/noticesd/noticesd/internal/store"
)

// Interface checks: the seams this backend implements.
var (
	_ store.Notices        = (*Store)(nil)
	_ store.NoticeWriter   = (*Store)(nil)
	_ store.RegisterWriter = (*Store)(nil)
	_ store.Accounts       = (*Store)(nil)
)

// Driver names: go-sqlite3 registered with connect hooks that apply the
// per-connection settings of readers and of the writer.
const (
	readDriver  = "noticesd_sqlite3_read"
	writeDriver = "noticesd_sqlite3_write"
)

// BusyTimeout is how long a statement waits for another writer's lock
// (WithBusyTimeout changes it). A write that waits longer fails with
// errs.BackendUnavailable (busy.go).
const BusyTimeout = 10 * time.Second

var commonPragmas = []string{
	"PRAGMA foreign_keys = ON",
	"PRAGMA synchronous = NORMAL",
	"PRAGMA temp_store = MEMORY",
	"PRAGMA mmap_size = 1073741824", // map up to 1 GiB of the file
}

func init() {
	hook := func(extra ...string) func(*sqlite3.SQLiteConn) error {
		return func(c *sqlite3.SQLiteConn) error {
			for _, p := range append(append([]string(nil), commonPragmas...), extra...) {
				if _, err := c.Exec(p, nil); err != nil {
					return fmt.Errorf("sqlite: %s: %w", p, err)
				}
			}
			return nil
		}
	}
	sql.Register(readDriver, &sqlite3.SQLiteDriver{ConnectHook: hook("PRAGMA cache_size = -32768")}) // 32 MiB each
	// The one writer gets a large cache (index pages of random keys such as
	// id and source_id stay in memory during an ingest) and checkpoints
	// less often (a page changed by many batches is copied back once).
	sql.Register(writeDriver, &sqlite3.SQLiteDriver{ConnectHook: hook(writerPragmas...)})
}

var writerPragmas = []string{
	"PRAGMA cache_size = -131072", // 128 MiB
	// A checkpoint once the WAL holds 100,000 pages (about 400 MB), not
	// 10,000: each batch of a load rewrites thousands of random index
	// pages (id, acn, abn), and every checkpoint copies those pages into
	// the database again. 1,000,000 notices into a fresh file: 13,325 ->
	// 16,130 rows/s in batches of 5,000, 18,215 -> 19,734 and 20,018 in
	// batches of 20,000 (docs/benchmarks.md, 2026-11-25).
	"PRAGMA wal_autocheckpoint = 100000",
	// After a checkpoint has emptied it, the WAL file is cut back to 64 MiB
	// instead of keeping the size a load gave it.
	"PRAGMA journal_size_limit = 67108864",
	"PRAGMA analysis_limit = 2000", // ANALYZE samples, so it stays quick on 4M register rows
}

// Store is the embedded backend over one SQLite file. It is safe for
// concurrent use.
type Store struct {
	path  string
	write *sql.DB // one connection: every write of this process
	read  *sql.DB // several connections, query-only
	clock func() time.Time
	plans map[string]account.Plan
	// companies is the in-memory company index of the bulk screen and
	// watch creation (companyindex.go).
	companies companyIndex
	// secrets seals webhook secrets at rest (secrets.go); nil refuses to
	// store one.
	secrets *secretbox.Box
	// busyTimeout is how long a statement waits for another connection's
	// lock (SQLite's busy timeout, set through the DSN).
	busyTimeout time.Duration
	// auth caches principals by key hash (authcache.go).
	auth authCache
}

// Option configures Open.
type Option func(*Store)

// WithClock sets the clock used for collected_at and account timestamps.
// Tests inject a fixed clock; the default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.clock = now }
}

// WithBusyTimeout sets how long a statement waits for another process's
// write lock before it fails with errs.BackendUnavailable; the default is
// BusyTimeout. Tests use a short one.
func WithBusyTimeout(d time.Duration) Option {
	return func(s *Store) { s.busyTimeout = d }
}

// WithPlans sets the plans accounts may be created on; the default is
// account.DefaultPlans().
func WithPlans(plans map[string]account.Plan) Option {
	return func(s *Store) { s.plans = plans }
}

// Open opens (creating if missing, with its parent directory) the database
// at path, checks that FTS5 is available and applies pending migrations.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	if !FTS5 {
		return nil, ErrNoFTS5
	}
	s := &Store{path: path, clock: time.Now, plans: account.DefaultPlans(), busyTimeout: BusyTimeout}
	for _, o := range opts {
		o(s)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("sqlite: create data directory %s: %w (set NOTICES_DATA_DIR to a writable directory)", dir, err)
		}
	}
	var err error
	busy := fmt.Sprintf("&_busy_timeout=%d", s.busyTimeout.Milliseconds())
	s.write, err = sql.Open(writeDriver, dsn(path, "_txlock=immediate&_mutex=no"+busy))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s.write.SetMaxOpenConns(1)
	s.write.SetMaxIdleConns(1)
	s.write.SetConnMaxLifetime(0)
	s.write.SetConnMaxIdleTime(0)
	if err := s.init(ctx); err != nil {
		s.write.Close()
		return nil, err
	}
	s.read, err = sql.Open(readDriver, dsn(path, "_query_only=true&_mutex=no&_stmt_cache_size=64"+busy))
	if err != nil {
		s.write.Close()
		return nil, fmt.Errorf("sqlite: open %s for reading: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	s.read.SetMaxOpenConns(n)
	s.read.SetMaxIdleConns(n)
	s.read.SetConnMaxIdleTime(0)
	s.read.SetConnMaxLifetime(0)
	if err := s.read.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %s for reading: %w", path, err)
	}
	return s, nil
}

func dsn(path, params string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + params
}

// init checks FTS5, switches to WAL and migrates.
func (s *Store) init(ctx context.Context) error {
	var fts5 bool
	if err := s.write.QueryRowContext(ctx, "SELECT sqlite_compileoption_used('ENABLE_FTS5')").Scan(&fts5); err != nil {
		return fmt.Errorf("sqlite: open %s: %w (is it a SQLite database and is its directory writable?)", s.path, err)
	}
	if !fts5 {
		return fmt.Errorf("sqlite: this binary's SQLite lacks FTS5, which full-text search needs: build with `go build -tags sqlite_fts5` (the Makefile does)")
	}
	var mode string
	if err := s.write.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return fmt.Errorf("sqlite: enable WAL on %s: %w", s.path, err)
	}
	if mode != "wal" {
		return fmt.Errorf("sqlite: %s stays in journal mode %q, not WAL: put the data directory on a local file system", s.path, mode)
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	return s.sealStoredSecrets(ctx)
}

// Close closes both connection pools.
func (s *Store) Close() error {
	var err error
	if s.read != nil {
		// Let SQLite refresh planner statistics it finds stale; cheap.
		_, _ = s.write.Exec("PRAGMA optimize")
		err = s.read.Close()
	}
	if e := s.write.Close(); e != nil && err == nil {
		err = e
	}
	return err
}

// Ping checks that the database answers a read, for health checks.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.read.QueryRowContext(ctx, "SELECT 1 FROM notices LIMIT 1").Scan(&one); err != nil && err != sql.ErrNoRows {
		return fmt.Errorf("sqlite: %s does not answer: %w", s.path, err)
	}
	return nil
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Analyze refreshes the query planner's statistics. Run it after a bulk
// load; `PRAGMA optimize` at Close covers ordinary use.
func (s *Store) Analyze(ctx context.Context) error {
	if _, err := s.write.ExecContext(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("sqlite: analyze %s: %w", s.path, err)
	}
	return nil
}

func (s *Store) now() time.Time { return s.clock() }
