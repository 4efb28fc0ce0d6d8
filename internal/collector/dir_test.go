//go:build sqlite_fts5

package collector

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/sqlite"
)

// drop writes a file into dir.
func drop(t *testing.T, dir, name string, content []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
		t.Fatal(err)
	}
}

// present reports whether dir/name exists.
func present(t *testing.T, dir, name string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(dir, name))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// fileNames lists the names in a run's Files.
func fileNames(res RunResult) []string {
	out := []string{}
	for _, f := range res.Files {
		out = append(out, f.Name)
	}
	return out
}

func TestDirDrop(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	feed := readFile(t, "testdata/feed.jsonl")
	drop(t, dir, "b.jsonl.gz", gzipped(readFile(t, "testdata/more.jsonl")))
	drop(t, dir, "a.jsonl", feed)
	// Not (yet) for the collector: a file still being written, a dotfile,
	// a temporary file, another kind of file and a subdirectory's file.
	drop(t, dir, "c.jsonl.part", feed[:len(feed)/2])
	drop(t, dir, ".d.jsonl", feed)
	drop(t, dir, "e.jsonl.tmp", feed)
	drop(t, dir, "notes.txt", []byte("hello"))
	drop(t, dir, "sub/f.jsonl", feed)
	c := e.collector(t, e.config(dir))

	res, err := c.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	if got := fileNames(res); !reflect.DeepEqual(got, []string{"a.jsonl", "b.jsonl.gz"}) {
		t.Errorf("files read %v, want a.jsonl then b.jsonl.gz", got)
	}
	if res.Outcome != OutcomeOK || res.Read != 5 || res.New != 5 || res.ExitCode() != ExitOK {
		t.Errorf("result %+v, want ok with 5 new", res)
	}
	for _, f := range res.Files {
		if want := filepath.Join(dir, DoneDir, f.Name); f.MovedTo != want || f.Error != "" {
			t.Errorf("%s moved to %q (error %q), want %s", f.Name, f.MovedTo, f.Error, want)
		}
	}
	for _, name := range []string{"done/a.jsonl", "done/b.jsonl.gz", "c.jsonl.part", ".d.jsonl", "e.jsonl.tmp", "notes.txt", "sub/f.jsonl"} {
		if !present(t, dir, name) {
			t.Errorf("%s is missing", name)
		}
	}
	for _, name := range []string{"a.jsonl", "b.jsonl.gz"} {
		if present(t, dir, name) {
			t.Errorf("%s was left in the drop directory", name)
		}
	}
	if rec := e.log.lastRun(t); num(rec, "files") != 2 || num(rec, "new") != 5 || rec["source"] != dir {
		t.Errorf("log record %v, want 2 files and 5 new from %s", rec, dir)
	}

	// The writer finishes its file and renames it into place; the same
	// name dropped again does not overwrite the first in done/.
	drop(t, dir, "c.jsonl.part", feed)
	if err := os.Rename(filepath.Join(dir, "c.jsonl.part"), filepath.Join(dir, "c.jsonl")); err != nil {
		t.Fatal(err)
	}
	drop(t, dir, "a.jsonl", feed)
	res, err = c.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if got := fileNames(res); !reflect.DeepEqual(got, []string{"a.jsonl", "c.jsonl"}) || res.Read != 6 || res.New != 0 || res.Updated != 6 {
		t.Errorf("second run read %v: %+v; want a.jsonl and c.jsonl, all 6 updates", got, res)
	}
	if res.Files[0].MovedTo != filepath.Join(dir, DoneDir, "a-2.jsonl") {
		t.Errorf("the second a.jsonl moved to %s, want done/a-2.jsonl", res.Files[0].MovedTo)
	}

	// Nothing new.
	res, err = c.RunOnce(context.Background())
	if err != nil || res.Outcome != OutcomeNotModified || len(res.Files) != 0 {
		t.Errorf("empty run %+v, %v; want not_modified with no files", res, err)
	}
	if s := c.Status(); s.State != StateIdle || s.NoticesCollected != 5 || s.Degraded() {
		t.Errorf("status %+v, want idle with 5 collected", s)
	}
}

func TestDirRejected(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	feed := readFile(t, "testdata/feed.jsonl")
	gz := gzipped(feed)
	drop(t, dir, "broken.jsonl", readFile(t, "testdata/broken.jsonl"))
	drop(t, dir, "corrupt.jsonl.gz", append([]byte{0x1f, 0x8b}, []byte("not really gzip at all")...))
	drop(t, dir, "truncated.jsonl.gz", gz[:len(gz)-12])
	drop(t, dir, "z.jsonl", readFile(t, "testdata/more.jsonl"))
	c := e.collector(t, e.config(dir))

	res, err := c.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("RunOnce: %v (rejected files must not fail the run)", err)
	}
	if got := fileNames(res); !reflect.DeepEqual(got, []string{"broken.jsonl", "corrupt.jsonl.gz", "truncated.jsonl.gz", "z.jsonl"}) {
		t.Fatalf("files read %v", got)
	}
	if res.Outcome != OutcomeOK || res.ExitCode() != ExitRejected || res.Rejected != 2 {
		t.Errorf("result %+v, want ok, 2 rejected lines, exit %d", res, ExitRejected)
	}
	tests := []struct {
		name       string
		sub        string
		wantReport []string
	}{
		{"broken.jsonl", RejectedDir, []string{"2 of 4 lines rejected", "broken.jsonl:2: published_at", "broken.jsonl:3: not a JSON object"}},
		{"corrupt.jsonl.gz", RejectedDir, []string{"could not be read to the end", "gzip"}},
		{"truncated.jsonl.gz", RejectedDir, []string{"could not be read to the end", "unexpected EOF"}},
		{"z.jsonl", DoneDir, nil},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := res.Files[i]
			moved := filepath.Join(dir, tc.sub, tc.name)
			if f.MovedTo != moved || !present(t, dir, filepath.Join(tc.sub, tc.name)) || present(t, dir, tc.name) {
				t.Errorf("moved to %q, want %s", f.MovedTo, moved)
			}
			if tc.wantReport == nil {
				if f.Error != "" || present(t, dir, filepath.Join(tc.sub, tc.name+ReportSuffix)) {
					t.Errorf("a loaded file has error %q or a report", f.Error)
				}
				return
			}
			if f.Error == "" {
				t.Error("a rejected file has no error in the result")
			}
			report := string(readFile(t, moved+ReportSuffix))
			for _, want := range tc.wantReport {
				if !strings.Contains(report, want) {
					t.Errorf("report %q does not mention %q", report, want)
				}
			}
		})
	}
	if got := e.notices(t); got["7D4001"].ID == "" || got["7C3004"].ID == "" {
		t.Errorf("the good lines of broken.jsonl and z.jsonl were not all stored: %d notices", len(got))
	}
	if s := c.Status(); s.State != StateIdle || s.Degraded() {
		t.Errorf("status %+v, want idle: bad files are not a failing source", s)
	}
	rec := e.log.lastRun(t)
	if files, _ := rec["rejected_files"].([]any); rec["level"] != "WARN" || len(files) != 3 {
		t.Errorf("log record %v, want a WARN record naming 3 rejected files", rec)
	}
}

func TestDirStoreFailureLeavesTheFile(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	drop(t, dir, "a.jsonl", readFile(t, "testdata/feed.jsonl"))
	c := e.collector(t, e.config(dir))
	e.st.Close() // the store is gone

	res, err := c.RunOnce(context.Background())
	if err == nil || !strings.Contains(err.Error(), "left in place") {
		t.Fatalf("error %v, want a store failure leaving the file in place", err)
	}
	if !present(t, dir, "a.jsonl") || present(t, dir, "done") || present(t, dir, "rejected") || res.Files[0].MovedTo != "" {
		t.Errorf("the file was moved (%+v); it must stay for the next run", res.Files)
	}
	if s := c.Status(); s.State != StateFailing || s.ConsecutiveFailures != 1 || !strings.Contains(str(s.LastError), "a.jsonl") {
		t.Errorf("status %+v (error %s), want failing and naming the file", s, str(s.LastError))
	}

	// The store is back (a new process): the file is loaded and moved.
	st, err := sqlite.Open(context.Background(), e.st.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c2, err := New(e.config(dir), st)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c2.RunOnce(context.Background()); err != nil || res.New != 3 || !present(t, dir, "done/a.jsonl") {
		t.Errorf("run on the reopened store: %+v, %v; want 3 new and the file in done/", res, err)
	}
}

func TestDirVanished(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "drop")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := e.collector(t, e.config(dir))
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	_, err := c.RunOnce(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot list the source directory") {
		t.Fatalf("error %v, want the directory to be unlistable", err)
	}
	if s := c.Status(); s.State != StateFailing {
		t.Errorf("state %q, want failing", s.State)
	}
}

func TestDirFileTakenByAnotherCollector(t *testing.T) {
	e := newEnv(t)
	d := &dropDir{dir: t.TempDir()}
	// Listed, then moved away by another process before it was opened.
	fr, err := d.load(context.Background(), e.st, "gone.jsonl")
	if err != nil || fr.Error != "" || fr.MovedTo != "" {
		t.Errorf("load of a vanished file: %+v, %v; want it skipped quietly", fr, err)
	}
	// Read, then moved away by the other process first.
	if _, err := d.move("gone.jsonl", DoneDir); !errors.Is(err, errGone) {
		t.Errorf("move of a vanished file: %v, want errGone", err)
	}
}

// TestOnRun: Config.OnRun receives every run's result (the metrics hook).
func TestOnRun(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	drop(t, dir, "a.jsonl", readFile(t, "testdata/feed.jsonl"))
	var got []RunResult
	cfg := e.config(dir)
	cfg.OnRun = func(r RunResult) { got = append(got, r) }
	c := e.collector(t, cfg)
	for range 2 {
		if _, err := c.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || got[0].New == 0 || got[0].Outcome != OutcomeOK || got[1].New != 0 {
		t.Fatalf("OnRun saw %+v, want the first run's new notices, then a run with none", got)
	}
}

// TestDirUnreadableFileIsRejected: a file that cannot be opened (its
// permissions) is moved to rejected/ with a report, and the files after it
// are loaded in the same run; it used to stop every run.
func TestDirUnreadableFileIsRejected(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	drop(t, dir, "a.jsonl", readFile(t, "testdata/feed.jsonl"))
	drop(t, dir, "b.jsonl", readFile(t, "testdata/feed.jsonl"))
	orig := openFile
	openFile = func(path string) (*os.File, error) {
		if filepath.Base(path) == "a.jsonl" {
			return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}
		}
		return orig(path)
	}
	t.Cleanup(func() { openFile = orig })
	c := e.collector(t, e.config(dir))
	res, err := c.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("run: %v; an unreadable file must not fail the run", err)
	}
	if !present(t, dir, "rejected/a.jsonl") || !present(t, dir, "rejected/a.jsonl"+ReportSuffix) || !present(t, dir, "done/b.jsonl") {
		t.Errorf("files %+v; want a.jsonl (with its report) in rejected/ and b.jsonl in done/", res.Files)
	}
	if res.New != 3 || res.ExitCode() != ExitRejected {
		t.Errorf("run %+v (exit %d); want b.jsonl's 3 notices and exit %d", res, res.ExitCode(), ExitRejected)
	}
}

// sizes is a writer that records the size of every batch it is given.
type sizes struct {
	store.NoticeWriter
	got []int
}

func (s *sizes) UpsertNotices(ctx context.Context, batch []notice.Notice) (store.UpsertResult, error) {
	s.got = append(s.got, len(batch))
	return s.NoticeWriter.UpsertNotices(ctx, batch)
}

// TestDefaultBatchSize: the collector writes DefaultBatchSize notices a
// store call, not the ten times larger batches of `noticesd ingest`, since
// it runs inside serve beside the API's writes.
func TestDefaultBatchSize(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	var lines strings.Builder
	for i := range DefaultBatchSize + 1 {
		fmt.Fprintf(&lines, `{"source_id":"9B%07d","published_at":"2026-03-01T00:00:00Z","company_name":"BATCH %d PTY LTD"}`+"\n", i, i)
	}
	drop(t, dir, "batch.jsonl", []byte(lines.String()))
	w := &sizes{NoticeWriter: e.st}
	c, err := New(e.config(dir), w)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	res, err := c.RunOnce(context.Background())
	if err != nil || res.New != DefaultBatchSize+1 {
		t.Fatalf("RunOnce: %+v, %v; want %d new", res, err, DefaultBatchSize+1)
	}
	if want := []int{DefaultBatchSize, 1}; !reflect.DeepEqual(w.got, want) {
		t.Errorf("batches %v, want %v", w.got, want)
	}
}
