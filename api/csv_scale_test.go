package api

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/elastic"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/testservers"
)

// elasticFixture is f's server again with its notices and register in a
// live Elasticsearch (scale mode's notice store), its accounts still in
// f's SQLite file: the same data, the other backend.
func elasticFixture(t *testing.T, f *fixture) *fixture {
	t.Helper()
	ctx := context.Background()
	esURL, redisURL, ns := testservers.Elasticsearch(t), testservers.Redis(t), testservers.Namespace(t)
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	es, err := elastic.Open(ctx, elastic.Config{URL: esURL, Namespace: ns, Log: publog.New(rdb, ns, publog.Options{}),
		Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := es.UpsertNotices(ctx, loadNotices(t)); err != nil {
		t.Fatalf("seed notices: %v", err)
	}
	var rows []notice.RegisterRow
	readJSON(t, "testdata/register.json", &rows)
	load, err := es.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := load.Add(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := load.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	g := *f
	g.logs = &bytes.Buffer{}
	g.srv = New(config.Default(), Deps{Notices: es, Accounts: f.store, Now: func() time.Time { return fixedNow },
		Logger: slog.New(slog.NewTextHandler(g.logs, nil))})
	return &g
}

// TestCSVExportBackendsIdentical: a CSV export is the same bytes from the
// embedded store and from Elasticsearch on the sample, for every filter
// and publication sort, and export_too_large alike.
func TestCSVExportBackendsIdentical(t *testing.T) {
	f := newFixture(t)
	g := elasticFixture(t, f)
	for _, query := range []string{"", "include_deregistration=true", "include_deregistration=true&sort=published_asc",
		"state=NSW,VIC", "q=liquidator&sort=published_desc", "q=liquidator&sort=published_asc", "acn=123456780",
		"from=2026-03-01&to=2026-03-31&include_deregistration=true", "notice_purpose=nothing", "include_deregistration=true&bom=1"} {
		t.Run(query, func(t *testing.T) {
			lite := f.sendCSV(t, http.MethodGet, "/v1/notices?"+query, "text/csv", "", nil)
			es := g.sendCSV(t, http.MethodGet, "/v1/notices?"+query, "text/csv", "", nil)
			if !strings.Contains(query, "bom=1") {
				readCSV(t, lite)
				readCSV(t, es)
			} else if !bytes.HasPrefix(lite.body, []byte(bom)) {
				t.Errorf("no byte-order mark: %q", clip(lite.body))
			}
			if !bytes.Equal(lite.body, es.body) {
				t.Errorf("bytes differ:\nsqlite:\n%s\nelastic:\n%s", lite.body, es.body)
			}
			for _, h := range []string{"Content-Type", "Content-Disposition", "X-Total-Count"} {
				if lite.header.Get(h) != es.header.Get(h) {
					t.Errorf("%s: sqlite %q, elastic %q", h, lite.header.Get(h), es.header.Get(h))
				}
			}
		})
	}
	t.Run("export_too_large", func(t *testing.T) {
		f.srv.exportMax, g.srv.exportMax = 1, 1
		lite := f.sendCSV(t, http.MethodGet, "/v1/notices?include_deregistration=true", "text/csv", "", nil)
		es := g.sendCSV(t, http.MethodGet, "/v1/notices?include_deregistration=true", "text/csv", "", nil)
		wantError(t, lite, http.StatusBadRequest, "export_too_large")
		if !bytes.Equal(lite.body, es.body) {
			t.Errorf("sqlite %s, elastic %s", lite.body, es.body)
		}
	})
}

// TestCSVFormulasBackendsIdentical: cells a spreadsheet would run as
// formulas, and a line feed inside a cell, are written the same from
// both stores, escaped by default and as they are with raw=true.
func TestCSVFormulasBackendsIdentical(t *testing.T) {
	f := newFixture(t)
	g := elasticFixture(t, f)
	n := loadNotices(t)[0]
	n.SourceID, n.ID = "csv-formulas", notice.IDFor("csv-formulas")
	n.CompanyName = "-2+3+cmd|' /C calc'!A0\nsecond line"
	n.NoticePurpose = "=HYPERLINK(\"http://example.invalid\",\"x\")"
	for _, w := range []store.NoticeWriter{f.store, g.srv.deps.Notices.(*elastic.Store)} {
		if _, err := w.UpsertNotices(context.Background(), []notice.Notice{n}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ query, name, purpose string }{
		{"", "'" + n.CompanyName, "'" + n.NoticePurpose},
		{"&raw=true", n.CompanyName, n.NoticePurpose},
	} {
		t.Run("raw"+c.query, func(t *testing.T) {
			target := "/v1/notices?include_deregistration=true" + c.query
			lite := f.sendCSV(t, http.MethodGet, target, "text/csv", "", nil)
			es := g.sendCSV(t, http.MethodGet, target, "text/csv", "", nil)
			if !bytes.Equal(lite.body, es.body) {
				t.Errorf("bytes differ:\nsqlite:\n%s\nelastic:\n%s", lite.body, es.body)
			}
			if !bytes.Contains(lite.body, []byte("A0\nsecond line")) {
				t.Errorf("the line feed inside the name is not kept: %q", clip(lite.body))
			}
			found := false
			for _, rec := range readCSV(t, lite) {
				if rec[0] == n.ID {
					found = true
					if rec[5] != c.name || rec[6] != c.purpose {
						t.Errorf("company_name %q, notice_purpose %q; want %q, %q", rec[5], rec[6], c.name, c.purpose)
					}
				}
			}
			if !found {
				t.Errorf("notice %s not in the export: %q", n.ID, clip(lite.body))
			}
		})
	}
}
