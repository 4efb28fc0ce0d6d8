//go:build sqlite_fts5

package elastic

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/sample"
	"github.com/noticesd/noticesd/internal/store"
)

// readExport reads an export to its end, failing t on an error.
func readExport(t *testing.T, exp store.NoticeExport) []string {
	t.Helper()
	var ids []string
	for {
		ns, err := exp.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(ns) == 0 {
			return ids
		}
		for _, n := range ns {
			ids = append(ids, n.ID)
		}
	}
}

// TestExportPages: an export crosses many search_after pages (a page of 7
// here) in a point in time and gives exactly the notices and order of the
// search's pages and of the embedded store's export, for each sort; more
// than max is export_too_large with nothing left open; a notice stored or
// amended while the export runs is neither added nor repeated; an export
// whose point in time is gone fails, it does not end early.
func TestExportPages(t *testing.T) {
	defer func(p int) { exportPage = p }(exportPage)
	exportPage = 7
	ctx := context.Background()
	files, err := sample.WriteFiles(sample.Options{Notices: 300, Companies: 100, Seed: 3,
		Now: time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC), Years: 1}, filepath.Join(t.TempDir(), "sample"))
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) }
	lite := openLite(t)
	es := openTest(t, clock)
	for _, w := range []store.NoticeWriter{lite, es} {
		if _, err := ingest.Notices(ctx, w, []string{files.Notices}, ingest.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	word, err := query.Parse("liquidator")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []notice.SearchQuery{
		{Filter: notice.Filter{IncludeDeregistration: true}, Sort: notice.SortPublishedDesc},
		{Filter: notice.Filter{IncludeDeregistration: true}, Sort: notice.SortPublishedAsc},
		{Filter: notice.Filter{State: []string{"NSW"}}, Sort: notice.SortPublishedDesc},
		{Filter: notice.Filter{Q: word}, Sort: notice.SortPublishedAsc},
		{Filter: notice.Filter{Q: word}, Sort: notice.SortRelevance},
	} {
		t.Run(fmt.Sprintf("%s %v", q.Sort, q.State), func(t *testing.T) {
			var want []string
			for page := 1; ; page++ {
				q.Limit, q.Page = 100, page
				p, err := es.Search(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range p.Notices {
					want = append(want, n.ID)
				}
				if int64(page*100) >= p.Total {
					break
				}
			}
			exp, err := es.ExportNotices(ctx, q, 300)
			if err != nil {
				t.Fatal(err)
			}
			defer exp.Close()
			got := readExport(t, exp)
			if len(want) <= exportPage {
				t.Fatalf("only %d matches: the export does not cross pages", len(want))
			}
			if !slices.Equal(got, want) || exp.Total() != int64(len(want)) {
				t.Errorf("export %d ids (total %d), search pages %d ids; equal %v", len(got), exp.Total(), len(want), slices.Equal(got, want))
			}
			if q.Sort == notice.SortRelevance {
				return // scores differ between the engines
			}
			lexp, err := lite.ExportNotices(ctx, q, 300)
			if err != nil {
				t.Fatal(err)
			}
			defer lexp.Close()
			if lg := readExport(t, lexp); !slices.Equal(lg, got) {
				t.Errorf("the embedded store's export differs: %d ids against %d", len(lg), len(got))
			}
		})
	}
	all := notice.SearchQuery{Filter: notice.Filter{IncludeDeregistration: true}, Sort: notice.SortPublishedDesc}
	t.Run("export_too_large", func(t *testing.T) {
		_, err := es.ExportNotices(ctx, all, 299)
		if e, ok := errs.As(err); !ok || e.Code != errs.ExportTooLarge {
			t.Fatalf("err %v, want export_too_large", err)
		}
	})
	t.Run("snapshot", func(t *testing.T) {
		exp, err := es.ExportNotices(ctx, all, 1000)
		if err != nil {
			t.Fatal(err)
		}
		defer exp.Close()
		first, err := exp.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// New notices published later than every other (they sort first
		// in published_desc); a notice already read amended to sort last
		// (without the point in time it would come again); one not read
		// yet amended to sort first (it would be skipped).
		ns := readNotices(t, files.Notices)
		byID := map[string]notice.Notice{}
		for _, n := range ns {
			byID[notice.IDFor(n.SourceID)] = n
		}
		var batch []notice.Notice
		for i := range 5 {
			n := ns[i]
			n.SourceID = fmt.Sprintf("export-new-%d", i)
			n.ID = notice.IDFor(n.SourceID)
			n.PublishedDate, n.PublishedAt = "2030-01-01", "2030-01-01T00:00:00.000Z"
			batch = append(batch, n)
		}
		read := byID[first[0].ID]
		read.PublishedDate, read.PublishedAt = "1990-01-01", "1990-01-01T00:00:00.000Z"
		var unread notice.Notice
		for _, n := range ns {
			if !slices.ContainsFunc(first, func(m notice.Notice) bool { return m.ID == notice.IDFor(n.SourceID) }) {
				unread = n
			}
		}
		unread.PublishedDate, unread.PublishedAt = "2031-01-01", "2031-01-01T00:00:00.000Z"
		batch = append(batch, read, unread)
		if _, err := es.UpsertNotices(ctx, batch); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, n := range first {
			seen[n.ID] = true
		}
		for _, id := range readExport(t, exp) {
			if seen[id] {
				t.Errorf("notice %s read twice", id)
			}
			seen[id] = true
		}
		if int64(len(seen)) != exp.Total() || exp.Total() != 300 {
			t.Errorf("read %d distinct notices, total %d, want 300", len(seen), exp.Total())
		}
	})
	t.Run("point in time gone", func(t *testing.T) {
		exp, err := es.ExportNotices(ctx, all, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if err := exp.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := exp.Next(ctx); err == nil {
			t.Error("Next after the point in time closed succeeded")
		}
	})
}
