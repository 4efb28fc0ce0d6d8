package e2e

import (
	"path/filepath"
	"testing"

	"github.com/noticesd/noticesd/test/testbin"
)

// TestReadmeTour runs README.md's short tour, as written, against
// `noticesd demo` on a fresh data directory (what `make run` does), so the
// README's commands and what it says of their answers stay true.
func TestReadmeTour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := testbin.Build(t)
	testbin.Tour(t, bin, []string{"NOTICES_DATA_DIR=" + filepath.Join(t.TempDir(), "data")})
}
