package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/sample"
	"github.com/noticesd/noticesd/internal/store/sqlite"
)

// TestPickTour: on a sample database the identifiers the demo prints for
// the README's tour exist and are what the README says they are.
func TestPickTour(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	files, err := sample.WriteFiles(sample.Options{Notices: 5000, Companies: 20000, Seed: 1, Now: time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)}, filepath.Join(dir, "sample"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "notices.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := ingest.Register(ctx, st, files.Register, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Notices(ctx, st, []string{files.Notices}, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	tr := pickTour(ctx, st, files.Register)
	if tr.ACN == "" || tr.ABN == "" || tr.Quiet == "" || tr.Notice == "" {
		t.Fatalf("tour %+v has empty fields", tr)
	}
	count := func(s string) int {
		id, err := ident.ParseParam(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		c, err := st.Company(ctx, id)
		if err != nil {
			t.Fatalf("company %s: %v", s, err)
		}
		return c.NoticeCount
	}
	if n := count(tr.ACN); n < 2 {
		t.Errorf("ACN %s has %d notices, want several", tr.ACN, n)
	}
	if n := count(strings.ReplaceAll(tr.ABN, " ", "")); n < 1 {
		t.Errorf("ABN %s has no notices", tr.ABN)
	}
	if n := count(tr.Quiet); n != 0 {
		t.Errorf("QUIET %s has %d notices, want 0", tr.Quiet, n)
	}
	if n, err := st.Notice(ctx, tr.Notice); err != nil || n.ACN == nil || *n.ACN != tr.ACN {
		t.Errorf("notice %s: %v, want a notice of %s", tr.Notice, err, tr.ACN)
	}
}

// TestTourLines: the demo's export and /v1/match lines leave out what the
// data did not give, instead of exporting an empty QUIET that makes the
// tour's requests fail.
func TestTourLines(t *testing.T) {
	full := tour{ACN: "004085616", ABN: "53 004 085 616", Quiet: "000000019", Notice: "ntc_x"}
	noQuiet := full
	noQuiet.Quiet = ""
	for _, tt := range []struct {
		name           string
		tr             tour
		exports, match string
		missing        bool
	}{
		{"everything found", full, `ACN='004085616' ABN='53 004 085 616' QUIET='000000019' NOTICE='ntc_x'`, `\"$ACN\", \"$ABN\", \"$QUIET\", `, false},
		{"no quiet company", noQuiet, `ACN='004085616' ABN='53 004 085 616' NOTICE='ntc_x'`, `\"$ACN\", \"$ABN\", `, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.tr.exports(); got != tt.exports {
				t.Errorf("exports %q, want %q", got, tt.exports)
			}
			if got := tt.tr.matchIDs(); got != tt.match {
				t.Errorf("match ids %q, want %q", got, tt.match)
			}
			if m := tt.tr.missing(); (m != "") != tt.missing || tt.missing && !strings.Contains(m, "QUIET") {
				t.Errorf("missing %q", m)
			}
		})
	}
}
