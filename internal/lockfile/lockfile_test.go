package lockfile

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestAcquireRelease: within one process a second Acquire of the same file
// (a second open file description) is refused until the first is released.
// The cross-process case is cmd/noticesd's TestSecondServeOnOneDataDirRefused.
func TestAcquireRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.lock")
	first, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(path); !errors.Is(err, ErrHeld) {
		t.Fatalf("second Acquire: %v; want ErrHeld", err)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	again, err := Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	again.Release()
}
