package notice

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// IDFor returns the stable public id of the notice with the given source
// identifier: "ntc_" and 16 base32 characters of its SHA-256. Every backend
// and every re-ingest derive the same id.
func IDFor(sourceID string) string {
	sum := sha256.Sum256([]byte(sourceID))
	return "ntc_" + strings.ToLower(idEncoding.EncodeToString(sum[:10]))
}
