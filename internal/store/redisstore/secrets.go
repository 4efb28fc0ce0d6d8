package redisstore

import (
	"errors"
	"fmt"

	"noticesd/internal/secretbox"
)

// Webhook secrets are kept sealed (secretbox, AES-256-GCM, the watch id as
// additional data) in the secret field of w:<id>, exactly as the SQLite
// store keeps them: a copy of Redis's AOF or RDB does not let anyone forge
// our signatures. The store seals on SetWebhook and RotateSecret and opens
// at each attempt (Begin).

var errNoSecretKey = errors.New("redisstore: webhook secrets are encrypted at rest and no key is configured: set NOTICES_SECRET_KEY (generate one with `openssl rand -base64 32`)")

// sealSecret seals a webhook secret of watchID for storage.
func (s *Store) sealSecret(watchID, secret string) (string, error) {
	if s.secrets == nil {
		return "", errNoSecretKey
	}
	return s.secrets.Seal(secret, watchID), nil
}

// openSecret returns the plaintext of a stored webhook secret (a value in
// the clear, from before secrets were sealed, is returned as it is).
func (s *Store) openSecret(watchID, stored string) (string, error) {
	if !secretbox.IsSealed(stored) {
		return stored, nil
	}
	if s.secrets == nil {
		return "", errNoSecretKey
	}
	plain, err := s.secrets.Open(stored, watchID)
	if errors.Is(err, secretbox.ErrNoKey) {
		return "", fmt.Errorf("redisstore: the webhook secret of watch %s was sealed under a key that is neither NOTICES_SECRET_KEY nor NOTICES_SECRET_KEY_PREVIOUS; set NOTICES_SECRET_KEY_PREVIOUS to the key it was sealed with", watchID)
	}
	if err != nil {
		return "", fmt.Errorf("redisstore: the webhook secret of watch %s: %w", watchID, err)
	}
	return plain, nil
}
