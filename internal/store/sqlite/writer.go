package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// upsertNotices inserts notices or, for a known source_id, updates them in
// place keeping seq, id and collected_at: the statement for rows notices
// (upsertNotices(1) is one notice).
func upsertNotices(rows int) string {
	row := "(" + placeholders(noticeColumnCount) + ")"
	return `INSERT INTO notices (id, source_id, source_url, published_date, published_at,
	collected_at, acn, abn, company_name, notice_type, notice_code, notice_purpose,
	appointment_type, state, status, text, practitioners, practitioner_text, replaces)
VALUES ` + strings.Repeat(row+", ", rows-1) + row + `
ON CONFLICT (source_id) DO UPDATE SET
	source_url = excluded.source_url,
	published_date = excluded.published_date,
	published_at = excluded.published_at,
	acn = excluded.acn,
	abn = excluded.abn,
	company_name = excluded.company_name,
	notice_type = excluded.notice_type,
	notice_code = excluded.notice_code,
	notice_purpose = excluded.notice_purpose,
	appointment_type = excluded.appointment_type,
	state = excluded.state,
	status = excluded.status,
	text = excluded.text,
	practitioners = excluded.practitioners,
	practitioner_text = excluded.practitioner_text,
	replaces = excluded.replaces`
}

// noticeColumnCount is the number of parameters per notice in
// upsertNotices.
const noticeColumnCount = 19

// noticeChunk is how many notices one INSERT statement carries. Rows go in
// several per statement because FTS5 writes its pending index data out at
// the start of every statement that writes it inside a transaction (a
// savepoint): one notice per statement would make a segment per notice and
// spend most of an ingest merging them.
const noticeChunk = 1000

// UpsertNotices stores a batch in one transaction. A new source_id gets the
// next notice_seq (in batch order) and collected_at = the clock's now; a
// known one is updated in place, keeping its seq, id and collected_at. ID
// and PublishedDate are derived when empty (notice.IDFor, the Sydney date of
// PublishedAt).
func (s *Store) UpsertNotices(ctx context.Context, batch []notice.Notice) (store.UpsertResult, error) {
	var res store.UpsertResult
	if len(batch) == 0 {
		return res, nil
	}
	collected := notice.Timestamp(s.now())
	// Arguments first, so a notice that cannot be stored fails the batch
	// before anything is written.
	args := make([]any, 0, len(batch)*noticeColumnCount)
	for i := range batch {
		n := &batch[i]
		if n.SourceID == "" {
			return res, errs.New(errs.InvalidParameter, "notice %d of the batch has no source_id; every notice needs the regulator's identifier", i)
		}
		id := n.ID
		if id == "" {
			id = notice.IDFor(n.SourceID)
		}
		date := n.PublishedDate
		if date == "" {
			t, err := time.Parse(time.RFC3339Nano, n.PublishedAt)
			if err != nil {
				return res, errs.New(errs.InvalidParameter, "notice %s has no published_date and its published_at %q is not an RFC 3339 timestamp", n.SourceID, n.PublishedAt)
			}
			date = notice.PublishedDate(t)
		}
		ps := n.Practitioners
		if ps == nil {
			ps = []notice.Practitioner{}
		}
		pj, err := json.Marshal(ps)
		if err != nil {
			return res, fmt.Errorf("sqlite: encode practitioners of %s: %w", n.SourceID, err)
		}
		args = append(args, id, n.SourceID, nullable(n.SourceURL), date, n.PublishedAt,
			collected, nullable(n.ACN), nullable(n.ABN), n.CompanyName, n.NoticeType, n.NoticeCode,
			n.NoticePurpose, nullable(n.AppointmentType), n.State, n.Status, n.Text, string(pj),
			notice.PractitionerText(ps), nullable(n.Replaces))
	}

	tx, err := s.begin(ctx)
	if err != nil {
		return res, fmt.Errorf("sqlite: begin notice batch: %w", err)
	}
	defer tx.Rollback()
	// Which source_ids are already stored tells inserts from updates; the
	// transaction holds the write lock, so nothing changes in between.
	known, err := knownSourceIDs(ctx, tx, batch)
	if err != nil {
		return res, err
	}
	// Statements run with a context that is never cancelled: go-sqlite3
	// runs each statement under a cancellable context on its own goroutine,
	// which costs more than the insert. ctx is checked between chunks.
	bg := context.Background()
	var seqBefore int64
	if err := tx.QueryRowContext(bg, "SELECT coalesce(max(seq), 0) FROM notices").Scan(&seqBefore); err != nil {
		return res, fmt.Errorf("sqlite: read the latest notice_seq: %w", err)
	}
	var full *sql.Stmt
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	// write stores the batch's notices at positions idx, noticeChunk to a
	// statement.
	write := func(idx []int) error {
		chunkArgs := make([]any, 0, min(noticeChunk, len(idx))*noticeColumnCount)
		chunk := make([]notice.Notice, 0, min(noticeChunk, len(idx)))
		for lo := 0; lo < len(idx); lo += noticeChunk {
			if err := ctx.Err(); err != nil {
				return err
			}
			chunkArgs, chunk = chunkArgs[:0], chunk[:0]
			for _, i := range idx[lo:min(lo+noticeChunk, len(idx))] {
				chunkArgs = append(chunkArgs, args[i*noticeColumnCount:(i+1)*noticeColumnCount]...)
				chunk = append(chunk, batch[i])
			}
			var err error
			if len(chunk) == noticeChunk {
				if full == nil {
					if full, err = tx.PrepareContext(bg, upsertNotices(noticeChunk)); err != nil {
						return fmt.Errorf("sqlite: prepare notice upsert: %w", err)
					}
				}
				_, err = full.ExecContext(bg, chunkArgs...)
			} else {
				_, err = tx.ExecContext(bg, upsertNotices(len(chunk)), chunkArgs...)
			}
			if err != nil {
				// The failed statement changed nothing; find the notice.
				return failedNotice(tx, chunk, chunkArgs, err)
			}
		}
		return nil
	}
	// A source_id twice in the batch makes its second row an update of the
	// first, whose full-text entry must exist by then: the batch is written
	// in runs without repeats, each indexed before the next. In each run
	// the updates go first and the new notices after, in batch order:
	// AUTOINCREMENT spends a seq on every INSERT that turns into an update,
	// so the sequence is set back after the updates, and new notices are
	// numbered consecutively, as in scale mode (arrival.Allocate).
	for _, run := range distinctRuns(batch) {
		var updates, inserts []int
		for i := run[0]; i < run[1]; i++ {
			if _, ok := known[batch[i].SourceID]; ok {
				res.Updated++
				updates = append(updates, i)
			} else {
				known[batch[i].SourceID] = struct{}{}
				res.Inserted++
				inserts = append(inserts, i)
			}
		}
		if len(updates) > 0 {
			var seq sql.NullInt64 // none when no notice was ever inserted by UpsertNotices
			if err := tx.QueryRowContext(bg, "SELECT max(seq) FROM sqlite_sequence WHERE name = 'notices'").Scan(&seq); err != nil {
				return store.UpsertResult{}, fmt.Errorf("sqlite: read the notice_seq sequence: %w", err)
			}
			if err := write(updates); err != nil {
				return store.UpsertResult{}, err
			}
			if seq.Valid {
				if _, err := tx.ExecContext(bg, "UPDATE sqlite_sequence SET seq = ? WHERE name = 'notices'", seq.Int64); err != nil {
					return store.UpsertResult{}, fmt.Errorf("sqlite: restore the notice_seq sequence: %w", err)
				}
			}
		}
		if err := write(inserts); err != nil {
			return store.UpsertResult{}, err
		}
		if seqBefore, err = indexNewNotices(bg, tx, seqBefore); err != nil {
			return store.UpsertResult{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		return store.UpsertResult{}, fmt.Errorf("sqlite: commit notice batch: %w", err)
	}
	return res, nil
}

// distinctRuns splits the batch into consecutive runs [from, to) in which
// no source_id repeats (one run for an ordinary batch).
func distinctRuns(batch []notice.Notice) [][2]int {
	var runs [][2]int
	seen := make(map[string]struct{}, len(batch))
	from := 0
	for i := range batch {
		if _, dup := seen[batch[i].SourceID]; dup {
			runs = append(runs, [2]int{from, i})
			clear(seen)
			from = i
		}
		seen[batch[i].SourceID] = struct{}{}
	}
	return append(runs, [2]int{from, len(batch)})
}

// indexNewNotices adds the notices stored after seq to the full-text index
// in one statement (one FTS5 segment; migration 0007) and returns the new
// latest seq.
func indexNewNotices(ctx context.Context, tx *sql.Tx, seq int64) (int64, error) {
	if _, err := tx.ExecContext(ctx, `INSERT INTO notices_fts (rowid, company_name, notice_type, text, practitioner_text, kind)
		SELECT seq, company_name, notice_type, text, practitioner_text, kind FROM notices WHERE seq > ? ORDER BY seq`, seq); err != nil {
		return 0, fmt.Errorf("sqlite: add new notices to the full-text index: %w", err)
	}
	var latest int64
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM notices").Scan(&latest); err != nil {
		return 0, fmt.Errorf("sqlite: read the latest notice_seq: %w", err)
	}
	return latest, nil
}

// failedNotice stores the chunk's notices one by one (the transaction is
// rolled back afterwards) to name the notice the chunk failed on.
func failedNotice(tx *sql.Tx, chunk []notice.Notice, args []any, chunkErr error) error {
	one := upsertNotices(1)
	for i := range chunk {
		if _, err := tx.ExecContext(context.Background(), one, args[i*noticeColumnCount:(i+1)*noticeColumnCount]...); err != nil {
			return fmt.Errorf("sqlite: store notice %s: %w", chunk[i].SourceID, err)
		}
	}
	return fmt.Errorf("sqlite: store notices %s to %s: %w", chunk[0].SourceID, chunk[len(chunk)-1].SourceID, chunkErr)
}

// knownSourceIDs returns which of the batch's source_ids are stored.
func knownSourceIDs(ctx context.Context, tx *sql.Tx, batch []notice.Notice) (map[string]struct{}, error) {
	known := make(map[string]struct{}, len(batch))
	const chunk = 500
	args := make([]any, 0, chunk)
	for start := 0; start < len(batch); start += chunk {
		args = args[:0]
		for _, n := range batch[start:min(start+chunk, len(batch))] {
			args = append(args, n.SourceID)
		}
		rows, err := tx.QueryContext(ctx, "SELECT source_id FROM notices WHERE source_id IN ("+placeholders(len(args))+")", args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: look up known notices: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			known[id] = struct{}{}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlite: look up known notices: %w", err)
		}
	}
	return known, nil
}
