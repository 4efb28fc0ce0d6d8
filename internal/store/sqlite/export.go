package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// exportBatch is how many notices one Next of an export reads; a
// variable so tests can take several batches on the sample.
var exportBatch = 500

// ExportNotices opens an export (store.Notices): one read transaction, so
// the export sees one snapshot of the file however long the client takes
// to read it (WAL: writers go on meanwhile). The matching seqs are listed
// in order first (at most max+1 of them, 8 bytes each), then the notices
// are read exportBatch at a time.
func (s *Store) ExportNotices(ctx context.Context, q notice.SearchQuery, max int) (store.NoticeExport, error) {
	c := filterCond(q.Filter)
	sortKey, err := checkSort(q.Sort, c)
	if err != nil {
		return nil, err
	}
	tx, err := s.read.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: export: %w", err)
	}
	seqs, total, err := s.searchSeqs(ctx, tx, q.Filter, c, sortKey, max+1, 0)
	if err == nil && total > int64(max) {
		err = store.ExportTooLarge(total, max)
	}
	if err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	return &export{tx: tx, seqs: seqs}, nil
}

// export is an open export of the embedded store.
type export struct {
	tx   *sql.Tx
	seqs []int64
	pos  int
}

func (e *export) Total() int64 { return int64(len(e.seqs)) }

func (e *export) Next(ctx context.Context) ([]notice.Notice, error) {
	end := min(e.pos+exportBatch, len(e.seqs))
	ns, err := noticesBySeq(ctx, e.tx, e.seqs[e.pos:end])
	if err != nil {
		return nil, fmt.Errorf("sqlite: export: %w", err)
	}
	e.pos = end
	return ns, nil
}

func (e *export) Close() error {
	err := e.tx.Rollback()
	if err == sql.ErrTxDone {
		return nil
	}
	return err
}
