package redisstore

import (
	"fmt"

	"github.com/noticesd/noticesd/internal/secretbox"
)

// Webhook secrets are kept sealed (secretbox, AES-256-GCM, the watch id as
// additional data) in the secret field of w:<id>, exactly as the SQLite
// store keeps them: a copy of Redis's AOF or RDB does not let anyone forge
// our signatures. The store seals on SetWebhook and RotateSecret and opens
// at each attempt (Begin).

// sealSecret seals a webhook secret of watchID for storage.
func (s *Store) sealSecret(watchID, secret string) (string, error) {
	v, err := secretbox.SealStored(s.secrets, secret, watchID)
	if err != nil {
		return "", fmt.Errorf("redisstore: %w", err)
	}
	return v, nil
}

// openSecret returns the plaintext of a stored webhook secret (a value in
// the clear, from before secrets were sealed, is returned as it is).
func (s *Store) openSecret(watchID, stored string) (string, error) {
	v, err := secretbox.OpenStored(s.secrets, stored, watchID)
	if err != nil {
		return "", fmt.Errorf("redisstore: %w", err)
	}
	return v, nil
}
