// Package secretbox encrypts small secrets at rest (webhook signing
// secrets) with AES-256-GCM from the standard library, under a current key
// and optionally a previous one kept for rotation. Both backends store what
// Seal returns and call Open when they need the secret again.
//
// A sealed value is text: "sb1:" followed by the unpadded base64url of a
// 4-byte key id (the first bytes of the key's SHA-256), a 12-byte random
// nonce and the GCM ciphertext with its tag. The caller's context string
// (a watch id, say) is authenticated as additional data, so a sealed value
// copied to another row does not open.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a key in bytes (AES-256).
const KeySize = 32

// Prefix starts every sealed value.
const Prefix = "sb1:"

const (
	idSize    = 4
	nonceSize = 12
)

// ErrNoKey is returned (wrapped) by Open when neither key sealed the value.
var ErrNoKey = errors.New("secretbox: sealed under a key that is neither the current nor the previous one")

// ParseKey decodes a key given as standard base64 (padded or not) of
// exactly KeySize bytes, the form `openssl rand -base64 32` prints.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	k, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		k, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil {
		return nil, fmt.Errorf("secretbox: the key is not base64: %w (generate one with `openssl rand -base64 32`)", err)
	}
	if len(k) != KeySize {
		return nil, fmt.Errorf("secretbox: the key is %d bytes, want %d (generate one with `openssl rand -base64 32`)", len(k), KeySize)
	}
	return k, nil
}

type key struct {
	id   [idSize]byte
	aead cipher.AEAD
}

func newKey(k []byte) (key, error) {
	if len(k) != KeySize {
		return key{}, fmt.Errorf("secretbox: a key is %d bytes, want %d", len(k), KeySize)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return key{}, fmt.Errorf("secretbox: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return key{}, fmt.Errorf("secretbox: %w", err)
	}
	sum := sha256.Sum256(k)
	var out key
	copy(out.id[:], sum[:idSize])
	out.aead = aead
	return out, nil
}

// Box seals with its current key and opens with the current or the
// previous key. It is safe for concurrent use.
type Box struct {
	current  key
	previous *key
}

// New returns a Box sealing under current; previous, when non-nil, is a
// retired key still accepted by Open (rotation: set the new key as current
// and the old one as previous, and re-seal what Current reports false for).
func New(current, previous []byte) (*Box, error) {
	c, err := newKey(current)
	if err != nil {
		return nil, err
	}
	b := &Box{current: c}
	if previous != nil {
		p, err := newKey(previous)
		if err != nil {
			return nil, err
		}
		b.previous = &p
	}
	return b, nil
}

// Seal encrypts plaintext bound to context (authenticated, not stored).
func (b *Box) Seal(plaintext, context string) string {
	buf := make([]byte, idSize+nonceSize, idSize+nonceSize+len(plaintext)+b.current.aead.Overhead())
	copy(buf, b.current.id[:])
	// crypto/rand.Read never returns an error; it aborts the program if the
	// system's random source fails.
	_, _ = rand.Read(buf[idSize:])
	buf = b.current.aead.Seal(buf, buf[idSize:idSize+nonceSize], []byte(plaintext), []byte(context))
	return Prefix + base64.RawURLEncoding.EncodeToString(buf)
}

// IsSealed reports whether v has the form Seal produces (it may still fail
// to open).
func IsSealed(v string) bool { return strings.HasPrefix(v, Prefix) }

// Current reports whether v is sealed under the current key.
func (b *Box) Current(v string) bool {
	raw, ok := decode(v)
	return ok && [idSize]byte(raw[:idSize]) == b.current.id
}

// Open decrypts a sealed value made with the same context. A value sealed
// under another key gives an error wrapping ErrNoKey; a damaged or
// misplaced one (wrong context) an error saying so.
func (b *Box) Open(sealed, context string) (string, error) {
	raw, ok := decode(sealed)
	if !ok {
		return "", errors.New("secretbox: not a sealed value")
	}
	id := [idSize]byte(raw[:idSize])
	var k *key
	switch {
	case id == b.current.id:
		k = &b.current
	case b.previous != nil && id == b.previous.id:
		k = b.previous
	default:
		return "", ErrNoKey
	}
	pt, err := k.aead.Open(nil, raw[idSize:idSize+nonceSize], raw[idSize+nonceSize:], []byte(context))
	if err != nil {
		return "", errors.New("secretbox: the sealed value does not authenticate: it was altered or belongs to another record")
	}
	return string(pt), nil
}

func decode(v string) ([]byte, bool) {
	if !IsSealed(v) {
		return nil, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(v[len(Prefix):])
	if err != nil || len(raw) < idSize+nonceSize+16 {
		return nil, false
	}
	return raw, true
}
