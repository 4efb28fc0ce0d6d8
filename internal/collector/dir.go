package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// Subdirectories of a directory source that processed files are moved to.
const (
	DoneDir     = "done"
	RejectedDir = "rejected"
)

// ReportSuffix ends the name of the report written beside a rejected file.
const ReportSuffix = ".errors.txt"

// dropDir is a directory source: files are dropped into dir, read once
// each and moved out of the way.
type dropDir struct {
	dir   string
	batch int
}

// run ingests every pending file in name order. A store failure (or
// cancellation) stops the run and leaves that file in place; a file that
// cannot be read whole is rejected and the run goes on.
func (d *dropDir) run(ctx context.Context, w store.NoticeWriter, res *RunResult) error {
	names, err := d.pending()
	if err != nil {
		return err
	}
	res.Files = []FileResult{}
	if len(names) == 0 {
		res.Outcome = OutcomeNotModified
		return nil
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := d.load(ctx, w, name)
		res.add(f)
		if err != nil {
			return err
		}
	}
	res.Outcome = OutcomeOK
	return nil
}

// pending lists the complete notice files directly in the directory, in
// name order: regular files (or links to them) named *.jsonl or *.jsonl.gz,
// not dotfiles. Files still being written must carry a temporary name
// (a dotfile, *.tmp, *.part) until renamed into place.
func (d *dropDir) pending() ([]string, error) {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, fmt.Errorf("cannot list the source directory %s: %v; check that it exists and is readable", d.dir, err)
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if !isDropName(name) {
			continue
		}
		mode := e.Type()
		if mode&fs.ModeSymlink != 0 {
			fi, err := os.Stat(filepath.Join(d.dir, name))
			if err != nil {
				continue // a dangling link
			}
			mode = fi.Mode().Type()
		}
		if mode.IsRegular() {
			names = append(names, name)
		}
	}
	return names, nil // os.ReadDir sorts by name
}

// isDropName reports whether a file name is one the collector reads: it
// ends .jsonl or .jsonl.gz (so temporary names such as x.jsonl.part or
// x.jsonl.tmp are not) and is not a dotfile.
func isDropName(name string) bool {
	lower := strings.ToLower(name)
	if strings.HasPrefix(name, ".") {
		return false
	}
	return strings.HasSuffix(lower, ".jsonl") || strings.HasSuffix(lower, ".jsonl.gz")
}

// watchedWriter passes batches to a writer and remembers whether it
// failed, to tell a store failure from a read failure.
type watchedWriter struct {
	w   store.NoticeWriter
	err error
}

// UpsertNotices implements store.NoticeWriter.
// A store.BatchError (some notices refused, the others stored) is not a
// failure of the store: ingest reports those lines as rejected.
func (ww *watchedWriter) UpsertNotices(ctx context.Context, batch []notice.Notice) (store.UpsertResult, error) {
	res, err := ww.w.UpsertNotices(ctx, batch)
	var refused *store.BatchError
	if err != nil && ww.err == nil && !errors.As(err, &refused) {
		ww.err = err
	}
	return res, err
}

// load ingests one file and moves it to done/ or rejected/. The error is
// returned only when the run must stop: the store failed, the run was
// cancelled, or the file could not be opened or moved (it stays in place
// and is read again next run, which is harmless).
func (d *dropDir) load(ctx context.Context, w store.NoticeWriter, name string) (FileResult, error) {
	fr := FileResult{Name: name}
	path := filepath.Join(d.dir, name)
	f, err := openFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fr, nil // taken by another collector (`noticesd collect --once`) since listed
	}
	if err != nil {
		// An unreadable file (permissions) is rejected like one that
		// cannot be read to the end, so it does not hold up the files
		// after it; only when it cannot be moved either does it stop
		// the run.
		fr.Error = "unreadable: " + err.Error()
		text := fmt.Sprintf("%s could not be opened: %v\nNothing of it was loaded. Make it readable and drop it again.\n", name, err)
		if merr := d.place(&fr, name, RejectedDir, text); merr != nil {
			return fr, fmt.Errorf("cannot open %s: %v; make the files in the source directory readable (%v)", path, err, merr)
		}
		return fr, nil
	}
	var report bytes.Buffer
	ww := &watchedWriter{w: w}
	sum, err := ingest.NoticesFrom(ctx, ww, f, name, ingest.Options{Report: &report, BatchSize: d.batch})
	f.Close()
	fr.Read, fr.New, fr.Updated, fr.Rejected = sum.Read, sum.Inserted, sum.Updated, sum.Rejected

	var to, header string
	switch {
	case err != nil && (ww.err != nil || ctx.Err() != nil):
		fr.Error = err.Error()
		return fr, fmt.Errorf("%s (left in place for the next run): %w", name, err)
	case err != nil:
		fr.Error = "unreadable: " + err.Error()
		to = RejectedDir
		header = fmt.Sprintf("%s could not be read to the end: %v\n"+
			"%d notices read before that were loaded (%d new, %d updated) and %d lines were rejected.\n"+
			"Fix or replace the file and drop it again: re-loading a notice updates it in place.\n",
			name, err, sum.Inserted+sum.Updated, sum.Inserted, sum.Updated, sum.Rejected)
	case sum.Rejected > 0:
		fr.Error = fmt.Sprintf("%d of %d lines rejected", sum.Rejected, sum.Read)
		to = RejectedDir
		header = fmt.Sprintf("%s: %d of %d lines rejected; the other %d were loaded (%d new, %d updated).\n"+
			"Fix the lines below and drop the file again: re-loading a notice updates it in place.\n",
			name, sum.Rejected, sum.Read, sum.Inserted+sum.Updated, sum.Inserted, sum.Updated)
	default:
		to = DoneDir
	}
	text := ""
	if header != "" {
		text = header + report.String()
	}
	return fr, d.place(&fr, name, to, text)
}

// place moves the file name to the sub directory sub and writes text, when
// there is any, beside it as its report. A file another collector moved
// first is left to it (loading twice is harmless).
func (d *dropDir) place(fr *FileResult, name, sub, text string) error {
	moved, err := d.move(name, sub)
	if errors.Is(err, errGone) {
		return nil
	}
	if err != nil {
		return err
	}
	fr.MovedTo = moved
	if text != "" {
		if err := os.WriteFile(moved+ReportSuffix, []byte(text), 0o644); err != nil {
			fr.Error += fmt.Sprintf(" (and the report could not be written: %v)", err)
		}
	}
	return nil
}

// openFile opens a dropped file (a variable so that a test, which runs as
// root, can make one unreadable).
var openFile = os.Open

// errGone is a file that vanished from the drop directory while it was
// being read: another collector process moved it.
var errGone = errors.New("the file was moved away by another collector")

// move renames the file into the sub directory sub, creating it, under a
// name not yet taken there ("a.jsonl", then "a-2.jsonl", ...). It returns
// the new path.
func (d *dropDir) move(name, sub string) (string, error) {
	dir := filepath.Join(d.dir, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cannot create %s: %v; make the source directory writable (the file stays and is read again next run)", dir, err)
	}
	to, err := freeName(dir, name)
	if err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(d.dir, name), to); err != nil {
		if !exists(filepath.Join(d.dir, name)) {
			return "", errGone
		}
		return "", fmt.Errorf("cannot move %s to %s/: %v; make the source directory writable (the file stays and is read again next run)", name, sub, err)
	}
	return to, nil
}

// freeName is dir/name, or dir/stem-N.ext with the first N from 2 whose
// file (and report) does not exist yet.
func freeName(dir, name string) (string, error) {
	stem, ext := name, ""
	for _, e := range []string{".jsonl.gz", ".jsonl"} {
		if strings.HasSuffix(strings.ToLower(name), e) {
			stem, ext = name[:len(name)-len(e)], name[len(name)-len(e):]
			break
		}
	}
	for n := 1; n <= 10000; n++ {
		candidate := name
		if n > 1 {
			candidate = stem + "-" + strconv.Itoa(n) + ext
		}
		p := filepath.Join(dir, candidate)
		if !exists(p) && !exists(p+ReportSuffix) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s already holds 10000 files named like %s; clear it out", dir, name)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
