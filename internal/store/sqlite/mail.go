package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/noticesd/noticesd/internal/mail"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// The mail queue (migration 0009): table mail_jobs, one row per email
// ever, claimed with a lease like the deliveries, and watches.digest_seq.

var _ store.Mail = (*Store)(nil)

// metaDigestWindow is the meta key of the last digest window run (unix ms).
const metaDigestWindow = "mail_digest_window"

// LastDigestWindow reads the last digest window run.
func (s *Store) LastDigestWindow(ctx context.Context) (time.Time, error) {
	ms, err := metaInt(ctx, s.read, metaDigestWindow)
	if err != nil || ms == 0 {
		return time.Time{}, err
	}
	return time.UnixMilli(ms).UTC(), nil
}

// SetDigestWindow records window as run, never moving it back.
func (s *Store) SetDigestWindow(ctx context.Context, window time.Time) error {
	if _, err := s.write.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = CAST(max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER)) AS TEXT)`,
		metaDigestWindow, strconv.FormatInt(window.UnixMilli(), 10)); err != nil {
		return fmt.Errorf("sqlite: record the digest window: %w", s.busy(err))
	}
	return nil
}

// DigestTargets lists the watches with an alert_email.
func (s *Store) DigestTargets(ctx context.Context) ([]mail.Target, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT id, account_id, name, alert_email, coalesce(digest_seq, created_seq)
		FROM watches WHERE alert_email IS NOT NULL AND alert_email <> '' ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list watches with an alert_email: %w", err)
	}
	defer rows.Close()
	var out []mail.Target
	for rows.Next() {
		var t mail.Target
		if err := rows.Scan(&t.WatchID, &t.AccountID, &t.Name, &t.Email, &t.SentSeq); err != nil {
			return nil, fmt.Errorf("sqlite: list watches with an alert_email: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list watches with an alert_email: %w", err)
	}
	return out, nil
}

// QueueDigest stores a digest job unless its id exists or the watch has a
// digest pending.
func (s *Store) QueueDigest(ctx context.Context, job mail.Job, now time.Time) (bool, error) {
	b, err := json.Marshal(job)
	if err != nil {
		return false, err
	}
	ts := notice.Timestamp(now)
	res, err := s.write.ExecContext(ctx, `INSERT INTO mail_jobs (id, kind, watch_id, payload, created_at, updated_at, next_attempt_at)
		SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM watches WHERE id = ?)
		AND NOT EXISTS (SELECT 1 FROM mail_jobs WHERE watch_id = ? AND kind = ? AND status = 'pending')
		ON CONFLICT (id) DO NOTHING`,
		job.ID, job.Kind, job.WatchID, string(b), ts, ts, ts, job.WatchID, job.WatchID, job.Kind)
	if err != nil {
		return false, fmt.Errorf("sqlite: queue mail %s: %w", job.ID, s.busy(err))
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// queueDeactivated queues the deactivation alert of a watch inside the
// transaction that deactivates it, when the watch has an alert_email.
func queueDeactivated(ctx context.Context, tx *sql.Tx, watchID, reason, lastErr string, now time.Time) error {
	var (
		name  string
		email sql.NullString
		held  int
	)
	err := tx.QueryRowContext(ctx, `SELECT name, alert_email,
		(SELECT count(*) FROM deliveries WHERE watch_id = w.id AND status = 'pending') FROM watches w WHERE id = ?`, watchID).
		Scan(&name, &email, &held)
	if err != nil {
		return fmt.Errorf("sqlite: read watch %s for its deactivation alert: %w", watchID, err)
	}
	if !email.Valid || email.String == "" {
		return nil
	}
	ts := notice.Timestamp(now)
	job := mail.Job{ID: mail.DeactivatedID(watchID, now), Kind: mail.KindDeactivated, WatchID: watchID, To: email.String,
		Deactivated: &mail.Deactivated{WatchName: name, Reason: reason, LastError: lastErr, Held: held, At: ts}}
	b, err := json.Marshal(job)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO mail_jobs (id, kind, watch_id, payload, created_at, updated_at, next_attempt_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`, job.ID, job.Kind, watchID, string(b), ts, ts, ts); err != nil {
		return fmt.Errorf("sqlite: queue the deactivation alert of watch %s: %w", watchID, err)
	}
	return nil
}

// ClaimMail leases due pending jobs, oldest due first.
func (s *Store) ClaimMail(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]mail.Job, error) {
	ts, until := notice.Timestamp(now), notice.Timestamp(now.Add(lease))
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: begin mail claim: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT id, payload, attempts FROM mail_jobs
		WHERE status = 'pending' AND coalesce(lease_until, next_attempt_at) <= ? ORDER BY coalesce(lease_until, next_attempt_at), id LIMIT ?`, ts, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find due mail: %w", err)
	}
	var jobs []mail.Job
	for rows.Next() {
		var (
			id, payload string
			attempts    int
		)
		if err := rows.Scan(&id, &payload, &attempts); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: find due mail: %w", err)
		}
		var j mail.Job
		if err := json.Unmarshal([]byte(payload), &j); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: mail job %s has unreadable payload: %w", id, err)
		}
		j.Attempt, j.Token = attempts+1, newClaimToken()
		jobs = append(jobs, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: find due mail: %w", err)
	}
	for _, j := range jobs {
		if _, err := tx.ExecContext(ctx, `UPDATE mail_jobs SET attempts = ?, claim_token = ?, lease_until = ?, updated_at = ? WHERE id = ?`,
			j.Attempt, j.Token, until, ts, j.ID); err != nil {
			return nil, fmt.Errorf("sqlite: lease mail %s: %w", j.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlite: commit mail claim: %w", err)
	}
	return jobs, nil
}

// CompleteMail records the outcome of a claimed attempt.
func (s *Store) CompleteMail(ctx context.Context, job mail.Job, out mail.Outcome, now time.Time) error {
	ts := notice.Timestamp(now)
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: begin completing mail %s: %w", job.ID, err)
	}
	defer tx.Rollback()
	var (
		status string
		token  sql.NullString
	)
	err = tx.QueryRowContext(ctx, "SELECT status, claim_token FROM mail_jobs WHERE id = ?", job.ID).Scan(&status, &token)
	if err == sql.ErrNoRows {
		return nil // the watch was deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("sqlite: read mail %s: %w", job.ID, err)
	}
	current := token.Valid && token.String == job.Token
	switch {
	case status != mail.Pending:
		return nil
	case out.Err == "":
		if _, err := tx.ExecContext(ctx, `UPDATE mail_jobs SET status = 'sent', sent_at = ?, updated_at = ?, last_error = NULL,
			next_attempt_at = NULL, lease_until = NULL, claim_token = NULL WHERE id = ?`, ts, ts, job.ID); err != nil {
			return fmt.Errorf("sqlite: record mail %s sent: %w", job.ID, err)
		}
		if job.Kind == mail.KindDigest && job.Digest != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE watches SET digest_seq = max(coalesce(digest_seq, 0), ?) WHERE id = ?`,
				job.Digest.ThroughSeq, job.WatchID); err != nil {
				return fmt.Errorf("sqlite: record the digest of watch %s sent: %w", job.WatchID, err)
			}
		}
	case !current:
		return nil // a stale attempt's failure: the newer claim owns the schedule
	default:
		if wait, ok := mail.RetryWait(job.Attempt, out.RetryUnit); ok {
			_, err = tx.ExecContext(ctx, `UPDATE mail_jobs SET last_error = ?, updated_at = ?, next_attempt_at = ?,
				lease_until = NULL, claim_token = NULL WHERE id = ?`, out.Err, ts, notice.Timestamp(now.Add(wait)), job.ID)
		} else {
			_, err = tx.ExecContext(ctx, `UPDATE mail_jobs SET status = 'dead', last_error = ?, updated_at = ?, next_attempt_at = NULL,
				lease_until = NULL, claim_token = NULL WHERE id = ?`, out.Err, ts, job.ID)
		}
		if err != nil {
			return fmt.Errorf("sqlite: record the failure of mail %s: %w", job.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit the outcome of mail %s: %w", job.ID, err)
	}
	return nil
}

// PruneMail deletes finished jobs last changed before before.
func (s *Store) PruneMail(ctx context.Context, before time.Time) error {
	if _, err := s.write.ExecContext(ctx, "DELETE FROM mail_jobs WHERE status <> 'pending' AND updated_at < ?", notice.Timestamp(before)); err != nil {
		return fmt.Errorf("sqlite: prune the mail queue: %w", s.busy(err))
	}
	return nil
}

// MailStatus counts pending and dead jobs and reads the latest error.
func (s *Store) MailStatus(ctx context.Context) (mail.QueueStatus, error) {
	var (
		st      mail.QueueStatus
		lastErr sql.NullString
	)
	err := s.read.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM mail_jobs WHERE status = 'pending'),
		(SELECT count(*) FROM mail_jobs WHERE status = 'dead'),
		(SELECT last_error FROM mail_jobs WHERE status <> 'sent' AND last_error IS NOT NULL ORDER BY updated_at DESC LIMIT 1)`).
		Scan(&st.Pending, &st.Dead, &lastErr)
	if err != nil {
		return st, fmt.Errorf("sqlite: read the mail queue: %w", err)
	}
	st.LastError = lastErr.String
	return st, nil
}
