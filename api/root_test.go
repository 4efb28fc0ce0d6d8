package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRoot: GET / (no key) sends a browser to /docs and gives any other
// client JSON linking /docs, /openapi.json and /health (the response is
// also checked against the OpenAPI document, as every api test response).
func TestRoot(t *testing.T) {
	f := newFixture(t, fixtureOpts{build: Build{Version: "0.9.0", Commit: "abc"}})
	for _, tt := range []struct {
		name, accept string
		status       int
	}{
		{"curl", "*/*", 200},
		{"no Accept", "", 200},
		{"program asking for JSON", "application/json", 200},
		{"browser", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", 302},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", http.NoBody)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			res := f.roundTrip(t, req)
			if res.status != tt.status {
				t.Fatalf("status %d, want %d; body %s", res.status, tt.status, res.body)
			}
			if tt.status == 302 {
				if loc := res.header.Get("Location"); loc != "/docs" {
					t.Errorf("Location %q, want /docs", loc)
				}
				return
			}
			wantJSONType(t, res)
			var got rootResponse
			if err := json.Unmarshal(res.body, &got); err != nil {
				t.Fatal(err)
			}
			want := rootResponse{Name: "noticesd", Version: "0.9.0", Docs: "/docs", OpenAPI: "/openapi.json", Health: "/health"}
			if got != want {
				t.Errorf("GET / = %+v, want %+v", got, want)
			}
		})
	}
	// The links lead somewhere.
	for _, path := range []string{"/docs", "/openapi.json", "/health"} {
		if res := f.do(t, http.MethodGet, path, ""); res.status != 200 {
			t.Errorf("GET %s: %d", path, res.status)
		}
	}
}
