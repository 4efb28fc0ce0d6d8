package elastic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/elastic/esdoc"
	"github.com/noticesd/noticesd/mappings"
)

// writeGrace bounds how long before a reindex a write may have been stamped
// (indexed_at) and still be landing: the catch-up copies those again.
const writeGrace = 5 * time.Minute

// ReindexProgress reports a reindex step: kind is the index kind, done and
// total count what is copied (notices, register rows).
type ReindexProgress func(kind string, done, total int64)

// ReindexResult says what a reindex did: the new indices, the notices and
// register rows copied, and the notices copied again after the swap
// (CaughtUp: written during the reindex without seeing it).
type ReindexResult struct {
	Notices, Register                       string
	NoticesCopied, RegisterCopied, CaughtUp int64
}

// Reindex's test hooks.
var (
	reindexHook       func()                   // between the notices' copy and swap
	afterSwapHook     func(old []string) error // after the swap (an error stops there, as a crash)
	registerCopyHook  func()                   // between the register copy and its alias move
	catchUpCopiedHook func(old []string)       // after the catch-up's copy, before the old indices go
)

// Reindex rebuilds both indices from the current mappings (each notice
// document written anew, rebuildNoticeDoc) into new indices, moves each
// alias in one atomic _aliases call and deletes the old indices. Searches
// read the old index until the swap and the new one after. Why notices
// written meanwhile (next alias, catchUpAlias) and a register load
// committed during the copy are not lost: docs/elasticsearch.md,
// "Reindexing".
func (s *Store) Reindex(ctx context.Context, progress ReindexProgress) (ReindexResult, error) {
	var res ReindexResult
	if progress == nil {
		progress = func(string, int64, int64) {}
	}
	n, err := s.catchUp(ctx, s.Alias(mappings.Notices), progress) // one a stopped reindex left
	if err != nil {
		return res, err
	}
	res.CaughtUp += n
	ix, err := mappings.Load(mappings.Notices)
	if err != nil {
		return res, err
	}
	if next, err := s.aliasIndices(ctx, s.nextAlias()); err != nil {
		return res, err
	} else if len(next) > 0 {
		return res, fmt.Errorf("elastic: another reindex is filling %s (or one was interrupted: delete the index it points to, then run reindex again)", s.nextAlias())
	}
	old, err := s.aliasIndices(ctx, s.Alias(mappings.Notices))
	if err != nil {
		return res, err
	}
	res.Notices = s.indexName(ix, s.newSuffix())
	start := time.Now().Add(-writeGrace).UnixMilli()
	if err := s.createIndex(ctx, ix, res.Notices, s.nextAlias(), nil); err != nil {
		return res, fmt.Errorf("elastic: create %s: %w", res.Notices, err)
	}
	abandon := func(err error) (ReindexResult, error) {
		_ = s.deleteIndex(context.WithoutCancel(ctx), res.Notices)
		return res, err
	}
	res.NoticesCopied, err = s.copyDocs(ctx, s.Alias(mappings.Notices), res.Notices, "notices", progress)
	if err != nil {
		return abandon(err)
	}
	if reindexHook != nil {
		reindexHook()
	}
	if err := s.refresh(ctx, res.Notices); err != nil {
		return abandon(err)
	}
	extra := []map[string]any{{"remove": map[string]any{"index": res.Notices, "alias": s.nextAlias()}}}
	for _, o := range old {
		extra = append(extra, map[string]any{"add": map[string]any{"index": o, "alias": s.catchUpAlias(),
			"filter": obj{"range": obj{"indexed_at": obj{"gte": start}}}}})
	}
	if _, err := s.moveAlias(ctx, s.Alias(mappings.Notices), res.Notices, nil, extra); err != nil {
		return abandon(err)
	}
	s.dataChanged(ctx) // reads go to the new index
	if afterSwapHook != nil {
		if err := afterSwapHook(old); err != nil {
			return res, err
		}
	}
	if n, err = s.catchUp(ctx, res.Notices, progress); err != nil {
		return res, err
	}
	res.CaughtUp += n

	// Register: loads replace it whole, so a copy, and a swap only if the
	// alias still names the copied index.
	src, err := s.aliasIndices(ctx, s.Alias(mappings.Register))
	if err != nil {
		return res, err
	}
	if len(src) != 1 {
		return res, fmt.Errorf("elastic: the alias %s names %d indices (%v), want one; run reindex again once no register load is committing", s.Alias(mappings.Register), len(src), src)
	}
	l, err := s.beginRegister(ctx)
	if err != nil {
		return res, err
	}
	res.Register = l.index
	res.RegisterCopied, err = s.copyRegister(ctx, src[0], l, progress)
	if err == nil && registerCopyHook != nil {
		registerCopyHook()
	}
	if err == nil {
		err = l.commit(ctx, src)
	}
	if err != nil {
		_ = l.Rollback()
		if moved, _ := s.aliasIndices(context.WithoutCancel(ctx), s.Alias(mappings.Register)); len(moved) == 1 && moved[0] != src[0] {
			return res, fmt.Errorf("elastic: a register load committed during the reindex, so its register (%s) is kept and the reindex's copy dropped; the notices were reindexed; run reindex again to rebuild the register from the current mapping: %w", moved[0], err)
		}
		return res, err
	}
	return res, nil
}

// copyRegister copies from's rows in order into the load l, in whole
// blocks but the last.
func (s *Store) copyRegister(ctx context.Context, from string, l *RegisterLoad, progress ReindexProgress) (int64, error) {
	total, err := s.registerRowCount(ctx, from)
	if err != nil {
		return 0, err
	}
	add := func(rows []notice.RegisterRow) error {
		err := l.Add(ctx, rows)
		progress("register", l.rows, max(total, l.rows))
		return err
	}
	var pending []notice.RegisterRow // rows short of a whole block
	err = pages(ctx, s, from, obj{"query": matchAll, "sort": []obj{{"row": "asc"}}}, math.MaxInt, nil, func(hs []hit) error {
		for _, h := range hs {
			_, rows, err := registerRowsOf(h.Source, "", "")
			if err != nil {
				return fmt.Errorf("elastic: register document %s: %w", h.ID, err)
			}
			pending = append(pending, rows...)
		}
		n := len(pending) - len(pending)%registerBlockRows
		err := add(pending[:n])
		pending = append(pending[:0], pending[n:]...)
		return err
	})
	if err == nil && len(pending) > 0 {
		err = add(pending)
	}
	return l.rows, err
}

// rebuildNoticeDoc is a notice document (its _source) as the writer makes
// it now (today's query.Fold), its indexed_at kept.
func rebuildNoticeDoc(src json.RawMessage) ([]byte, error) {
	var d struct {
		IndexedAt int64         `json:"indexed_at"`
		Notice    notice.Notice `json:"notice"`
	}
	if err := json.Unmarshal(src, &d); err != nil {
		return nil, err
	}
	if d.Notice.ID == "" {
		return nil, errors.New("no notice in the document")
	}
	return esdoc.AppendNotice(make([]byte, 0, len(src)), &d.Notice, d.IndexedAt), nil
}

// catchUp copies catchUpAlias's notices into index, then deletes its indices.
func (s *Store) catchUp(ctx context.Context, index string, progress ReindexProgress) (int64, error) {
	old, err := s.aliasIndices(ctx, s.catchUpAlias())
	if err != nil || len(old) == 0 {
		return 0, err
	}
	for _, o := range old {
		// A write in flight to o would be lost: a write block waits for
		// those and refuses later ones (sent again through the live alias,
		// writeBlocked); the refresh makes the ended ones visible.
		if err := s.do(ctx, s.timeout, http.MethodPut, "/"+o+"/_block/write", nil, nil); err != nil {
			return 0, fmt.Errorf("elastic: block writes to %s before catching up from it: %w", o, err)
		}
		if err := s.refresh(ctx, o); err != nil {
			return 0, err
		}
	}
	n, err := s.copyDocs(ctx, s.catchUpAlias(), index, "notices (catch-up)", progress)
	if err == nil && catchUpCopiedHook != nil {
		catchUpCopiedHook(old)
	}
	if err != nil {
		return n, fmt.Errorf("elastic: catching up from %v (they keep the alias %s: run reindex again to finish): %w", old, s.catchUpAlias(), err)
	}
	if err := s.refresh(ctx, s.Alias(mappings.Notices)); err != nil {
		return n, err
	}
	s.dataChanged(ctx)
	return n, s.dropIndices(ctx, s.Alias(mappings.Notices), old)
}

// copyDocs copies from's notices into index, rebuilt, ids and versions kept.
func (s *Store) copyDocs(ctx context.Context, from, index, kind string, progress ReindexProgress) (int64, error) {
	var count searchAnswer
	if err := s.searchRead(ctx, "/"+from+"/_search", obj{"query": matchAll, "size": 0, "track_total_hits": true}, &count); err != nil {
		return 0, err
	}
	total := count.Hits.Total.Value
	var done int64
	order := []obj{{"notice_seq": "asc"}, {"id": "asc"}}
	err := pages(ctx, s, from, obj{"query": matchAll, "sort": order, "version": true}, math.MaxInt, nil, func(hs []hit) error {
		ops := make([]bulkOp, len(hs))
		for i, h := range hs {
			body, err := rebuildNoticeDoc(h.Source)
			if err != nil {
				return fmt.Errorf("elastic: %s document %s: %w", kind, h.ID, err)
			}
			ops[i] = bulkOp{Index: index, Action: "index", ID: h.ID, Body: body, Version: h.Version, What: kind + " document " + h.ID}
		}
		if err := s.bulk(ctx, ops); err != nil {
			return err
		}
		done += int64(len(hs))
		progress(kind, done, max(total, done))
		return nil
	})
	return done, err
}
