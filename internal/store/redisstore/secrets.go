package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/secretbox"
)

// Webhook secrets are kept sealed (secretbox, AES-256-GCM, the watch id as
// additional data) in the secret field of w:<id>, as the SQLite store keeps
// them: a copy of Redis's AOF or RDB does not let anyone forge our
// signatures. SetWebhook and RotateSecret seal, each attempt (Begin) opens.

// sealSecret seals a webhook secret of watchID for storage.
func (s *Store) sealSecret(watchID, secret string) (string, error) {
	return secretErr(secretbox.SealStored(s.secrets, secret, watchID))
}

// openSecret returns the plaintext of a stored webhook secret (a value in
// the clear, from before secrets were sealed, is returned as it is).
func (s *Store) openSecret(watchID, stored string) (string, error) {
	return secretErr(secretbox.OpenStored(s.secrets, stored, watchID))
}

func secretErr(v string, err error) (string, error) {
	if err != nil {
		return "", fmt.Errorf("redisstore: %w", err)
	}
	return v, nil
}

// resealScript replaces a watch's stored secret if it is still the value
// that was read (a rotation or a new registration meanwhile wins).
// KEYS: w:<id>. ARGV: old stored value, new stored value.
var resealScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'secret') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'secret', ARGV[2])
return 1
`)

// SealSecrets seals every stored webhook secret not yet sealed under the
// current key (NOTICES_SECRET_KEY), reading it with the previous one
// (NOTICES_SECRET_KEY_PREVIOUS), as the SQLite store does when it opens:
// after one run the previous key can be dropped. It returns how many it
// sealed anew; a secret that neither key opens stops it with an error
// naming the watch. Without a key it does nothing.
func (s *Store) SealSecrets(ctx context.Context) (int, error) {
	if s.secrets == nil {
		return 0, nil
	}
	ws, err := s.allWatches(ctx)
	if err != nil {
		return 0, err
	}
	sealed := 0
	for part := range slices.Chunk(ws, 1000) {
		vals := make([]*redis.StringCmd, len(part))
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, w := range part {
				vals[i] = p.HGet(ctx, s.akey(w.acct, watchKey, w.id), "secret")
			}
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return sealed, s.fail("read webhook secrets", err)
		}
		for i, w := range part {
			old := vals[i].Val()
			if old == "" || s.secrets.Current(old) {
				continue // no webhook, or sealed under the current key
			}
			plain, err := s.openSecret(w.id, old)
			if err != nil {
				return sealed, err
			}
			ok, err := resealScript.Run(ctx, s.rdb, []string{s.akey(w.acct, watchKey, w.id)}, old, s.secrets.Seal(plain, w.id)).Int()
			if err != nil {
				return sealed, s.fail("seal a webhook secret", err)
			}
			sealed += ok
		}
	}
	return sealed, nil
}
