package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// registerColumns are the register table's columns in RegisterRow order.
const registerColumns = `company_name, acn, type, class, sub_class, status, registered_on,
	deregistered_on, previous_state, state_registration_number, modified_since_last_report,
	current_name_indicator, abn, current_name, current_name_start`

const registerColumnCount = 15

// registerChunk is how many rows one INSERT statement carries.
const registerChunk = 200

// registerTableName finds the table name in the register's CREATE TABLE.
var registerTableName = regexp.MustCompile(`^CREATE TABLE\s+("?register"?)`)

// registerLoadPrefix names the tables of loads in progress.
const registerLoadPrefix = "register_load_"

// registerNamesPrefix names the name index a load's commit builds.
const registerNamesPrefix = "register_names_"

// RegisterLoad is a register replacement in progress: rows go into a fresh
// table, committed per Add so other writers are never held up; Commit builds
// the indexes and swaps the table in atomically. Readers see the old register
// until Commit. One register load at a time: beginning another abandons a
// load left unfinished (its Add and Commit then fail).
type RegisterLoad struct {
	s     *Store
	table string
	gen   int64
	mu    sync.Mutex
	done  bool
	rows  int64
}

var _ store.RegisterLoad = (*RegisterLoad)(nil)

// BeginRegister starts replacing the company register.
func (s *Store) BeginRegister(ctx context.Context) (store.RegisterLoad, error) {
	return s.beginRegister(ctx)
}

func (s *Store) beginRegister(ctx context.Context) (*RegisterLoad, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: begin register load: %w", err)
	}
	defer tx.Rollback()
	if err := dropLoadTables(ctx, tx); err != nil {
		return nil, err
	}
	var gen int64
	err = tx.QueryRowContext(ctx, `INSERT INTO meta (key, value) VALUES ('register_generation', '1')
		ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING CAST(value AS INTEGER)`).Scan(&gen)
	if err != nil {
		return nil, fmt.Errorf("sqlite: number register load: %w", err)
	}
	table := registerLoadPrefix + strconv.FormatInt(gen, 10)
	// The new table copies the current register's definition, so later
	// migrations that change the register carry over to every load.
	var ddl string
	if err := tx.QueryRowContext(ctx, "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'register'").Scan(&ddl); err != nil {
		return nil, fmt.Errorf("sqlite: read register definition: %w", err)
	}
	loc := registerTableName.FindStringSubmatchIndex(ddl)
	if loc == nil {
		return nil, fmt.Errorf("sqlite: unexpected register definition %.60q", ddl)
	}
	ddl = ddl[:loc[2]] + table + ddl[loc[3]:]
	if _, err := tx.ExecContext(ctx, ddl); err != nil {
		return nil, fmt.Errorf("sqlite: create %s: %w", table, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlite: begin register load: %w", err)
	}
	return &RegisterLoad{s: s, table: table, gen: gen}, nil
}

func dropLoadTables(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE ?", registerLoadPrefix+"%")
	if err != nil {
		return fmt.Errorf("sqlite: list abandoned register loads: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, n)
	}
	rows.Close()
	for _, n := range names {
		if _, err := tx.ExecContext(ctx, "DROP TABLE "+n); err != nil {
			return fmt.Errorf("sqlite: drop abandoned register load %s: %w", n, err)
		}
	}
	return nil
}

// Add appends rows to the new register, in one transaction.
func (l *RegisterLoad) Add(ctx context.Context, rows []notice.RegisterRow) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return fmt.Errorf("sqlite: register load %s is already committed or rolled back; begin a new one", l.table)
	}
	if len(rows) == 0 {
		return nil
	}
	tx, err := l.s.begin(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: register rows: %w", err)
	}
	defer tx.Rollback()
	insert := func(n int) string {
		row := "(" + placeholders(registerColumnCount) + ")"
		return "INSERT INTO " + l.table + " (" + registerColumns + ") VALUES " + strings.Repeat(row+", ", n-1) + row
	}
	full, err := tx.PrepareContext(ctx, insert(registerChunk))
	if err != nil {
		return l.missing(err)
	}
	defer full.Close()
	args := make([]any, 0, registerChunk*registerColumnCount)
	for start := 0; start < len(rows); start += registerChunk {
		chunk := rows[start:min(start+registerChunk, len(rows))]
		args = args[:0]
		for i := range chunk {
			r := &chunk[i]
			args = append(args, r.CompanyName, r.ACN, r.Type, r.Class, r.SubClass, r.Status,
				r.RegisteredOn, r.DeregisteredOn, r.PreviousState, r.StateRegistrationNumber,
				r.ModifiedSinceLastReport, r.CurrentNameIndicator, r.ABN, r.CurrentName, r.CurrentNameStart)
		}
		if len(chunk) == registerChunk {
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, insert(len(chunk)), args...)
		}
		if err != nil {
			return l.missing(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit register rows: %w", err)
	}
	l.rows += int64(len(rows))
	return nil
}

func (l *RegisterLoad) missing(err error) error {
	if strings.Contains(err.Error(), "no such table") {
		return fmt.Errorf("sqlite: register load %s was abandoned because another register load began; run one register load at a time", l.table)
	}
	return fmt.Errorf("sqlite: register rows into %s: %w", l.table, err)
}

// Rows returns how many rows Add has stored so far.
func (l *RegisterLoad) Rows() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rows
}

// Commit builds the new register's indexes and swaps it in atomically.
func (l *RegisterLoad) Commit(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return fmt.Errorf("sqlite: register load %s is already committed or rolled back; begin a new one", l.table)
	}
	g := strconv.FormatInt(l.gen, 10)
	// Index building is the slow part and happens in its own transaction,
	// invisible to readers (they read the register table).
	tx, err := l.s.begin(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: index new register: %w", err)
	}
	defer tx.Rollback()
	names := registerNamesPrefix + g
	for _, stmt := range []string{
		"CREATE INDEX register_acn_" + g + " ON " + l.table + " (acn)",
		"CREATE INDEX register_abn_" + g + " ON " + l.table + " (abn) WHERE abn <> ''",
		// The name index of the new table (0011_register_names.sql).
		"DROP TABLE IF EXISTS " + names,
		"CREATE VIRTUAL TABLE " + names + " USING fts5 (company_name, content = '', tokenize = 'unicode61 remove_diacritics 2')",
		"INSERT INTO " + names + " (rowid, company_name) SELECT rowid, company_name FROM " + l.table,
		"DROP TABLE register",
		"ALTER TABLE " + l.table + " RENAME TO register",
		"DROP TABLE register_fts",
		"ALTER TABLE " + names + " RENAME TO register_fts",
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return l.missing(err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('register_rows', ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, strconv.FormatInt(l.rows, 10)); err != nil {
		return fmt.Errorf("sqlite: record register size: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: swap in new register: %w", err)
	}
	l.done = true
	// Planner statistics for the new indexes; failure only costs speed.
	_, _ = l.s.write.ExecContext(ctx, "ANALYZE register")
	return nil
}

// Rollback abandons the load; the old register stays.
func (l *RegisterLoad) Rollback() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil
	}
	l.done = true
	if _, err := l.s.write.Exec("DROP TABLE IF EXISTS " + l.table); err != nil {
		return fmt.Errorf("sqlite: drop abandoned register load %s: %w", l.table, err)
	}
	return nil
}
