//go:build sqlite_fts5

package elastic

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/noticesd/noticesd/internal/store/sqlite"
)

// openLite opens an embedded store in a temporary file, to compare with.
func openLite(t *testing.T, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "notices.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
