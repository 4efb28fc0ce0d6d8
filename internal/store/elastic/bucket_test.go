package elastic

import (
	"encoding/json"
	"testing"
)

// TestBucketKey: a bucket key read without a JSON decode (a string with no
// escapes) is the key the decoder gives, and escaped, numeric and
// formatted keys still decode.
func TestBucketKey(t *testing.T) {
	for _, tc := range []struct {
		name, raw, asString, want string
	}{
		{"plain", `"NSW"`, "", "NSW"},
		{"apostrophe and spaces", `"Creditors' Voluntary Liquidation"`, "", "Creditors' Voluntary Liquidation"},
		{"unicode as is", `"Société"`, "", "Société"},
		{"escaped quote", `"say \"hi\""`, "", `say "hi"`},
		{"escaped unicode", `"caf\u00e9"`, "", "café"},
		{"empty", `""`, "", ""},
		{"number", `1733011200000`, "", "1733011200000"},
		{"formatted wins", `1733011200000`, "2024-12", "2024-12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bucketKey(json.RawMessage(tc.raw), tc.asString); got != tc.want {
				t.Errorf("bucketKey(%s, %q) = %q, want %q", tc.raw, tc.asString, got, tc.want)
			}
		})
	}
}
