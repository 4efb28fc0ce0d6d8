//go:build sqlite_fts5

package sqlite

// FTS5 reports whether this binary was built with the sqlite_fts5 build tag,
// which compiles SQLite's full-text search (FTS5) into the driver. The
// embedded store needs it for its notice index (see fts5_missing.go).
const FTS5 = true
