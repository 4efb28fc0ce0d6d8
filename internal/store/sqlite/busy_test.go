//go:build sqlite_fts5

package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/errs"
)

// TestWriteWhileAnotherProcessHoldsTheLock: a write that waits past the
// busy timeout for another connection's transaction (as for a
// `noticesd ingest` batch) fails with backend_unavailable, naming the
// cause, and succeeds once the lock is free.
func TestWriteWhileAnotherProcessHoldsTheLock(t *testing.T) {
	s := openTest(t, WithBusyTimeout(100*time.Millisecond))
	ctx := context.Background()
	acc, err := s.CreateAccount(ctx, "Busy", "free")
	if err != nil {
		t.Fatal(err)
	}
	// Another process: its own connection to the file, holding the write lock.
	other, err := sql.Open("sqlite3", "file:"+s.path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	writes := []struct {
		name  string
		write func() error
	}{
		{"a transaction", func() error { _, err := s.CreateAccount(ctx, "Second", "free"); return err }},
		{"a single statement", func() error { return s.SetSubscription(ctx, acc.AccountID, false) }},
	}
	for _, w := range writes {
		t.Run(w.name+" while locked", func(t *testing.T) {
			err := w.write()
			if !errs.Is(err, errs.BackendUnavailable) {
				t.Fatalf("got %v, want backend_unavailable", err)
			}
			if e, _ := errs.As(err); !strings.Contains(e.Message, "busy") || !strings.Contains(e.Message, "retry") {
				t.Errorf("message %q does not say the database is busy and to retry", e.Message)
			}
		})
	}
	if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		t.Run(w.name+" once free", func(t *testing.T) {
			if err := w.write(); err != nil {
				t.Fatalf("after the lock was released: %v", err)
			}
		})
	}
}
