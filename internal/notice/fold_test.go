package notice

import (
	"maps"
	"reflect"
	"strings"
	"testing"
)

func TestFoldSpellings(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   map[string]int64
		want map[string]int64
	}{
		{"the most counted spelling wins", map[string]int64{"Appointment": 1940, "appointment": 1}, map[string]int64{"Appointment": 1941}},
		{"whatever its case", map[string]int64{"NSW": 1, "nsw": 5, "Nsw": 2}, map[string]int64{"nsw": 8}},
		{"ties go to the first in byte order", map[string]int64{"in liquidation": 3, "In Liquidation": 3}, map[string]int64{"In Liquidation": 6}},
		{"different values stay apart", map[string]int64{"VIC": 2, "NSW": 2, "": 1}, map[string]int64{"VIC": 2, "NSW": 2, "": 1}},
		{"beyond ASCII", map[string]int64{"ÉTAT": 1, "état": 2, "Kelvin": 1, "\u212aelvin": 1}, map[string]int64{"état": 3, "Kelvin": 2}},
		{"empty", map[string]int64{}, map[string]int64{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := maps.Clone(tt.in)
			if got := FoldSpellings(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("FoldSpellings(%v) = %v, want %v", tt.in, got, tt.want)
			}
			if !reflect.DeepEqual(tt.in, before) {
				t.Errorf("FoldSpellings changed its argument")
			}
		})
	}
}

// TestFoldKeyIsEqualFold: two strings share a fold key exactly when
// strings.EqualFold holds them equal.
func TestFoldKeyIsEqualFold(t *testing.T) {
	words := []string{"s", "S", "ſ", "k", "K", "\u212a", "σ", "Σ", "ς", "i", "I", "İ", "ı", "ǅ", "Ǆ", "ǆ",
		"straße", "STRASSE", "STRAẞE", "Ω", "ω", "\u2126", "ab", "AB", "a", ""}
	for _, a := range words {
		for _, b := range words {
			if same := foldKey(a) == foldKey(b); same != strings.EqualFold(a, b) {
				t.Errorf("%q and %q: same fold key %v, EqualFold %v", a, b, same, strings.EqualFold(a, b))
			}
		}
	}
}

// TestFoldedBucketsOrder: stats buckets come in one order whatever the
// map's: count descending, then key, so two reads of the same data (a kept
// answer and a fresh one, or two backends) compare equal.
func TestFoldedBucketsOrder(t *testing.T) {
	m := map[string]int64{"VIC": 3, "NSW": 3, "qld": 1, "QLD": 2, "WA": 4}
	want := []Bucket{{Key: "WA", Count: 4}, {Key: "NSW", Count: 3}, {Key: "QLD", Count: 3}, {Key: "VIC", Count: 3}}
	for range 20 {
		if got := FoldedBuckets(m); !reflect.DeepEqual(got, want) {
			t.Fatalf("FoldedBuckets = %v, want %v", got, want)
		}
	}
	if got := FoldedBuckets(nil); got == nil || len(got) != 0 {
		t.Errorf("FoldedBuckets(nil) = %#v, want an empty list", got)
	}
}

// TestASCIIFoldKey: the ASCII shortcut gives every ASCII string the key
// the rune-by-rune fold gives it, so an ASCII spelling and a non-ASCII one
// ("Kelvin", "\u212aelvin") still share theirs.
func TestASCIIFoldKey(t *testing.T) {
	all := make([]byte, 128)
	for c := range all {
		all[c] = byte(c)
	}
	for _, s := range []string{string(all), "Appointment of Administrator", "NSW", "nsw", "", "in liquidation 2025-01"} {
		got, ok := asciiFoldKey(s)
		if !ok {
			t.Fatalf("asciiFoldKey(%q) declined an ASCII string", s)
		}
		if want := slowFoldKey(s); got != want {
			t.Errorf("asciiFoldKey(%q) = %q, the rune-by-rune fold %q", s, got, want)
		}
	}
	if _, ok := asciiFoldKey("état"); ok {
		t.Error("asciiFoldKey took a non-ASCII string")
	}
}

// BenchmarkFoldKey: the fold keys of one /v1/filters answer's worth of
// values (46 ASCII spellings of 4 to 41 bytes), with the ASCII shortcut
// and rune by rune.
func BenchmarkFoldKey(b *testing.B) {
	var vals []string
	for i := range 46 {
		vals = append(vals, strings.Repeat("Appointment of liquidator ", 2)[:3+i%38]+string(rune('a'+i%26)))
	}
	for _, f := range []struct {
		name string
		key  func(string) string
	}{{"foldKey", foldKey}, {"rune-by-rune", slowFoldKey}} {
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				for _, v := range vals {
					f.key(v)
				}
			}
		})
	}
}
