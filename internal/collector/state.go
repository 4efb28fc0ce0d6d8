package collector

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// StateStore keeps an http(s) feed's state between runs: its validators
// (ETag, Last-Modified) and since cursor, as opaque bytes. Two kinds
// exist: a file in the data directory (StateFile, the embedded backend and
// `noticesd collect --once`) and, in scale mode, a Redis key shared by
// every serve replica and written only by the holder of the collector's
// lease, so a new leader resumes where the last one stopped.
type StateStore interface {
	// Load returns the stored state, or nil when there is none.
	Load(ctx context.Context) ([]byte, error)
	// Save replaces the stored state. An error leaves the previous state;
	// the run that saves fails with it (a leader that lost its lease gets
	// an error here and its successor's cursor stands).
	Save(ctx context.Context, state []byte) error
}

// FileState is a StateStore in one file, replaced through a temporary file
// and a rename so it is never seen half written. A missing file is no
// state.
type FileState string

// Load implements StateStore.
func (f FileState) Load(context.Context) ([]byte, error) {
	b, err := os.ReadFile(string(f))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// Save implements StateStore.
func (f FileState) Save(_ context.Context, b []byte) error {
	path := string(f)
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("cannot save the collector state in %s: %v; make the data directory writable", dir, err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if werr == nil && cerr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("cannot save the collector state to %s: %v; make the data directory writable", path, errors.Join(werr, cerr))
	}
	return nil
}
