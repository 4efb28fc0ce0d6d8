//go:build sqlite_fts5

package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/sqlite"
)

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	clock := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "notices.db"),
		sqlite.WithClock(func() time.Time { return clock }))
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// ticking is an Options.Now that advances 10ms a reading.
func ticking() func() time.Time {
	t := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(10 * time.Millisecond); return t }
}

// allNotices returns every stored notice, keyed by source_id.
func allNotices(t *testing.T, st *sqlite.Store) map[string]notice.Notice {
	t.Helper()
	page, err := st.Search(context.Background(), notice.SearchQuery{
		Filter: notice.Filter{IncludeDeregistration: true},
		Sort:   notice.SortPublishedDesc, Limit: 100, Page: 1,
	})
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	if int(page.Total) != len(page.Notices) {
		t.Fatalf("total %d but %d notices on the page", page.Total, len(page.Notices))
	}
	out := make(map[string]notice.Notice, len(page.Notices))
	for _, n := range page.Notices {
		out[n.SourceID] = n
	}
	return out
}

func TestNoticesIntoSQLite(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	var report strings.Builder
	opt := Options{Report: &report, Now: ticking(), BatchSize: 2}

	// First load: plain and gzipped copies of the same notices plus two more.
	sum, err := Notices(ctx, st, []string{"testdata/notices.jsonl", "testdata/crlf.jsonl"}, opt)
	if err != nil {
		t.Fatalf("Notices: %v", err)
	}
	want := Summary{Kind: "notices", Read: 7, Inserted: 7, Duration: sum.Duration}
	if sum != want || sum.ExitCode() != 0 || report.Len() != 0 {
		t.Fatalf("first load %+v (exit %d), report %q; want %+v", sum, sum.ExitCode(), report.String(), want)
	}
	if sum.Duration <= 0 {
		t.Errorf("duration %v from the injected clock", sum.Duration)
	}
	first := allNotices(t, st)
	if len(first) != 7 {
		t.Fatalf("%d notices stored, want 7", len(first))
	}
	n := first["6A1001"]
	if n.ID != notice.IDFor("6A1001") || n.PublishedDate != "2026-03-02" || n.State != "NSW" || n.CompanyName != "MONAKA PTY LTD" ||
		n.ACN == nil || *n.ACN != "000000019" || len(n.Practitioners) != 1 {
		t.Errorf("stored notice 6A1001: %+v", n)
	}
	if p := first["6A1002"].Practitioners; p == nil || len(p) != 0 {
		t.Errorf("notice without practitioners stored as %#v, want []", p)
	}

	// Company view from the notices.
	co, err := st.Company(ctx, ident.ID{Value: "000000019", Kind: ident.ACN})
	if err != nil {
		t.Fatalf("Company: %v", err)
	}
	if co.NoticeCount != 1 {
		t.Errorf("company 000000019 has %d notices, want 1", co.NoticeCount)
	}

	// Re-ingest the same notices (gzipped this time, and via a name
	// without .gz): nothing new, all updated, same ids and seqs.
	sum, err = Notices(ctx, st, []string{"testdata/notices.jsonl.gz", "testdata/gzipped-without-extension.jsonl", "testdata/crlf.jsonl"}, opt)
	if err != nil {
		t.Fatalf("re-ingest: %v", err)
	}
	if sum.Read != 12 || sum.Inserted != 0 || sum.Updated != 12 || sum.Rejected != 0 {
		t.Fatalf("re-ingest %+v, want read 12 inserted 0 updated 12", sum)
	}
	again := allNotices(t, st)
	if len(again) != 7 {
		t.Fatalf("%d notices after re-ingest, want 7", len(again))
	}
	for sid, a := range first {
		b := again[sid]
		if a.ID != b.ID || a.Seq != b.Seq || a.CollectedAt != b.CollectedAt {
			t.Errorf("%s changed identity on re-ingest: id %s->%s seq %d->%d collected %s->%s",
				sid, a.ID, b.ID, a.Seq, b.Seq, a.CollectedAt, b.CollectedAt)
		}
	}

	// A file with broken lines: the good ones load, the bad are reported.
	report.Reset()
	sum, err = Notices(ctx, st, []string{"testdata/broken.jsonl"}, opt)
	if err != nil {
		t.Fatalf("broken file: %v", err)
	}
	if sum.Read != 8 || sum.Inserted != 3 || sum.Updated != 0 || sum.Rejected != 5 || sum.ExitCode() != ExitRejected {
		t.Fatalf("broken file %+v exit %d, want read 8 inserted 3 rejected 5 exit 3", sum, sum.ExitCode())
	}
	wantReport := strings.Join([]string{
		`testdata/broken.jsonl:2: published_at "2024-13-01" is not an RFC 3339 timestamp or YYYY-MM-DD date`,
		`testdata/broken.jsonl:3: source_id is empty; every notice needs the regulator's notice identifier`,
		`testdata/broken.jsonl:4: not a JSON object; each line must hold one notice as {...}`,
		`testdata/broken.jsonl:6: acn "12345" is not an ACN: it must be 9 digits (spaces allowed)`,
		`testdata/broken.jsonl:8: none of acn, abn and company_name is given; a notice needs at least one to name its company`,
	}, "\n") + "\n"
	if report.String() != wantReport {
		t.Errorf("report\n%s\nwant\n%s", report.String(), wantReport)
	}
	stored := allNotices(t, st)
	for _, sid := range []string{"6B2001", "6B2004", "6B2006"} {
		if _, ok := stored[sid]; !ok {
			t.Errorf("good line %s was not stored", sid)
		}
	}
	if len(stored) != 10 {
		t.Errorf("%d notices stored, want 10", len(stored))
	}
	if a := stored["6B2004"].ACN; a == nil || *a != "000000010" {
		t.Errorf("ACN with a bad check digit stored as %v, want kept as is", a)
	}
}

func TestNoticesSameSourceIDTwiceInOneBatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dup.jsonl")
	lines := `{"source_id":"d1","published_at":"2026-04-01","company_name":"First"}
{"source_id":"d2","published_at":"2026-04-01","company_name":"Other"}
{"source_id":"d1","published_at":"2026-04-01","company_name":"Second"}
`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	sum, err := Notices(context.Background(), st, []string{path}, Options{Now: ticking()})
	if err != nil {
		t.Fatalf("Notices: %v", err)
	}
	if sum.Read != 3 || sum.Inserted != 2 || sum.Updated != 1 {
		t.Errorf("summary %+v, want read 3 inserted 2 updated 1", sum)
	}
	if got := allNotices(t, st)["d1"].CompanyName; got != "Second" {
		t.Errorf("company_name %q, want the later line's %q", got, "Second")
	}
}

func TestNoticesFailures(t *testing.T) {
	st := openStore(t)
	zip := filepath.Join(t.TempDir(), "notices.zip")
	if err := os.WriteFile(zip, []byte("PK\x03\x04zipdata"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		paths []string
		want  string
	}{
		{"missing file", []string{"testdata/notices.jsonl", "testdata/nope.jsonl"}, "cannot read testdata/nope.jsonl"},
		{"no files", nil, "no notice files given"},
		{"zip archive", []string{zip}, "unzip it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Notices(context.Background(), st, tt.paths, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if n := len(allNotices(t, st)); n != 0 {
		t.Errorf("%d notices stored by failed loads; a missing file must stop the load before writing", n)
	}
}

func TestNoticesWriterFailureIsReturned(t *testing.T) {
	closed := openStore(t)
	closed.Close()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		st   *sqlite.Store
		want string
	}{
		{"closed store", context.Background(), closed, "storing notices failed after 0 were stored (the failed batch of 5 may be partly stored: run the same ingest again"},
		{"cancelled", cancelled, openStore(t), "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum, err := Notices(tt.ctx, tt.st, []string{"testdata/notices.jsonl"}, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v (summary %+v), want an error containing %q", err, sum, tt.want)
			}
		})
	}
}

func registerNames(t *testing.T, st *sqlite.Store, acn string) (*notice.Register, error) {
	t.Helper()
	co, err := st.Company(context.Background(), ident.ID{Value: acn, Kind: ident.ACN})
	if err != nil {
		return nil, err
	}
	return co.Register, nil
}

func TestRegisterIntoSQLite(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	var report strings.Builder
	opt := Options{Report: &report, Now: ticking(), BatchSize: 2}

	var bar strings.Builder
	withBar := opt
	withBar.Progress = &bar
	sum, err := Register(ctx, st, "testdata/register.tsv.gz", withBar)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if got := bar.String(); !strings.HasPrefix(got, "\rregister [========================] 100%  6 rows") {
		t.Errorf("progress %q, want a full bar with 6 rows", got)
	}
	if sum.Kind != "register" || sum.Read != 6 || sum.Inserted != 6 || sum.Rejected != 0 || sum.ExitCode() != 0 {
		t.Fatalf("summary %+v", sum)
	}
	reg, err := registerNames(t, st, "000000019")
	if err != nil {
		t.Fatalf("Company 000000019: %v", err)
	}
	if reg == nil || reg.Name != "MONAKA PTY LTD" || reg.RegisteredOn == nil || *reg.RegisteredOn != "1990-01-08" {
		t.Fatalf("register %+v", reg)
	}
	if !reflect.DeepEqual(reg.FormerNames, []string{"LOVINI HOLDINGS PTY LTD"}) {
		t.Errorf("former names %v", reg.FormerNames)
	}
	// A company only in the register: 200 with notice_count 0.
	co, err := st.Company(ctx, ident.ID{Value: "000000055", Kind: ident.ACN})
	if err != nil || co.NoticeCount != 0 || co.Register == nil {
		t.Fatalf("register-only company: %+v, %v", co, err)
	}

	// Replace with a smaller file with broken rows: the register is the
	// new file's good rows only.
	sum, err = Register(ctx, st, "testdata/register-broken.tsv", opt)
	if err != nil {
		t.Fatalf("Register broken: %v", err)
	}
	if sum.Read != 7 || sum.Inserted != 2 || sum.Rejected != 5 || sum.ExitCode() != ExitRejected {
		t.Fatalf("broken summary %+v", sum)
	}
	lines := strings.Split(strings.TrimSpace(report.String()), "\n")
	sort.Strings(lines)
	if len(lines) != 5 || lines[0] != "testdata/register-broken.tsv:3: has 3 tab-separated fields, expected 15" {
		t.Errorf("report %q", lines)
	}
	if _, err := registerNames(t, st, "000000055"); !errs.Is(err, errs.NotFound) {
		t.Errorf("company 000000055 (only in the old register): %v, want not_found after the replacement", err)
	}
	if reg, err := registerNames(t, st, "000000028"); err != nil || reg == nil {
		t.Errorf("company 000000028 (in the new register): %+v %v", reg, err)
	}
}

func TestRegisterFailuresKeepTheOldRegister(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	if _, err := Register(ctx, st, "testdata/register-bom-crlf.tsv", Options{}); err != nil {
		t.Fatalf("Register BOM/CRLF: %v", err)
	}
	headerOnly := filepath.Join(t.TempDir(), "header-only.tsv")
	if err := os.WriteFile(headerOnly, []byte(strings.Join(RegisterColumns, "\t")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		path string
		want string
	}{
		{"wrong header", ctx, "testdata/register-wrong-header.tsv", `column 7 is "Registration Date", expected "Date of Registration"`},
		{"missing file", ctx, "testdata/nope.tsv", "cannot read testdata/nope.tsv"},
		{"no rows", ctx, headerOnly, "has no loadable rows (0 rejected); the register was left unchanged"},
		{"cancelled", cancelled, "testdata/register.tsv", "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Register(tt.ctx, st, tt.path, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			reg, err := registerNames(t, st, "000000028")
			if err != nil || reg == nil || reg.Name != "CHRISTENSEN & ASSOCIATES PTY LTD" {
				t.Errorf("old register lost after a failed load: %+v %v", reg, err)
			}
			if _, err := registerNames(t, st, "000000055"); !errs.Is(err, errs.NotFound) {
				t.Errorf("a failed load left rows behind: %v", err)
			}
		})
	}
}

func TestNoticesProgressAndStdin(t *testing.T) {
	f, err := os.Open("testdata/broken.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := os.Stdin
	os.Stdin = f
	t.Cleanup(func() { os.Stdin = saved })

	var bar, report strings.Builder
	st := openStore(t)
	sum, err := Notices(context.Background(), st, []string{"testdata/notices.jsonl", "-"},
		Options{Report: &report, Progress: &bar, Now: ticking()})
	if err != nil {
		t.Fatalf("Notices: %v", err)
	}
	if sum.Read != 13 || sum.Inserted != 8 || sum.Rejected != 5 {
		t.Errorf("summary %+v, want read 13 inserted 8 rejected 5", sum)
	}
	if !strings.HasPrefix(report.String(), "<stdin>:2: published_at") {
		t.Errorf("stdin rejections not named <stdin>: %q", report.String())
	}
	// Stdin has no size: the bar shows rows without a percentage.
	if got := bar.String(); !strings.HasPrefix(got, "\rnotices  13 rows") || !strings.HasSuffix(got, "\x1b[K\n") {
		t.Errorf("progress %q", got)
	}
}

func TestNoticesFromReader(t *testing.T) {
	data, err := os.ReadFile("testdata/broken.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var report strings.Builder
	st := openStore(t)
	sum, err := NoticesFrom(context.Background(), st, strings.NewReader(string(data)), "https://feed.example/notices.jsonl",
		Options{Report: &report, Now: ticking(), BatchSize: 2})
	if err != nil {
		t.Fatalf("NoticesFrom: %v", err)
	}
	if sum.Read != 8 || sum.Inserted != 3 || sum.Rejected != 5 || sum.ExitCode() != ExitRejected {
		t.Errorf("summary %+v", sum)
	}
	if !strings.HasPrefix(report.String(), "https://feed.example/notices.jsonl:2: published_at") {
		t.Errorf("report %q does not name the input", report.String())
	}
	if n := len(allNotices(t, st)); n != 3 {
		t.Errorf("%d notices stored, want 3", n)
	}
}

// batchSizes wraps a real store and records the size of each batch it is
// given; sizedSizes is the same store with a batch size of its own, as a
// store.BatchSizer (scale mode's writer).
type batchSizes struct {
	*sqlite.Store
	mu    sync.Mutex
	sizes []int
}

func (b *batchSizes) UpsertNotices(ctx context.Context, batch []notice.Notice) (store.UpsertResult, error) {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(batch))
	b.mu.Unlock()
	return b.Store.UpsertNotices(ctx, batch)
}

type sizedSizes struct{ *batchSizes }

const ownBatch = 20000

func (sizedSizes) NoticeBatch() int { return ownBatch }

// TestNoticeBatchSizes: a writer with a batch size of its own (scale mode)
// gets that many notices a call, any other DefaultNoticeBatch, and --batch
// (Options.BatchSize) overrides both.
func TestNoticeBatchSizes(t *testing.T) {
	n := max(DefaultNoticeBatch, ownBatch) + 1000
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, `{"source_id":"b%d","published_at":"2026-04-01","company_name":"Batch %d"}`+"\n", i, i)
	}
	path := filepath.Join(t.TempDir(), "batches.jsonl")
	if err := os.WriteFile(path, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// split is the batch sizes of n notices in batches of size.
	split := func(size int) []int {
		var out []int
		for left := n; left > 0; left -= size {
			out = append(out, min(size, left))
		}
		return out
	}
	for _, c := range []struct {
		name string
		turn bool
		opt  Options
		want []int
	}{
		{"serial writer", false, Options{}, split(DefaultNoticeBatch)},
		{"writer with its own size", true, Options{}, split(ownBatch)},
		{"serial writer, --batch", false, Options{BatchSize: 4000}, split(4000)},
		{"writer with its own size, --batch", true, Options{BatchSize: 4000}, split(4000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &batchSizes{Store: openStore(t)}
			var w store.NoticeWriter = b
			if c.turn {
				w = sizedSizes{b}
			}
			c.opt.Now = ticking()
			sum, err := Notices(context.Background(), w, []string{path}, c.opt)
			if err != nil {
				t.Fatalf("Notices: %v", err)
			}
			if sum.Inserted != n {
				t.Errorf("inserted %d, want %d", sum.Inserted, n)
			}
			if !reflect.DeepEqual(b.sizes, c.want) {
				t.Errorf("batches %v, want %v", b.sizes, c.want)
			}
		})
	}
}
