package delivery

import (
	"testing"
	"time"
)

func TestRetryWait(t *testing.T) {
	unit := 10 * time.Minute
	tests := []struct {
		attempt int
		want    time.Duration
		ok      bool
	}{
		{1, 10 * time.Minute, true},
		{2, 20 * time.Minute, true},
		{3, 30 * time.Minute, true},
		{4, 40 * time.Minute, true},
		{5, 0, false},
		{0, 0, false},
	}
	for _, tt := range tests {
		t.Run(time.Duration(tt.attempt).String(), func(t *testing.T) {
			got, ok := RetryWait(tt.attempt, unit)
			if got != tt.want || ok != tt.ok {
				t.Errorf("RetryWait(%d) = %v, %v; want %v, %v", tt.attempt, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestEligible(t *testing.T) {
	now := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		seq, wseq int64
		published time.Time
		want      bool
	}{
		{"new and recent", 11, 10, now.Add(-time.Hour), true},
		{"exactly two days old", 11, 10, now.Add(-Window), true},
		{"older than two days", 11, 10, now.Add(-Window - time.Millisecond), false},
		{"arrived before the watch", 10, 10, now.Add(-time.Hour), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Eligible(tt.seq, tt.wseq, tt.published, now); got != tt.want {
				t.Errorf("Eligible = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestJudgedAt: eligibility is judged at the notice's arrival, or now when
// the arrival is unknown or in the future.
func TestJudgedAt(t *testing.T) {
	now := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name, collected string
		want            time.Time
	}{
		{"arrived earlier", "2026-11-20T01:02:03.004Z", time.Date(2026, 11, 20, 1, 2, 3, 4e6, time.UTC)},
		{"unknown", "", now},
		{"not a time", "yesterday", now},
		{"in the future", "2026-11-25T00:00:00.000Z", now},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := JudgedAt(tt.collected, now); !got.Equal(tt.want) {
				t.Fatalf("JudgedAt(%q) = %s, want %s", tt.collected, got, tt.want)
			}
		})
	}
}
