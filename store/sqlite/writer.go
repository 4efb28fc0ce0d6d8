package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"noticesd/errs"
	"noticesd/notice"
	"noticesd/store"
)

// upsertNotice inserts a notice or, for a known source_id, updates it in
// place keeping seq, id and collected_at.
const upsertNotice = `INSERT INTO notices (id, source_id, source_url, published_date, published_at,
	collected_at, acn, abn, company_name, notice_type, notice_code, notice_purpose,
	appointment_type, state, status, text, practitioners, practitioner_text, replaces)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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

// UpsertNotices stores a batch in one transaction. A new source_id gets the
// next notice_seq and collected_at = the clock's now; a known one is updated
// in place, keeping its seq, id and collected_at. ID and PublishedDate are
// derived when empty (notice.IDFor, the Sydney date of PublishedAt).
func (s *Store) UpsertNotices(ctx context.Context, batch []notice.Notice) (store.UpsertResult, error) {
	var res store.UpsertResult
	if len(batch) == 0 {
		return res, nil
	}
	collected := notice.Timestamp(s.now())
	tx, err := s.write.BeginTx(ctx, nil)
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
	stmt, err := tx.PrepareContext(ctx, upsertNotice)
	if err != nil {
		return res, fmt.Errorf("sqlite: prepare notice upsert: %w", err)
	}
	defer stmt.Close()
	// Statements run with a context that is never cancelled: go-sqlite3
	// runs each statement under a cancellable context on its own goroutine,
	// which costs more than the insert. ctx is checked between rows instead.
	bg := context.Background()
	for i := range batch {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return store.UpsertResult{}, err
			}
		}
		n := &batch[i]
		if n.SourceID == "" {
			return store.UpsertResult{}, errs.New(errs.InvalidParameter, "notice %d of the batch has no source_id; every notice needs the regulator's identifier", i)
		}
		id := n.ID
		if id == "" {
			id = notice.IDFor(n.SourceID)
		}
		date := n.PublishedDate
		if date == "" {
			t, err := time.Parse(time.RFC3339Nano, n.PublishedAt)
			if err != nil {
				return store.UpsertResult{}, errs.New(errs.InvalidParameter, "notice %s has no published_date and its published_at %q is not an RFC 3339 timestamp", n.SourceID, n.PublishedAt)
			}
			date = notice.PublishedDate(t)
		}
		ps := n.Practitioners
		if ps == nil {
			ps = []notice.Practitioner{}
		}
		pj, err := json.Marshal(ps)
		if err != nil {
			return store.UpsertResult{}, fmt.Errorf("sqlite: encode practitioners of %s: %w", n.SourceID, err)
		}
		_, err = stmt.ExecContext(bg, id, n.SourceID, nullable(n.SourceURL), date, n.PublishedAt,
			collected, nullable(n.ACN), nullable(n.ABN), n.CompanyName, n.NoticeType, n.NoticeCode,
			n.NoticePurpose, nullable(n.AppointmentType), n.State, n.Status, n.Text, string(pj),
			practitionerText(ps), nullable(n.Replaces))
		if err != nil {
			return store.UpsertResult{}, fmt.Errorf("sqlite: store notice %s: %w", n.SourceID, err)
		}
		if _, ok := known[n.SourceID]; ok {
			res.Updated++
		} else {
			known[n.SourceID] = struct{}{}
			res.Inserted++
		}
	}
	if err := tx.Commit(); err != nil {
		return store.UpsertResult{}, fmt.Errorf("sqlite: commit notice batch: %w", err)
	}
	return res, nil
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
