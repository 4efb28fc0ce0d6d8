package elastic

import (
	"context"
	"fmt"
	"net/http"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/mappings"
)

// exportPage is how many hits one search_after step of an export reads; a
// variable so tests can cross several pages on the sample.
var exportPage = scanPage

// pitKeepAlive is how long a point in time outlives the last search that
// used it: one page must be read and written to the client within it.
const pitKeepAlive = "2m"

// ExportNotices opens an export (store.Notices): a point in time on the
// notices alias, so every page reads the same view of the index while
// notices are written and refreshed, paged with search_after on the
// search's own sort (which ends on the unique notice_seq), never a deep
// from. The total is counted first in the point in time; more than max is
// export_too_large and the point in time is closed at once.
func (s *Store) ExportNotices(ctx context.Context, q notice.SearchQuery, max int) (store.NoticeExport, error) {
	order, err := sortFor(q.Sort, q.Q)
	if err != nil {
		return nil, err
	}
	query, err := s.filterQuery(ctx, q.Filter)
	if err != nil {
		return nil, err
	}
	// A point in time opened without a shard would page without its
	// notices: refused, as searches are (searchRead).
	var pit struct {
		shardStatus
		ID string `json:"id"`
	}
	err = s.do(ctx, s.cfg.Timeout, http.MethodPost, noPartial("/"+s.Alias(mappings.Notices)+"/_pit?keep_alive="+pitKeepAlive), nil, &pit)
	if p := partialError(err); p != nil {
		err = p
	} else if err == nil {
		err = pit.complete()
	}
	if err != nil {
		return nil, fmt.Errorf("elastic: open point in time for an export: %w", err)
	}
	e := &export{s: s, pit: pit.ID, query: query, order: order}
	ans, err := e.search(ctx, obj{"size": 0, "track_total_hits": true})
	if err == nil && ans.Hits.Total.Value > int64(max) {
		err = store.ExportTooLarge(ans.Hits.Total.Value, max)
	}
	if err != nil {
		_ = e.Close()
		return nil, err
	}
	e.total = ans.Hits.Total.Value
	return e, nil
}

// export is an open export of the Elasticsearch store.
type export struct {
	s     *Store
	pit   string
	query obj
	order []obj
	total int64
	read  int64
	after []any
}

// search runs body with the export's query and sort in its point in time,
// keeping the point in time's id current (Elasticsearch may renew it).
func (e *export) search(ctx context.Context, body obj) (*searchAnswer, error) {
	body["query"], body["sort"] = e.query, e.order
	body["pit"] = obj{"id": e.pit, "keep_alive": pitKeepAlive}
	path := "/_search"
	if len(e.order) > 0 && e.order[0]["_score"] != nil {
		path += "?search_type=dfs_query_then_fetch"
	}
	var ans struct {
		searchAnswer
		PitID string `json:"pit_id"`
	}
	if err := e.s.searchRead(ctx, path, body, &ans); err != nil {
		return nil, err
	}
	if ans.PitID != "" {
		e.pit = ans.PitID
	}
	return &ans.searchAnswer, nil
}

func (e *export) Total() int64 { return e.total }

func (e *export) Next(ctx context.Context) ([]notice.Notice, error) {
	if e.read >= e.total {
		return []notice.Notice{}, nil
	}
	b := obj{"size": min(int64(exportPage), e.total-e.read), "track_total_hits": false, "_source": noticeSource}
	if e.after != nil {
		b["search_after"] = e.after
	}
	ans, err := e.search(ctx, b)
	if err != nil {
		return nil, err
	}
	hs := ans.Hits.Hits
	ns := make([]notice.Notice, len(hs))
	for i, h := range hs {
		if ns[i], err = noticeOf(h.Source); err != nil {
			return nil, fmt.Errorf("elastic: decode notice %s: %w", h.ID, err)
		}
	}
	if len(hs) > 0 {
		e.after = hs[len(hs)-1].Sort
	}
	e.read += int64(len(hs))
	if len(hs) == 0 {
		e.read = e.total // the view cannot shrink; stop rather than loop
	}
	return ns, nil
}

// Close closes the point in time.
func (e *export) Close() error {
	return e.s.do(context.Background(), e.s.cfg.Timeout, http.MethodDelete, "/_pit", obj{"id": e.pit}, nil)
}
