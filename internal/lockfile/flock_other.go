//go:build !unix

package lockfile

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("lockfile: would block")

// lock is not implemented off Unix: noticesd's embedded mode supports Unix
// systems only, and there a lock is always taken.
func lock(*os.File) error { return errors.New("lockfile: file locks need a Unix system") }

func unlock(*os.File) error { return nil }
