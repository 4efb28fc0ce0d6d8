package api

import (
	"bytes"
	"io"
	"os"
)

// spoolMemory is how much of a spooled answer is held in memory; past it
// the answer goes to a temporary file.
const spoolMemory = 1 << 20

// spool holds an answer produced before it is sent, so the work that
// produced it (and the heavy slot that bounds that work) is over before
// the client reads a byte, however slowly it reads: up to spoolMemory
// bytes in memory, the rest in a temporary file in dir (os.TempDir() when
// empty), removed from its directory as soon as it is created, so it
// takes disk space only while open and leaves nothing behind a crash.
// Write it in full, then Read it once, then Close it.
type spool struct {
	dir  string
	mem  bytes.Buffer
	file *os.File
	size int64
	// reading is set by the first Read: the file was rewound.
	reading bool
}

// Write appends p.
func (s *spool) Write(p []byte) (int, error) {
	if s.file == nil && s.mem.Len()+len(p) > spoolMemory {
		f, err := os.CreateTemp(s.dir, "noticesd-spool-*")
		if err != nil {
			return 0, err
		}
		s.file = f
		if err := os.Remove(f.Name()); err != nil {
			return 0, err
		}
		if _, err := s.mem.WriteTo(f); err != nil {
			return 0, err
		}
	}
	var n int
	var err error
	if s.file != nil {
		n, err = s.file.Write(p)
	} else {
		n, err = s.mem.Write(p)
	}
	s.size += int64(n)
	return n, err
}

// Read reads the spooled bytes from the first.
func (s *spool) Read(p []byte) (int, error) {
	if s.file == nil {
		return s.mem.Read(p)
	}
	if !s.reading {
		s.reading = true
		if _, err := s.file.Seek(0, io.SeekStart); err != nil {
			return 0, err
		}
	}
	return s.file.Read(p)
}

// Close frees the memory and the file.
func (s *spool) Close() error {
	s.mem = bytes.Buffer{}
	if s.file == nil {
		return nil
	}
	err := s.file.Close()
	s.file = nil
	return err
}
