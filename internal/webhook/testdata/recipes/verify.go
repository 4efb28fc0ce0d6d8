// verify SECRET BODY_FILE SIGNATURE: exit 0 when SIGNATURE is the noticesd
// signature of the file's bytes, 1 otherwise.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
)

// validSignature checks an X-Notices-Signature header against the raw body.
func validSignature(secret string, rawBody []byte, header string) bool {
	mac := hmac.New(sha256.New, []byte(secret)) // the whole secret, whsec_ included
	mac.Write(rawBody)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	return len(header) == len(want) && hmac.Equal([]byte(header), []byte(want))
}

func main() {
	body, err := os.ReadFile(os.Args[2])
	if err != nil || !validSignature(os.Args[1], body, os.Args[3]) {
		os.Exit(1)
	}
}
