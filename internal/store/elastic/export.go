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
	e := &export{cursor[noticeDoc]{s: s, pit: pit, body: obj{"query": query, "sort": order, "_source": noticeSource}, size: exportPage}}
	var ans noticePage
	err = e.search(ctx, obj{"size": 0, "track_total_hits": true, "query": query, "sort": order}, &ans)
	if err == nil && ans.Hits.Total.Value > int64(max) {
		err = store.ExportTooLarge(ans.Hits.Total.Value, max)
	}
	if err != nil {
		_ = e.Close()
		return nil, err
	}
	e.max = int(ans.Hits.Total.Value)
	return e, nil
}

// export is an open export: a cursor in a point in time whose max is the total.
type export struct{ cursor[noticeDoc] }

func (e *export) Total() int64 { return int64(e.max) }

func (e *export) Next(ctx context.Context) ([]notice.Notice, error) {
	hs, err := e.next(ctx)
	if err != nil {
		return nil, err
	}
	return notices(hs), nil
}

// Close closes the point in time.
func (e *export) Close() error { return e.close() }
