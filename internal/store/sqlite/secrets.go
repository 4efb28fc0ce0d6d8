package sqlite

import (
	"context"
	"fmt"

	"github.com/noticesd/noticesd/internal/secretbox"
)

// Webhook secrets are kept sealed (secretbox, AES-256-GCM, the watch id as
// additional data) in watches.webhook_secret: a copy of the database file
// or a backup does not let anyone forge our signatures. The store seals on
// SetWebhook and RotateSecret, opens on Claim, and at Open seals what an
// older release left in the clear and re-seals what the previous key
// sealed (key rotation).

// WithSecretBox sets the box that seals webhook secrets. Without one the
// store opens and serves everything else, but refuses to store a webhook
// secret, and leaves stored ones as they are.
func WithSecretBox(b *secretbox.Box) Option {
	return func(s *Store) { s.secrets = b }
}

// sealSecret seals a webhook secret of watchID for storage.
func (s *Store) sealSecret(watchID, secret string) (string, error) {
	v, err := secretbox.SealStored(s.secrets, secret, watchID)
	if err != nil {
		return "", fmt.Errorf("sqlite: %w", err)
	}
	return v, nil
}

// openSecret returns the plaintext of a stored webhook secret. A value in
// the clear (written by an older release since this store was opened) is
// returned as it is; the next Open seals it.
func (s *Store) openSecret(watchID, stored string) (string, error) {
	v, err := secretbox.OpenStored(s.secrets, stored, watchID)
	if err != nil {
		return "", fmt.Errorf("sqlite: %w", err)
	}
	return v, nil
}

// sealStoredSecrets seals every webhook secret not yet sealed under the
// current key, in one transaction with secure_delete on and a truncating
// checkpoint after, so no plaintext (or retired-key) copy stays in the
// file, its free space or the WAL. Without a box it does nothing.
func (s *Store) sealStoredSecrets(ctx context.Context) error {
	if s.secrets == nil {
		return nil
	}
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: seal webhook secrets: %w", err)
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, "SELECT id, webhook_secret FROM watches WHERE webhook_secret IS NOT NULL")
	if err != nil {
		return fmt.Errorf("sqlite: read webhook secrets: %w", err)
	}
	type reseal struct{ id, sealed string }
	var todo []reseal
	for rows.Next() {
		var id, v string
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return fmt.Errorf("sqlite: read webhook secrets: %w", err)
		}
		if s.secrets.Current(v) {
			continue
		}
		plain, err := s.openSecret(id, v)
		if err != nil {
			rows.Close()
			return err
		}
		todo = append(todo, reseal{id, s.secrets.Seal(plain, id)})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: read webhook secrets: %w", err)
	}
	if len(todo) == 0 {
		return nil
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA secure_delete = ON"); err != nil {
		return fmt.Errorf("sqlite: seal webhook secrets: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA secure_delete = OFF")
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: seal webhook secrets: %w", err)
	}
	defer tx.Rollback()
	for _, r := range todo {
		if _, err := tx.ExecContext(ctx, "UPDATE watches SET webhook_secret = ? WHERE id = ?", r.sealed, r.id); err != nil {
			return fmt.Errorf("sqlite: seal the webhook secret of watch %s: %w", r.id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit sealed webhook secrets: %w", err)
	}
	// Copy the sealed pages over the old ones and empty the WAL, which
	// still holds the earlier page images.
	if _, err := conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("sqlite: checkpoint after sealing webhook secrets: %w", err)
	}
	return nil
}
