// Package lockfile holds an exclusive, process-lifetime lock on a file
// (flock(2)), so two processes cannot both own one data directory. The
// kernel releases the lock when the process exits, however it exits, so a
// crash never leaves a stale lock behind.
package lockfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrHeld is returned (wrapped) by Acquire when another process holds the
// lock.
var ErrHeld = errors.New("lockfile: held by another process")

// Lock is a held lock. Release it with Release, or let the process exit.
type Lock struct {
	f *os.File
}

// Acquire takes the exclusive lock on path, creating the file if need be,
// without waiting. When another process holds it the error wraps ErrHeld
// and names that process's pid as it wrote it into the file. The holder's
// pid is written into the file.
func Acquire(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lockfile: open %s: %w", path, err)
	}
	if err := lock(f); err != nil {
		defer f.Close()
		if errors.Is(err, errWouldBlock) {
			holder := "another process"
			if b, rerr := os.ReadFile(path); rerr == nil && strings.TrimSpace(string(b)) != "" {
				holder = "process " + strings.TrimSpace(string(b))
			}
			return nil, fmt.Errorf("%w: %s holds %s", ErrHeld, holder, path)
		}
		return nil, fmt.Errorf("lockfile: lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release gives the lock up. It is safe to call on nil and more than once.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
