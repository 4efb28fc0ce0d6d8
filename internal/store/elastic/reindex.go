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

// writeGrace bounds how long before a reindex starts a notice write may
// have been stamped (indexed_at) and still be landing: writes that did not
// yet see the reindex's index are copied again after the swap if they are
// this recent.
const writeGrace = 5 * time.Minute

// ReindexProgress reports a reindex step: kind is the index kind, done and
// total count what is copied (notices, register rows).
type ReindexProgress func(kind string, done, total int64)

// ReindexResult says what a reindex did.
type ReindexResult struct {
	// Notices and Register name the new indices; NoticesCopied counts the
	// notices copied, RegisterCopied the register rows.
	Notices, Register             string
	NoticesCopied, RegisterCopied int64
	// CaughtUp counts notices copied again after the swap (written during
	// the reindex without seeing it).
	CaughtUp int64
}

// reindexHook, when set by a test, runs between the copy and the alias
// swap of the notices; afterSwapHook, when set, runs right after the swap
// and an error from it stops the reindex there, as a crash would.
var (
	reindexHook   func()
	afterSwapHook func(old []string) error
	// registerCopyHook, when set by a test, runs between the register
	// copy and its alias move.
	registerCopyHook func()
	// catchUpCopiedHook, when set by a test, runs after the catch-up's
	// copy, before the old indices are dropped.
	catchUpCopiedHook func(old []string)
)

// Reindex rebuilds both indices from the current mappings into new
// versioned indices and moves the aliases, one atomic _aliases call each;
// the old indices are deleted afterwards. Each notice document is written
// anew from its notice (rebuildNoticeDoc), so its folded texts are those
// of the current tokeniser. Searches go on against the old
// index until the swap and the new one after; neither is ever incomplete.
//
// Notices written meanwhile are not lost: while the new index is being
// filled it carries the alias <ns>-notices-next, and UpsertNotices writes
// to it as well as to the live alias; copies and writes carry external_gte
// versions (the writer's milliseconds), so whichever lands last, the newest
// version wins. After the swap, notices stamped since the reindex began
// (less writeGrace) are copied again from the old index, for writers that
// started their batch before the next alias existed.
//
// The swap also puts a filtered alias (catchUpAlias) on the old index, in
// the same _aliases call; the catch-up reads through it and deletes the old
// index at its end. A reindex stopped between the two (a crash, a lost
// node) leaves that alias, and the next reindex finishes the catch-up
// before anything else, so those notices are never lost.
//
// A register load committed during the reindex's register copy makes the
// register's alias move fail: the load's register is kept, the copy is
// dropped, and the error says to run reindex again.
func (s *Store) Reindex(ctx context.Context, progress ReindexProgress) (ReindexResult, error) {
	var res ReindexResult
	if progress == nil {
		progress = func(string, int64, int64) {}
	}
	// A catch-up left by a reindex that stopped after its swap.
	n, err := s.catchUp(ctx, s.Alias(mappings.Notices), progress)
	if err != nil {
		return res, err
	}
	res.CaughtUp += n
	// Notices.
	ix, err := mappings.Load(mappings.Notices)
	if err != nil {
		return res, err
	}
	if exists, err := s.aliasExists(ctx, s.nextAlias()); err != nil {
		return res, err
	} else if exists {
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
		_ = s.do(context.WithoutCancel(ctx), s.cfg.BulkTimeout, "DELETE", "/"+res.Notices, nil, nil)
		return res, err
	}
	order := []obj{{"notice_seq": "asc"}, {"id": "asc"}}
	res.NoticesCopied, err = s.copyDocs(ctx, s.Alias(mappings.Notices), res.Notices, matchAll, order, "notices", rebuildNoticeDoc, progress)
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
	if _, err := s.moveAlias(ctx, s.Alias(mappings.Notices), res.Notices, extra); err != nil {
		return abandon(err)
	}
	// Reads now go to the new index (without what the catch-up brings).
	s.dataChanged(ctx)
	if afterSwapHook != nil {
		if err := afterSwapHook(old); err != nil {
			return res, err
		}
	}
	// Catch up on writes that went to the old index only.
	if n, err = s.catchUp(ctx, res.Notices, progress); err != nil {
		return res, err
	}
	res.CaughtUp += n

	// Register: loads replace it whole, so a copy and a swap suffice. The
	// copy reads the index the alias names now, and the swap moves the
	// alias only if it still names that index: a register load committed
	// meanwhile is newer than the copy, so it is kept and the copy dropped.
	src, err := s.aliasIndices(ctx, s.Alias(mappings.Register))
	if err != nil {
		return res, err
	}
	if len(src) != 1 {
		return res, fmt.Errorf("elastic: the alias %s names %d indices (%v), want one; run reindex again once no register load is committing", s.Alias(mappings.Register), len(src), src)
	}
	rix, name, err := s.newRegisterIndex(ctx)
	if err != nil {
		return res, err
	}
	res.Register = name
	res.RegisterCopied, err = s.copyRegister(ctx, src[0], res.Register, progress)
	if err == nil && registerCopyHook != nil {
		registerCopyHook()
	}
	if err == nil {
		err = s.endLoad(ctx, rix, res.Register)
	}
	if err == nil {
		err = s.registerLiveFrom(ctx, res.Register, src)
	}
	if err != nil {
		_ = s.do(context.WithoutCancel(ctx), s.cfg.BulkTimeout, "DELETE", "/"+res.Register, nil, nil)
		if moved, _ := s.aliasIndices(context.WithoutCancel(ctx), s.Alias(mappings.Register)); len(moved) == 1 && moved[0] != src[0] {
			return res, fmt.Errorf("elastic: a register load committed during the reindex, so its register (%s) is kept and the reindex's copy dropped; the notices were reindexed; run reindex again to rebuild the register from the current mapping: %w", moved[0], err)
		}
		return res, err
	}
	return res, nil
}

// copyRegister copies the register rows of index from into index, in row
// order, as the blocks of the current mapping (a register of mapping
// version 1 or 2, one row a document, is packed into blocks of
// registerBlockRows), and returns the rows copied.
func (s *Store) copyRegister(ctx context.Context, from, index string, progress ReindexProgress) (int64, error) {
	total, err := s.registerRowCount(ctx, from)
	if err != nil {
		return 0, err
	}
	var (
		done    int64
		first   int64 // the row of pending[0]
		pending []notice.RegisterRow
	)
	// send writes the full blocks of pending (every block with all).
	send := func(all bool) error {
		var ops []bulkOp
		n := 0
		for ; len(pending)-n >= registerBlockRows || (all && n < len(pending)); n += registerBlockRows {
			block := pending[n:min(n+registerBlockRows, len(pending))]
			at := first + int64(n)
			ops = append(ops, registerOp(index, at, block, appendRegisterBlock(nil, at, block)))
		}
		if len(ops) == 0 {
			return nil
		}
		if err := s.bulk(ctx, ops); err != nil {
			return err
		}
		n = min(n, len(pending))
		done += int64(n)
		first += int64(n)
		pending = append(pending[:0], pending[n:]...)
		progress("register", done, max(total, done))
		return nil
	}
	err = s.pages(ctx, from, obj{"query": matchAll, "sort": []obj{{"row": "asc"}}}, math.MaxInt, func(hs []hit) error {
		for _, h := range hs {
			row, rows, err := registerRowsOf(h.Source)
			if err != nil {
				return fmt.Errorf("elastic: register document %s: %w", h.ID, err)
			}
			if len(pending) == 0 {
				first = row
			}
			pending = append(pending, rows...)
		}
		return send(false)
	})
	if err == nil {
		err = send(true)
	}
	return done, err
}

// rebuildNoticeDoc is the document a reindex writes for a notice document
// (its _source): the document of its notice, as the writer makes it now,
// with its indexed_at kept. What is derived from the notice follows the
// current code: the texts folded by today's query.Fold (a document written
// before a change of the tokeniser was folded by the old one).
func rebuildNoticeDoc(src json.RawMessage) ([]byte, error) {
	var d struct {
		IndexedAt int64         `json:"indexed_at"`
		Notice    notice.Notice `json:"notice"`
	}
	if err := json.Unmarshal(src, &d); err != nil {
		return nil, err
	}
	n := d.Notice
	if n.ID == "" {
		return nil, errors.New("no notice in the document")
	}
	if n.Practitioners == nil {
		n.Practitioners = []notice.Practitioner{}
	}
	return esdoc.AppendNotice(make([]byte, 0, len(src)), &n, d.IndexedAt, nil), nil
}

// catchUp copies the notices visible through catchUpAlias (those written
// to an old index since its reindex began) into index, then deletes the
// old indices, which removes the alias. Without the alias it does nothing.
// It returns the notices copied.
func (s *Store) catchUp(ctx context.Context, index string, progress ReindexProgress) (int64, error) {
	old, err := s.aliasIndices(ctx, s.catchUpAlias())
	if err != nil || len(old) == 0 {
		return 0, err
	}
	for _, o := range old {
		// A write to the old index resolved before the swap may still be
		// in flight: had it landed after the copy below, it would be lost
		// with the index. A write block returns once every write in flight
		// to o has ended, and refuses later ones, which the writer sends
		// again through the live alias, now the new index (settle,
		// writeBlocked); the refresh makes the ended ones visible.
		if err := s.do(ctx, s.cfg.Timeout, http.MethodPut, "/"+o+"/_block/write", nil, nil); err != nil {
			return 0, fmt.Errorf("elastic: block writes to %s before catching up from it: %w", o, err)
		}
		if err := s.refresh(ctx, o); err != nil {
			return 0, err
		}
	}
	order := []obj{{"notice_seq": "asc"}, {"id": "asc"}}
	n, err := s.copyDocs(ctx, s.catchUpAlias(), index, matchAll, order, "notices (catch-up)", rebuildNoticeDoc, progress)
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

// copyDocs copies the documents of from matching query into index, in
// order (search_after), keeping ids and external versions. With rebuild,
// each document is written as rebuild makes it from its _source; without,
// as it is.
func (s *Store) copyDocs(ctx context.Context, from, index string, query obj, order []obj, kind string,
	rebuild func(json.RawMessage) ([]byte, error), progress ReindexProgress) (int64, error) {
	count, err := s.search(ctx, from, obj{"query": query, "size": 0, "track_total_hits": true})
	if err != nil {
		return 0, err
	}
	total := count.Hits.Total.Value
	var done int64
	err = s.pages(ctx, from, obj{"query": query, "sort": order, "version": true}, math.MaxInt, func(hs []hit) error {
		ops := make([]bulkOp, len(hs))
		for i, h := range hs {
			body := []byte(h.Source)
			if rebuild != nil {
				var err error
				if body, err = rebuild(h.Source); err != nil {
					return fmt.Errorf("elastic: %s document %s: %w", kind, h.ID, err)
				}
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
