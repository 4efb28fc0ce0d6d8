package webhook

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-github/v75/github"
)

func TestNewSecret(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	for _, s := range []string{a, b} {
		if !strings.HasPrefix(s, "whsec_") {
			t.Fatalf("secret %q lacks the whsec_ prefix", s)
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil || len(raw) != 32 {
			t.Fatalf("secret %q: want 32 base64url bytes, got %d (%v)", s, len(raw), err)
		}
	}
	if a == b {
		t.Fatalf("two secrets are equal: %q", a)
	}
}

func TestSign(t *testing.T) {
	// Vector computed independently with Python:
	// hmac.new(b'whsec_test', b'{"watch_id":"wch_1"}', hashlib.sha256).hexdigest()
	const want = "sha256=68b148f6be13507a9f65a7194aeaf7e80c70656c612cbd62ee5ed4fd07467b01"
	if got := Sign("whsec_test", []byte(`{"watch_id":"wch_1"}`)); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	// go-github's receiver-side check agrees, keyed with the whole secret string.
	secret, body := NewSecret(), []byte(`{"notice":{"id":"ntc_x"}}`)
	if err := github.ValidateSignature(Sign(secret, body), body, []byte(secret)); err != nil {
		t.Fatalf("go-github rejects our signature: %v", err)
	}
}

func TestVerify(t *testing.T) {
	secret, body := "whsec_abc", []byte(`{"a":1}`)
	good := Sign(secret, body)
	tests := []struct {
		name   string
		secret string
		body   []byte
		header string
		want   bool
	}{
		{"exact", secret, body, good, true},
		{"other secret", "whsec_abd", body, good, false},
		{"re-serialised body", secret, []byte(`{"a": 1}`), good, false},
		{"uppercase hex", secret, body, "sha256=" + strings.ToUpper(strings.TrimPrefix(good, "sha256=")), false},
		{"missing prefix", secret, body, strings.TrimPrefix(good, "sha256="), false},
		{"truncated", secret, body, good[:len(good)-1], false},
		{"empty", secret, body, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Verify(tt.secret, tt.body, tt.header); got != tt.want {
				t.Fatalf("Verify = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeliveryID(t *testing.T) {
	id := DeliveryID("wch_1", "ntc_a")
	if !strings.HasPrefix(id, "dlv_") || len(id) != len("dlv_")+26 {
		t.Fatalf("DeliveryID = %q, want dlv_ and 26 characters", id)
	}
	if again := DeliveryID("wch_1", "ntc_a"); again != id {
		t.Fatalf("DeliveryID not stable: %q then %q", id, again)
	}
	distinct := map[string][2]string{}
	for _, pair := range [][2]string{
		{"wch_1", "ntc_a"}, {"wch_1", "ntc_b"}, {"wch_2", "ntc_a"},
		{"ab", "c"}, {"a", "bc"}, {"ntc_a", "wch_1"},
	} {
		got := DeliveryID(pair[0], pair[1])
		if prev, dup := distinct[got]; dup {
			t.Fatalf("DeliveryID%v = DeliveryID%v = %s", pair, prev, got)
		}
		distinct[got] = pair
	}
}
