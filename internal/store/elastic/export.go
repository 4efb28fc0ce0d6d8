package elastic

import (
	"context"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// exportPage is how many hits one step of an export reads (tests lower it).
var exportPage = scanPage

// ExportNotices opens an export (store.Notices): a point in time paged
// with search_after on the search's sort (ending on notice_seq). The total
// is counted first: more than max is export_too_large.
func (s *Store) ExportNotices(ctx context.Context, q notice.SearchQuery, max int) (store.NoticeExport, error) {
	order, err := sortFor(q.Sort, q.Q)
	if err != nil {
		return nil, err
	}
	query, err := s.filterQuery(ctx, q.Filter)
	if err != nil {
		return nil, err
	}
	pit, err := s.openPIT(ctx, "an export")
	if err != nil {
		return nil, err
	}
	e := &export{pit: pit, query: query, order: order, source: noticeSource}
	var ans noticePage
	err = e.search(ctx, obj{"size": 0, "track_total_hits": true}, &ans)
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

// export reads query in order in a point in time (exports, NoticeSummaries).
type export struct {
	pit    *pointInTime
	query  obj
	order  []obj
	source []string // the _source fields read
	total  int64
	read   int64
	after  []any
}

// search runs body with the export's query and sort in its point in time.
func (e *export) search(ctx context.Context, body obj, ans *noticePage) error {
	body["query"], body["sort"] = e.query, e.order
	return e.pit.search(ctx, searchPath("", e.order), body, ans)
}

func (e *export) Total() int64 { return e.total }

func (e *export) Next(ctx context.Context) ([]notice.Notice, error) {
	if e.read >= e.total {
		return []notice.Notice{}, nil
	}
	var ans noticePage
	if err := e.next(ctx, min(int64(exportPage), e.total-e.read), &ans); err != nil {
		return nil, err
	}
	e.read += int64(len(ans.Hits.Hits))
	if len(ans.Hits.Hits) == 0 {
		e.read = e.total // the view cannot shrink; stop rather than loop
	}
	return ans.notices(), nil
}

// next reads the page of size hits after the last one read into ans.
func (e *export) next(ctx context.Context, size int64, ans *noticePage) error {
	b := obj{"size": size, "track_total_hits": false, "_source": e.source}
	if e.after != nil {
		b["search_after"] = e.after
	}
	if err := e.search(ctx, b, ans); err != nil {
		return err
	}
	if hs := ans.Hits.Hits; len(hs) > 0 {
		e.after = hs[len(hs)-1].Sort
	}
	return nil
}

// Close closes the point in time.
func (e *export) Close() error { return e.pit.close() }
