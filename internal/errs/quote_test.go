package errs

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	long := strings.Repeat("7", 8_000_000)
	tests := []struct {
		name, in, want string
	}{
		{"short", "12a", `"12a"`},
		{"control characters escaped", "a\tb\x00", `"a\tb\x00"`},
		{"at the limit", strings.Repeat("x", QuoteLimit), `"` + strings.Repeat("x", QuoteLimit) + `"`},
		{"long", long, `"` + strings.Repeat("7", QuoteLimit) + `..." (8000000 bytes)`},
		{"cut on a rune boundary", strings.Repeat("x", QuoteLimit-1) + "é" + "yyyy", `"` + strings.Repeat("x", QuoteLimit-1) + `..." (69 bytes)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quote(tt.in); got != tt.want {
				t.Errorf("Quote = %.200s, want %.200s", got, tt.want)
			}
		})
	}
}

func TestNewBoundsMessage(t *testing.T) {
	e := New(InvalidQuery, "q could not be parsed: %s", strings.Repeat("é", 5000))
	if len(e.Message) > MaxMessageBytes {
		t.Fatalf("message is %d bytes, want at most %d", len(e.Message), MaxMessageBytes)
	}
	if !strings.HasSuffix(e.Message, "[message cut]") {
		t.Errorf("a cut message must say so: %q", e.Message[len(e.Message)-40:])
	}
	if short := New(NotFound, "no %s", "x"); short.Message != "no x" {
		t.Errorf("short message changed: %q", short.Message)
	}
}

func TestClip(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"short", ` {"a": 1} `, `{"a": 1}`},
		{"long", `[` + strings.Repeat(`"1",`, 100) + `"1"]`, `[` + strings.Repeat(`"1",`, 15) + `"1"... (405 bytes)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Clip(tt.in); got != tt.want {
				t.Errorf("Clip = %s, want %s", got, tt.want)
			}
		})
	}
}
