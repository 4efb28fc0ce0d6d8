package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/console"
)

// TestConsoleServed: /console and every file under /console/ are served
// without a key, byte for byte as embedded, with their content type, the
// console's Content-Security-Policy, no-cache and an ETag that answers 304;
// an unknown file is 404 not_found and a write method 405.
func TestConsoleServed(t *testing.T) {
	f := newFixture(t)
	index, _ := console.Lookup(console.Index)
	targets := map[string]console.Asset{"/console": index, "/console/": index}
	for _, name := range console.Names() {
		a, _ := console.Lookup(name)
		targets["/console/"+name] = a
	}
	for target, a := range targets {
		t.Run(target, func(t *testing.T) {
			res := f.do(t, http.MethodGet, target, "")
			if res.status != http.StatusOK || !bytes.Equal(res.body, a.Body) {
				t.Fatalf("GET %s: %d, %d bytes; embedded %s has %d", target, res.status, len(res.body), a.Name, len(a.Body))
			}
			for h, want := range map[string]string{
				"Content-Type": a.ContentType, "Content-Security-Policy": console.CSP, "Cache-Control": "no-cache",
				"Etag": a.ETag, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
			} {
				if got := res.header.Get(h); got != want {
					t.Errorf("%s: %q, want %q", h, got, want)
				}
			}
			req := httptest.NewRequest(http.MethodGet, target, http.NoBody)
			req.Header.Set("If-None-Match", a.ETag)
			if res := f.roundTrip(t, req); res.status != http.StatusNotModified || len(res.body) != 0 {
				t.Errorf("GET %s with If-None-Match its ETag: %d, %d bytes; want 304 and no body", target, res.status, len(res.body))
			}
			if res := f.do(t, http.MethodHead, target, ""); res.status != http.StatusOK || len(res.body) != 0 {
				t.Errorf("HEAD %s: %d, %d bytes", target, res.status, len(res.body))
			}
		})
	}
	for _, target := range []string{"/console/nothing.js", "/console/../go.mod", "/console/assets/app.js"} {
		res := f.do(t, http.MethodGet, target, "")
		if res.status != http.StatusNotFound || !strings.Contains(string(res.body), `"not_found"`) {
			t.Errorf("GET %s: %d %s, want 404 not_found", target, res.status, res.body)
		}
	}
	if res := f.do(t, http.MethodPost, "/console", ""); res.status != http.StatusMethodNotAllowed || res.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /console: %d, Allow %q; want 405 with Allow: GET, HEAD", res.status, res.header.Get("Allow"))
	}
}
