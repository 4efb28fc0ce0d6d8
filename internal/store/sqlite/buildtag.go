package sqlite

import "errors"

// BuildTag is the Go build tag the embedded store needs.
const BuildTag = "sqlite_fts5"

// ErrNoFTS5 is returned by Open in a binary built without the sqlite_fts5
// tag, before any file or directory is created.
var ErrNoFTS5 = errors.New("sqlite: this binary was built without the " + BuildTag +
	" build tag, so SQLite has no full-text search and the embedded store cannot run; rebuild with `go build -tags " +
	BuildTag + "` (make build does)")
