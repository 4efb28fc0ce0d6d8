package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// WebhookTarget returns the URL and current secret of the account's
// watch's webhook: store.NoWebhook when it has none.
func (s *Store) WebhookTarget(ctx context.Context, accountID, watchID string) (url, secret string, err error) {
	var u, sealed sql.NullString
	err = s.read.QueryRowContext(ctx, "SELECT webhook_url, webhook_secret FROM watches WHERE id = ? AND account_id = ?",
		watchID, accountID).Scan(&u, &sealed)
	if err == sql.ErrNoRows {
		return "", "", noWatch(watchID)
	}
	if err != nil {
		return "", "", fmt.Errorf("sqlite: read the webhook of watch %s: %w", watchID, err)
	}
	if !u.Valid || !sealed.Valid || sealed.String == "" {
		return "", "", store.NoWebhook(watchID)
	}
	if secret, err = s.openSecret(watchID, sealed.String); err != nil {
		return "", "", err
	}
	return u.String, secret, nil
}

// RetryDelivery makes a dead delivery pending again in one transaction:
// attempts 0, due at now when the watch is active (held otherwise, like
// any pending delivery of an inactive watch), delivered_at and any lease
// cleared; last_error keeps the failure that made it dead until the next
// attempt's outcome replaces it. The worker claims it like a new delivery.
func (s *Store) RetryDelivery(ctx context.Context, accountID, watchID, deliveryID string, now time.Time) (delivery.Record, error) {
	ts := notice.Timestamp(now)
	tx, err := s.begin(ctx)
	if err != nil {
		return delivery.Record{}, fmt.Errorf("sqlite: begin a delivery retry: %w", err)
	}
	defer tx.Rollback()
	w, err := loadWebhookWatch(ctx, tx, accountID, watchID)
	if err != nil {
		return delivery.Record{}, err
	}
	var status string
	err = tx.QueryRowContext(ctx, "SELECT status FROM deliveries WHERE id = ? AND watch_id = ?", deliveryID, watchID).Scan(&status)
	if err == sql.ErrNoRows {
		return delivery.Record{}, store.NoDelivery(watchID, deliveryID)
	}
	if err != nil {
		return delivery.Record{}, fmt.Errorf("sqlite: read delivery %s: %w", deliveryID, err)
	}
	if status != delivery.Dead {
		return delivery.Record{}, store.DeliveryNotDead(deliveryID, status)
	}
	if !w.hasHook {
		return delivery.Record{}, store.NoWebhook(watchID)
	}
	var next any
	if w.active {
		next = ts
	}
	if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET status = 'pending', attempts = 0, updated_at = ?,
		next_attempt_at = ?, delivered_at = NULL, lease_until = NULL, claim_token = NULL WHERE id = ? AND status = 'dead'`,
		ts, next, deliveryID); err != nil {
		return delivery.Record{}, fmt.Errorf("sqlite: retry delivery %s: %w", deliveryID, err)
	}
	recs, err := queryDeliveries(ctx, tx, "id = ?", deliveryID, 1)
	if err != nil {
		return delivery.Record{}, err
	}
	if err := tx.Commit(); err != nil {
		return delivery.Record{}, fmt.Errorf("sqlite: commit the retry of delivery %s: %w", deliveryID, err)
	}
	if len(recs) != 1 {
		return delivery.Record{}, store.NoDelivery(watchID, deliveryID)
	}
	return recs[0], nil
}
