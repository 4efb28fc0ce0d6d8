package delivery

import (
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	unit := 10 * time.Minute
	tests := []struct {
		name    string
		n       int
		ok      bool
		lastErr string
		want    Decision
	}{
		{"first attempt delivered", 1, true, "", Decision{Status: Delivered}},
		{"last attempt delivered", 5, true, "", Decision{Status: Delivered}},
		{"attempt 1 fails: 10 minutes", 1, false, "HTTP 500", Decision{Status: Pending, Wait: 10 * time.Minute, LastError: "HTTP 500"}},
		{"attempt 2 fails: 20 minutes", 2, false, "HTTP 500", Decision{Status: Pending, Wait: 20 * time.Minute, LastError: "HTTP 500"}},
		{"attempt 3 fails: 30 minutes", 3, false, "timeout after 10s", Decision{Status: Pending, Wait: 30 * time.Minute, LastError: "timeout after 10s"}},
		{"attempt 4 fails: 40 minutes", 4, false, "HTTP 502", Decision{Status: Pending, Wait: 40 * time.Minute, LastError: "HTTP 502"}},
		{"attempt 5 fails: dead", 5, false, "HTTP 502", Decision{Status: Dead, LastError: "HTTP 502"}},
		{"an empty error is named", 1, false, " ", Decision{Status: Pending, Wait: 10 * time.Minute, LastError: "delivery failed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.n, tc.ok, tc.lastErr, unit); got != tc.want {
				t.Errorf("Decide(%d, %v, %q) = %+v, want %+v", tc.n, tc.ok, tc.lastErr, got, tc.want)
			}
		})
	}
}

func TestDeactivates(t *testing.T) {
	for n := 0; n <= 11; n++ {
		if got, want := Deactivates(n), n >= 10; got != want {
			t.Errorf("Deactivates(%d) = %v, want %v", n, got, want)
		}
	}
	r := DeactivationReason(10, " HTTP 502 ")
	if !strings.Contains(r, "10 consecutive notices") || !strings.Contains(r, "last error: HTTP 502.") || !strings.Contains(r, `{"active": true}`) {
		t.Errorf("reason %q", r)
	}
}
