package sqlite

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

// locksOn returns this process's POSIX locks on path, as /proc/locks lists
// them ("READ 1073741826 1073742335", ...).
func locksOn(t *testing.T, path string) []string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatalf("this test reads /proc/locks (Linux): %v", err)
	}
	inode := fmt.Sprintf(":%d", st.Ino)
	pid := fmt.Sprint(os.Getpid())
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		// 1: POSIX  ADVISORY  READ 1234 08:01:5678 1073741826 1073742335
		f := strings.Fields(line)
		if len(f) >= 8 && f[1] == "POSIX" && f[4] == pid && strings.HasSuffix(f[5], inode) {
			out = append(out, strings.Join([]string{f[3], f[6], f[7]}, " "))
		}
	}
	return out
}

// TestCheckWriteKeepsSQLiteLocks: the write check must not open the
// database file, since closing any descriptor of it drops every POSIX lock
// the process holds on it (SQLite's shared lock included), after which
// another process may checkpoint and delete the WAL from under the server.
func TestCheckWriteKeepsSQLiteLocks(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	conn, err := s.read.Conn(ctx) // an open connection holds SQLite's shared lock
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM notices").Scan(&n); err != nil {
		t.Fatal(err)
	}
	before := locksOn(t, s.path)
	if len(before) == 0 {
		t.Fatal("no POSIX lock on the database file while a connection is open; the test cannot see what it checks")
	}
	if err := s.CheckWrite(ctx); err != nil {
		t.Fatal(err)
	}
	if after := locksOn(t, s.path); len(after) < len(before) {
		t.Fatalf("locks on the database file: %v before CheckWrite, %v after; it dropped SQLite's locks", before, after)
	}
}
