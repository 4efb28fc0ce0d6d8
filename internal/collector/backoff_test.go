package collector

import (
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	const hour = time.Hour
	tests := []struct {
		name     string
		interval time.Duration
		failures int
		r        float64
		want     time.Duration
	}{
		{"healthy waits the interval", hour, 0, 0.9, hour},
		{"first failure", hour, 1, 0.5, 30 * time.Second},
		{"second failure doubles", hour, 2, 0.5, time.Minute},
		{"fifth failure", hour, 5, 0.5, 8 * time.Minute},
		{"jitter low end", hour, 1, 0, 24 * time.Second},
		{"jitter high end", hour, 1, 1, 36 * time.Second},
		{"jitter 0.75", hour, 3, 0.75, 2*time.Minute + 12*time.Second},
		{"capped at the interval", 15 * time.Minute, 6, 0.5, 15 * time.Minute},
		{"jitter never exceeds the interval", 15 * time.Minute, 20, 1, 15 * time.Minute},
		{"jitter may shorten at the cap", 15 * time.Minute, 20, 0, 12 * time.Minute},
		{"interval below the base", 10 * time.Second, 1, 0.5, 10 * time.Second},
		{"many failures do not overflow", hour, 1000, 0.5, hour},
		{"out-of-range r is clamped", hour, 1, 7, 36 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Delay(tc.interval, tc.failures, tc.r); got != tc.want {
				t.Errorf("Delay(%v, %d, %v) = %v, want %v", tc.interval, tc.failures, tc.r, got, tc.want)
			}
		})
	}
}

func TestBackoffSchedule(t *testing.T) {
	// The schedule a source that stays down sees with a 15m interval and
	// no jitter: it doubles from 30s and then stays at the interval.
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute,
		8 * time.Minute, 15 * time.Minute, 15 * time.Minute}
	for i, w := range want {
		if got := Delay(15*time.Minute, i+1, 0.5); got != w {
			t.Errorf("after failure %d: %v, want %v", i+1, got, w)
		}
	}
}
