package api

import (
	"os"
	"strings"
	"testing"
)

// TestReferenceCoversAPI: docs/reference.md names every operation of the
// OpenAPI document ("GET /v1/notices") and every error code, so the prose
// reference cannot fall behind the routes and codes.
func TestReferenceCoversAPI(t *testing.T) {
	raw, err := os.ReadFile("../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	ref := string(raw)
	for _, o := range loadOpenAPI(t).operations() {
		if !strings.Contains(ref, o.method+" "+o.path) {
			t.Errorf("docs/reference.md does not name %s %s", o.method, o.path)
		}
	}
	for code := range declaredErrorCodes(t) {
		if !strings.Contains(ref, "`"+code+"`") {
			t.Errorf("docs/reference.md does not explain error code `%s`", code)
		}
	}
}
