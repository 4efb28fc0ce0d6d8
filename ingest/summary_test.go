package ingest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestSummaryString(t *testing.T) {
	tests := []struct {
		sum  Summary
		want string
	}{
		{Summary{Kind: "notices", Read: 1000, Inserted: 990, Rejected: 10, Duration: 420 * time.Millisecond},
			"notices: read 1000 inserted 990 updated 0 rejected 10 in 0.42s (2380 rows/s)"},
		{Summary{Kind: "register", Read: 4000000, Inserted: 4000000, Duration: 32 * time.Second},
			"register: read 4000000 inserted 4000000 updated 0 rejected 0 in 32.00s (125000 rows/s)"},
		{Summary{Kind: "notices", Read: 3, Updated: 3},
			"notices: read 3 inserted 0 updated 3 rejected 0 in 0.00s (0 rows/s)"},
		{Summary{Read: 1, Inserted: 1, Duration: time.Second},
			"ingest: read 1 inserted 1 updated 0 rejected 0 in 1.00s (1 rows/s)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.sum.String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestSummaryExitCode(t *testing.T) {
	tests := []struct {
		name string
		sum  Summary
		want int
	}{
		{"all loaded", Summary{Read: 5, Inserted: 3, Updated: 2}, 0},
		{"nothing to load", Summary{}, 0},
		{"some rejected", Summary{Read: 5, Inserted: 4, Rejected: 1}, 3},
		{"all rejected", Summary{Read: 5, Rejected: 5}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.sum.ExitCode(); got != tt.want {
				t.Errorf("ExitCode() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestReporterListsTheFirstHundred(t *testing.T) {
	tests := []struct {
		rejected  int
		lines     int
		countLine string
	}{
		{0, 0, ""},
		{1, 1, ""},
		{100, 100, ""},
		{101, 101, "... and 1 more rejected lines not listed (101 rejected in all)"},
		{250, 101, "... and 150 more rejected lines not listed (250 rejected in all)"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.rejected), func(t *testing.T) {
			var out strings.Builder
			r := &reporter{w: &out}
			for i := 1; i <= tt.rejected; i++ {
				r.reject("f.jsonl", &LineError{Line: i, Reason: "bad"})
			}
			r.finish()
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if out.Len() == 0 {
				lines = nil
			}
			if len(lines) != tt.lines {
				t.Fatalf("%d report lines, want %d", len(lines), tt.lines)
			}
			if tt.lines > 0 && lines[0] != "f.jsonl:1: bad" {
				t.Errorf("first line %q, want FILE:LINE: reason", lines[0])
			}
			if tt.countLine != "" && lines[len(lines)-1] != tt.countLine {
				t.Errorf("last line %q, want %q", lines[len(lines)-1], tt.countLine)
			}
			if tt.countLine == "" && tt.lines > 0 && lines[len(lines)-1] != fmt.Sprintf("f.jsonl:%d: bad", tt.rejected) {
				t.Errorf("last line %q", lines[len(lines)-1])
			}
		})
	}
}
