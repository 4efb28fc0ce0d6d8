package secretbox

import (
	"errors"
	"fmt"
)

// ErrNoBox is returned by SealStored and OpenStored when no key is
// configured.
var ErrNoBox = errors.New("webhook secrets are encrypted at rest and no key is configured: set NOTICES_SECRET_KEY (generate one with `openssl rand -base64 32`)")

// SealStored seals a webhook secret of the watch for storage: what both
// stores (SQLite and Redis) keep. b may be nil: ErrNoBox.
func SealStored(b *Box, secret, watchID string) (string, error) {
	if b == nil {
		return "", ErrNoBox
	}
	return b.Seal(secret, watchID), nil
}

// OpenStored returns the plaintext of a stored webhook secret of the
// watch. A value in the clear (written by a release from before secrets
// were sealed) is returned as it is. b may be nil: ErrNoBox for a sealed
// value.
func OpenStored(b *Box, stored, watchID string) (string, error) {
	if !IsSealed(stored) {
		return stored, nil
	}
	if b == nil {
		return "", ErrNoBox
	}
	plain, err := b.Open(stored, watchID)
	if errors.Is(err, ErrNoKey) {
		if sealedUnder(stored, DevelopmentKey) {
			// Data made by `make run` / `noticesd demo`, now served
			// with a real key: say which key it was.
			return "", fmt.Errorf("the webhook secret of watch %s was sealed under the public development key of `noticesd demo` (make run); to keep this data under your own key, start once with NOTICES_SECRET_KEY_PREVIOUS=%s beside your NOTICES_SECRET_KEY (the secrets are then sealed again under yours), or start from an empty data directory", watchID, DevelopmentKey)
		}
		return "", fmt.Errorf("the webhook secret of watch %s was sealed under a key that is neither NOTICES_SECRET_KEY nor NOTICES_SECRET_KEY_PREVIOUS; set NOTICES_SECRET_KEY_PREVIOUS to the key it was sealed with", watchID)
	}
	if err != nil {
		return "", fmt.Errorf("the webhook secret of watch %s: %w", watchID, err)
	}
	return plain, nil
}

// DevelopmentKey is the fixed, public key `noticesd demo` (what `make run`
// runs) seals webhook secrets under when NOTICES_SECRET_KEY is unset. It
// protects nothing: anyone can read it here.
const DevelopmentKey = "bm90aWNlc2QgZGV2ZWxvcG1lbnQga2V5LCBwdWJsaWM="

// sealedUnder reports whether sealed was made under the base64 key k.
func sealedUnder(sealed, k string) bool {
	raw, ok := decode(sealed)
	if !ok {
		return false
	}
	kb, err := ParseKey(k)
	if err != nil {
		return false
	}
	kk, err := newKey(kb)
	return err == nil && [idSize]byte(raw[:idSize]) == kk.id
}
