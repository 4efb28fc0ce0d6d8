package secretbox

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func mustNew(t *testing.T, cur, prev []byte) *Box {
	t.Helper()
	b, err := New(cur, prev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSealOpen(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, KeySize), bytes.Repeat([]byte{2}, KeySize)
	old := mustNew(t, k1, nil)
	rotated := mustNew(t, k2, k1)
	fresh := mustNew(t, k2, nil)
	const secret = "whsec_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"
	sealed := old.Seal(secret, "wch_1")
	if strings.Contains(sealed, secret) || !IsSealed(sealed) || !old.Current(sealed) {
		t.Fatalf("sealed %q", sealed)
	}
	if again := old.Seal(secret, "wch_1"); again == sealed {
		t.Error("two seals of one secret are equal; the nonce is not random")
	}
	tests := []struct {
		name    string
		box     *Box
		sealed  string
		context string
		want    string
		wantErr error
	}{
		{"same key", old, sealed, "wch_1", secret, nil},
		{"previous key after rotation", rotated, sealed, "wch_1", secret, nil},
		{"key retired", fresh, sealed, "wch_1", "", ErrNoKey},
		{"other record", old, sealed, "wch_2", "", errors.New("")},
		{"altered", old, sealed[:len(sealed)-2] + "AA", "wch_1", "", errors.New("")},
		{"plaintext", old, secret, "wch_1", "", errors.New("")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.box.Open(tt.sealed, tt.context)
			switch {
			case tt.wantErr == nil && (err != nil || got != tt.want):
				t.Fatalf("Open = %q, %v; want %q", got, err, tt.want)
			case tt.wantErr != nil && err == nil:
				t.Fatalf("Open = %q; want an error", got)
			case tt.wantErr == ErrNoKey && !errors.Is(err, ErrNoKey):
				t.Fatalf("Open error %v; want ErrNoKey", err)
			}
		})
	}
	if rotated.Current(sealed) {
		t.Error("a value sealed under the previous key reports Current")
	}
}

func TestParseKey(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", true},
		{"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY", true},
		{" MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n", true},
		{"c2hvcnQ=", false},
		{"not base64!", false},
		{"", false},
	}
	for _, tt := range tests {
		if _, err := ParseKey(tt.in); (err == nil) != tt.ok {
			t.Errorf("ParseKey(%q) error %v; want ok=%v", tt.in, err, tt.ok)
		}
	}
}

// TestOpenStoredNamesTheDevelopmentKey: data sealed by `noticesd demo`
// under the public development key, opened under a real key, gets a
// message naming that key and how to keep the data; data sealed under any
// other unknown key gets the general message.
func TestOpenStoredNamesTheDevelopmentKey(t *testing.T) {
	dev, err := ParseKey(DevelopmentKey)
	if err != nil {
		t.Fatal(err)
	}
	own := mustNew(t, bytes.Repeat([]byte{3}, KeySize), nil)
	for _, tt := range []struct {
		name    string
		sealer  *Box
		want    string
		notWant string
	}{
		{"development key", mustNew(t, dev, nil), "NOTICES_SECRET_KEY_PREVIOUS=" + DevelopmentKey, "neither"},
		{"another key", mustNew(t, bytes.Repeat([]byte{4}, KeySize), nil), "neither NOTICES_SECRET_KEY nor", DevelopmentKey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sealed := tt.sealer.Seal("whsec_x", "wch_1")
			_, err := OpenStored(own, sealed, "wch_1")
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("OpenStored: %v; want it to say %q and not %q", err, tt.want, tt.notWant)
			}
		})
	}
}
