package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
)

// TestScreenCSVFormulas: in the CSV answer of POST /v1/match a text cell a
// spreadsheet would run as a formula gets an apostrophe, unless raw=true;
// the JSON answer keeps the text as it is.
func TestScreenCSVFormulas(t *testing.T) {
	f := newWatchFixture(t, nil)
	var n notice.Notice
	for _, m := range loadNotices(t) {
		if m.ACN != nil {
			n = m
			break
		}
	}
	n.SourceID, n.ID = "csv-formula", notice.IDFor("csv-formula")
	n.NoticePurpose = "@SUM(1+1)*cmd|' /C calc'!A0"
	n.PublishedDate, n.PublishedAt = "2030-01-01", "2030-01-01T00:00:00.000Z"
	if _, err := f.writer.UpsertNotices(context.Background(), []notice.Notice{n}); err != nil {
		t.Fatal(err)
	}
	s, _ := f.screenOK(t, `{"identifiers": ["`+*n.ACN+`"]}`)
	if len(s.Matched) != 1 || s.Matched[0].LatestNotice.NoticePurpose != n.NoticePurpose {
		t.Fatalf("the JSON screen of %s does not give the new notice's purpose %q: %+v", *n.ACN, n.NoticePurpose, s.Matched)
	}
	for _, c := range []struct{ query, want string }{
		{"", "'" + n.NoticePurpose},
		{"?raw=false", "'" + n.NoticePurpose},
		{"?raw=true", n.NoticePurpose},
	} {
		t.Run("raw"+c.query, func(t *testing.T) {
			res := f.sendCSV(t, http.MethodPost, "/v1/match"+c.query, "text/csv", "text/csv", []byte(*n.ACN+"\n"))
			recs := readCSV(t, res)
			if len(recs) != 2 || recs[1][8] != c.want { // submitted, then the result columns
				t.Errorf("answer %q, want latest_notice_purpose %q", recs, c.want)
			}
		})
	}
	t.Run("raw=yes", func(t *testing.T) {
		res := f.sendCSV(t, http.MethodPost, "/v1/match?raw=yes", "text/csv", "text/csv", []byte(*n.ACN+"\n"))
		wantError(t, res, http.StatusBadRequest, "invalid_parameter")
	})
}
