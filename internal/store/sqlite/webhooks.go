package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/matcher"
)

var _ store.Webhooks = (*Store)(nil)

// webhookWatch is what the webhook verbs read of a watch.
type webhookWatch struct {
	createdSeq  int64
	active      bool
	filters     string
	identifiers string
	hasHook     bool
}

// loadWebhookWatch reads the account's watch inside tx, or errs.NotFound.
func loadWebhookWatch(ctx context.Context, tx *sql.Tx, accountID, watchID string) (webhookWatch, error) {
	var w webhookWatch
	err := tx.QueryRowContext(ctx, `SELECT created_seq, active, filters, identifiers, webhook_url IS NOT NULL
		FROM watches WHERE id = ? AND account_id = ?`, watchID, accountID).
		Scan(&w.createdSeq, &w.active, &w.filters, &w.identifiers, &w.hasHook)
	if err == sql.ErrNoRows {
		return w, noWatch(watchID)
	}
	if err != nil {
		return w, fmt.Errorf("sqlite: read watch %s: %w", watchID, err)
	}
	return w, nil
}

func noWatch(id string) error {
	return errs.New(errs.NotFound, "no watch %s in this account; list your watches with GET /v1/watches", errs.Quote(id))
}

func noWebhook(id string) error {
	return errs.New(errs.NotFound, "watch %s has no webhook; register one with POST /v1/watches/%s/webhook", errs.Quote(id), id)
}

// SetWebhook registers or replaces the watch's webhook and, in the same
// transaction, queues the matches that arrived after the watch was created
// and were published within delivery.Window of now (deliveries that exist
// are kept; a pair is never queued twice). A new registration starts the
// consecutive-failure count afresh; it does not reactivate the watch.
func (s *Store) SetWebhook(ctx context.Context, accountID, watchID, url, secret string, now time.Time) (watch.Watch, error) {
	ts := notice.Timestamp(now)
	tx, err := s.begin(ctx)
	if err != nil {
		return watch.Watch{}, fmt.Errorf("sqlite: begin webhook registration: %w", err)
	}
	defer tx.Rollback()
	w, err := loadWebhookWatch(ctx, tx, accountID, watchID)
	if err != nil {
		return watch.Watch{}, err
	}
	sealed, err := s.sealSecret(watchID, secret)
	if err != nil {
		return watch.Watch{}, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE watches SET webhook_url = ?, webhook_secret = ?, consecutive_failures = 0,
		updated_at = ? WHERE id = ?`, url, sealed, ts, watchID); err != nil {
		return watch.Watch{}, fmt.Errorf("sqlite: register the webhook of watch %s: %w", watchID, err)
	}
	if err := backfill(ctx, tx, watchID, w, now); err != nil {
		return watch.Watch{}, err
	}
	if err := tx.Commit(); err != nil {
		return watch.Watch{}, fmt.Errorf("sqlite: commit webhook registration: %w", err)
	}
	return s.Watch(ctx, accountID, watchID)
}

// backfill queues the watch's eligible matches among the notices stored
// now: arrived after the watch was created and published within
// delivery.Window of now. Matching is the matcher's, as for arrivals.
func backfill(ctx context.Context, tx *sql.Tx, watchID string, w webhookWatch, now time.Time) error {
	e := matcher.Entry{WatchID: watchID, Active: w.active}
	var err error
	if e.Filter, err = noticeFilter(watchID, w.filters); err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(w.identifiers), &e.Identifiers); err != nil {
		return fmt.Errorf("sqlite: watch %s has unreadable identifiers JSON: %w", watchID, err)
	}
	var abns []string
	for _, id := range e.Identifiers {
		if len(id) == 11 {
			abns = append(abns, id)
		}
	}
	acnOf, err := resolveABNs(ctx, tx, abns)
	if err != nil {
		return err
	}
	e.Identifiers = withResolvedACNs(e.Identifiers, acnOf)
	var ix matcher.Index
	if err := ix.Add(e); err != nil {
		return err
	}

	// Every notice published within the window has a Sydney date on or
	// after that of the window's start; delivery.Eligible then decides.
	rows, err := tx.QueryContext(ctx, "SELECT "+noticeColumns+` FROM notices n
		WHERE n.seq > ? AND n.published_date >= ? ORDER BY n.seq`, w.createdSeq, notice.PublishedDate(now.Add(-delivery.Window)))
	if err != nil {
		return fmt.Errorf("sqlite: find recent matches of watch %s: %w", watchID, err)
	}
	ns, err := scanNotices(rows)
	if err != nil {
		return fmt.Errorf("sqlite: find recent matches of watch %s: %w", watchID, err)
	}
	var matched []notice.Notice
	var nabns []string
	for i := range ns {
		if pub, ok := publishedTime(&ns[i]); ok && delivery.Eligible(ns[i].Seq, w.createdSeq, pub, now) {
			matched = append(matched, ns[i])
			if ns[i].ABN != nil {
				if id, ok := ident.Normalise(*ns[i].ABN); ok && id.Kind == ident.ABN {
					nabns = append(nabns, id.Value)
				}
			}
		}
	}
	if len(matched) == 0 {
		return nil
	}
	nacn, err := resolveABNs(ctx, tx, nabns)
	if err != nil {
		return err
	}
	resolve := func(abn string) []string { return nacn[abn] }
	stmt, err := tx.PrepareContext(ctx, insertDelivery)
	if err != nil {
		return fmt.Errorf("sqlite: prepare delivery insert: %w", err)
	}
	defer stmt.Close()
	ts := notice.Timestamp(now)
	for i := range matched {
		if len(ix.Match(&matched[i], resolve)) == 0 {
			continue
		}
		if _, err := insertPending(ctx, stmt, watchID, &matched[i], w.active, ts); err != nil {
			return err
		}
	}
	return nil
}

// RotateSecret replaces the secret of the watch's webhook. Every attempt
// reads the secret again just before it is signed (Signing), so every later
// attempt, scheduled retries and claimed ones included, is signed with the
// new one.
func (s *Store) RotateSecret(ctx context.Context, accountID, watchID, secret string, now time.Time) (watch.Watch, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return watch.Watch{}, fmt.Errorf("sqlite: begin secret rotation: %w", err)
	}
	defer tx.Rollback()
	w, err := loadWebhookWatch(ctx, tx, accountID, watchID)
	if err != nil {
		return watch.Watch{}, err
	}
	if !w.hasHook {
		return watch.Watch{}, noWebhook(watchID)
	}
	sealed, err := s.sealSecret(watchID, secret)
	if err != nil {
		return watch.Watch{}, err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE watches SET webhook_secret = ?, updated_at = ? WHERE id = ?",
		sealed, notice.Timestamp(now), watchID); err != nil {
		return watch.Watch{}, fmt.Errorf("sqlite: rotate the secret of watch %s: %w", watchID, err)
	}
	if err := tx.Commit(); err != nil {
		return watch.Watch{}, fmt.Errorf("sqlite: commit secret rotation: %w", err)
	}
	return s.Watch(ctx, accountID, watchID)
}

// Signing returns the current webhook URL and secret of job's watch (see
// store.Ledger), or errs.NotFound when the watch or its webhook is gone.
func (s *Store) Signing(ctx context.Context, job store.Job) (url, secret string, err error) {
	var u, sealed sql.NullString
	err = s.read.QueryRowContext(ctx, "SELECT webhook_url, webhook_secret FROM watches WHERE id = ?", job.WatchID).Scan(&u, &sealed)
	if err == sql.ErrNoRows || err == nil && (!u.Valid || !sealed.Valid || sealed.String == "") {
		return "", "", noWebhook(job.WatchID)
	}
	if err != nil {
		return "", "", fmt.Errorf("sqlite: read the webhook of watch %s: %w", job.WatchID, err)
	}
	if secret, err = s.openSecret(job.WatchID, sealed.String); err != nil {
		return "", "", err
	}
	return u.String, secret, nil
}

// DeleteWebhook removes the watch's webhook; its pending deliveries (held
// and in flight included) become dead with last_error
// delivery.WebhookRemoved. The watch stays, pollable through its matches.
func (s *Store) DeleteWebhook(ctx context.Context, accountID, watchID string, now time.Time) error {
	ts := notice.Timestamp(now)
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: begin webhook removal: %w", err)
	}
	defer tx.Rollback()
	w, err := loadWebhookWatch(ctx, tx, accountID, watchID)
	if err != nil {
		return err
	}
	if !w.hasHook {
		return noWebhook(watchID)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE watches SET webhook_url = NULL, webhook_secret = NULL, consecutive_failures = 0,
		updated_at = ? WHERE id = ?`, ts, watchID); err != nil {
		return fmt.Errorf("sqlite: remove the webhook of watch %s: %w", watchID, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET status = 'dead', last_error = ?, updated_at = ?,
		next_attempt_at = NULL, lease_until = NULL WHERE watch_id = ? AND status = 'pending'`,
		delivery.WebhookRemoved, ts, watchID); err != nil {
		return fmt.Errorf("sqlite: cancel the pending deliveries of watch %s: %w", watchID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit webhook removal: %w", err)
	}
	return nil
}

// Deliveries lists the watch's most recent deliveries, newest first (by
// created_at, then notice_seq). next_attempt_at is null while an attempt
// is in flight, held or finished.
func (s *Store) Deliveries(ctx context.Context, accountID, watchID string, limit int) ([]delivery.Record, error) {
	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list deliveries of watch %s: %w", watchID, err)
	}
	defer tx.Rollback()
	var one int
	err = tx.QueryRowContext(ctx, "SELECT 1 FROM watches WHERE id = ? AND account_id = ?", watchID, accountID).Scan(&one)
	if err == sql.ErrNoRows {
		return nil, noWatch(watchID)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read watch %s: %w", watchID, err)
	}
	return queryDeliveries(ctx, tx, "watch_id = ?", watchID, limit)
}

// queryDeliveries reads up to limit delivery records where cond (with
// its one argument arg) holds, newest first (by created_at, then
// notice_seq). next_attempt_at is null while an attempt is in flight.
func queryDeliveries(ctx context.Context, tx *sql.Tx, cond string, arg any, limit int) ([]delivery.Record, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, notice_id, notice_seq, status, attempts, last_error, created_at,
		updated_at, CASE WHEN lease_until IS NULL THEN next_attempt_at END, delivered_at
		FROM deliveries WHERE `+cond+` ORDER BY created_at DESC, notice_seq DESC LIMIT ?`, arg, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list deliveries (%v): %w", arg, err)
	}
	defer rows.Close()
	out := []delivery.Record{}
	for rows.Next() {
		var (
			r                       delivery.Record
			lastErr, next, deliverd sql.NullString
		)
		if err := rows.Scan(&r.ID, &r.NoticeID, &r.NoticeSeq, &r.Status, &r.Attempts, &lastErr, &r.CreatedAt,
			&r.UpdatedAt, &next, &deliverd); err != nil {
			return nil, fmt.Errorf("sqlite: list deliveries (%v): %w", arg, err)
		}
		r.LastError, r.NextAttemptAt, r.DeliveredAt = ptr(lastErr), ptr(next), ptr(deliverd)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list deliveries (%v): %w", arg, err)
	}
	return out, nil
}
