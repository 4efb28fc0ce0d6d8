//go:build !sqlite_fts5

package sqlite

// FTS5 reports whether this binary was built with the sqlite_fts5 build tag.
// Without it SQLite has no full-text search and the embedded store cannot
// create its notice index, so Open refuses before touching the data
// directory (see ErrNoFTS5).
const FTS5 = false
