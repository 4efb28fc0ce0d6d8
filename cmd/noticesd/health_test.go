package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHealth runs `noticesd health` in-process against a real HTTP server:
// exit 0 on 200, 1 on any other status or when nothing answers, 2 on a bad
// command line.
func TestHealth(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ready" {
			w.Write([]byte(`{"status":"ready"}`))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	t.Cleanup(srv.Close)

	tests := []struct {
		name string
		args []string
		code int
	}{
		{"ready answers 200", []string{"health", "--url", srv.URL + "/ready"}, exitOK},
		{"503 fails", []string{"health", "--url", srv.URL + "/other"}, exitFailure},
		{"nothing listening fails", []string{"health", "--url", down.URL + "/ready", "--timeout", "2s"}, exitFailure},
		{"stray argument is a usage error", []string{"health", "extra"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tt.args, &out, &errb); code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out.String(), errb.String())
			}
		})
	}
}
