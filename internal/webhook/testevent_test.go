package webhook

import (
	"regexp"
	"testing"
	"time"
)

// TestTestEventPayload: the test delivery's body is exactly
// {"type":"webhook.test","watch_id","delivered_at","notice":null} in that
// order, and every test delivery id is fresh and shaped dlv_test_ + 26.
func TestTestEventPayload(t *testing.T) {
	b, err := TestEventPayload("wch_x", time.Date(2026, 11, 21, 3, 4, 5, 123e6, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"webhook.test","watch_id":"wch_x","delivered_at":"2026-11-21T03:04:05.123Z","notice":null}`; string(b) != want {
		t.Errorf("body %s, want %s", b, want)
	}
	shape := regexp.MustCompile(`^dlv_test_[a-z2-7]{26}$`)
	seen := map[string]bool{}
	for range 100 {
		id := NewTestDeliveryID()
		if !shape.MatchString(id) || seen[id] {
			t.Fatalf("test delivery id %q: want dlv_test_ and 26 base32 characters, never repeated", id)
		}
		seen[id] = true
	}
}
