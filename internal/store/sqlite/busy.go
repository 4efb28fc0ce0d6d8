package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mattn/go-sqlite3"

	"github.com/noticesd/noticesd/internal/errs"
)

// begin starts a write transaction. The writer's transactions are BEGIN
// IMMEDIATE: they take SQLite's write lock at once, waiting up to the busy
// timeout for another process's transaction (a `noticesd ingest` batch
// holds it for seconds); when the wait runs out the error is
// errs.BackendUnavailable (busy), which the API answers with 503 and
// Retry-After instead of a bare SQLite error.
func (s *Store) begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.busy(err)
	}
	return tx, nil
}

// busy turns SQLite's "database is locked" (SQLITE_BUSY: another
// connection held the lock past the busy timeout) into
// errs.BackendUnavailable, keeping the SQLite error in the chain; any
// other error is returned as it is.
func (s *Store) busy(err error) error {
	var se sqlite3.Error
	if !errors.As(err, &se) || (se.Code != sqlite3.ErrBusy && se.Code != sqlite3.ErrLocked) {
		return err
	}
	return fmt.Errorf("%w (%w)", errs.New(errs.BackendUnavailable,
		"the database is busy: another writer (such as a `noticesd ingest` load) held it for more than %s; retry the request",
		s.busyTimeout), err)
}
