package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// writeProbeBytes is how much CheckWrite writes: more than a page batch of
// SQLite needs, so a disk too full for the next commit shows.
const writeProbeBytes = 64 << 10

// CheckWrite reports whether the store can write now: the database file
// may be written (access(2), which also sees a read-only file system and an
// immutable file) and its directory takes a new file of writeProbeBytes,
// written and synced. It catches a full disk, a file system remounted
// read-only, a file made read-only and I/O errors, which a read (Ping)
// never shows. The error says which and how much space is free. It never
// opens the database file: closing any descriptor of it would drop every
// POSIX lock this process holds on it, SQLite's included, and another
// process (an ingest, sqlite3's .backup) could then delete the WAL from
// under the server.
func (s *Store) CheckWrite(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := unix.Access(s.path, unix.W_OK); err != nil {
		return fmt.Errorf("the database file %s cannot be written: %w", s.path, &os.PathError{Op: "access", Path: s.path, Err: err})
	}
	dir := filepath.Dir(s.path)
	probe, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return fmt.Errorf("the data directory %s takes no new file: %w%s", dir, err, freeSpace(dir))
	}
	defer os.Remove(probe.Name())
	defer probe.Close()
	if _, err := probe.Write(make([]byte, writeProbeBytes)); err != nil {
		return fmt.Errorf("writing %d bytes in %s failed: %w%s", writeProbeBytes, dir, err, freeSpace(dir))
	}
	if err := probe.Sync(); err != nil {
		return fmt.Errorf("syncing a write in %s failed: %w%s", dir, err, freeSpace(dir))
	}
	if err := probe.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("closing a write in %s failed: %w%s", dir, err, freeSpace(dir))
	}
	return nil
}

// freeSpace describes the space left on dir's file system, for messages.
func freeSpace(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return ""
	}
	return fmt.Sprintf(" (%d bytes free)", uint64(st.Bavail)*uint64(st.Bsize))
}
