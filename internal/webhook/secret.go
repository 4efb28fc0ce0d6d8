// Package webhook is the sending layer of signed webhook delivery: secrets,
// signatures, delivery ids, URL validation, the outbound address policy, and
// a Sender that performs one delivery attempt and reports its outcome in the
// last_error forms of API.md. The durable queue and retry schedule live
// elsewhere and call Sender.Send once per attempt.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// SecretPrefix starts every webhook secret.
const SecretPrefix = "whsec_"

// SignaturePrefix starts every X-Notices-Signature value.
const SignaturePrefix = "sha256="

// DeliveryIDPrefix starts every delivery id.
const DeliveryIDPrefix = "dlv_"

// NewSecret returns a fresh webhook secret: "whsec_" followed by 32 bytes
// from crypto/rand in unpadded base64url (43 characters of A-Z a-z 0-9 - _).
// The whole string, prefix included, is the HMAC key (see Sign).
func NewSecret() string {
	var b [32]byte
	// crypto/rand.Read never returns an error; it aborts the program if the
	// system's random source fails.
	_, _ = rand.Read(b[:])
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// Sign returns the X-Notices-Signature value for body: "sha256=" followed by
// the lowercase hex HMAC-SHA256 of the exact body bytes. The HMAC key is the
// complete secret string as UTF-8 bytes, "whsec_" prefix included; it is not
// base64-decoded. A receiver verifies with, for example in Python,
// hmac.new(secret.encode(), raw_body, hashlib.sha256).hexdigest().
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return SignaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether header is the signature Sign(secret, body) would
// produce. Lengths are compared first and the bytes then in constant time, as
// SPEC.md asks of receivers. Only the exact lowercase form is accepted.
func Verify(secret string, body []byte, header string) bool {
	want := Sign(secret, body)
	if len(header) != len(want) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(header), []byte(want)) == 1
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// DeliveryID returns the stable id of the delivery of one notice to one
// watch: "dlv_" followed by 26 lowercase base32 characters of the SHA-256 of
// the length-prefixed pair. It depends only on the two ids, so it is the same
// on every retry and after a reactivation, and distinct pairs never share it
// by concatenation ("ab"+"c" and "a"+"bc" differ).
func DeliveryID(watchID, noticeID string) string {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{watchID, noticeID} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return DeliveryIDPrefix + strings.ToLower(idEncoding.EncodeToString(h.Sum(nil)[:16]))
}
