package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/noticesd/noticesd/docs"
)

// The OpenAPI document, loaded once for every test, with a router that
// finds the documented operation of a request. fixture.roundTrip, through
// which every api test request goes, validates each response of a
// documented operation against it (validateResponse), so the document and
// the code cannot drift apart unnoticed.
var (
	docOnce   sync.Once
	docRouter routers.Router
	docErr    error
)

func documentRouter(t *testing.T) routers.Router {
	t.Helper()
	docOnce.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(docs.OpenAPI)
		if err != nil {
			docErr = err
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			docErr = err
			return
		}
		// Requests built with httptest.NewRequest go to example.com.
		doc.Servers = openapi3.Servers{{URL: "http://example.com"}}
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.FileBodyDecoder)
		// The console's files (GET /console/{file}).
		for _, ct := range []string{"text/javascript", "text/css", "image/svg+xml"} {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
		}
		docRouter, docErr = gorillamux.NewRouter(doc)
	})
	if docErr != nil {
		t.Fatalf("the OpenAPI document does not load: %v", docErr)
	}
	return docRouter
}

// validateResponse checks one response against the operation the document
// gives for the request: its status must be documented, and its headers
// and body must match the schema. Requests the document has no operation
// for (unknown paths, wrong methods, HEAD, routes tests add) are not
// checked here; TestOpenAPIRoutesMatchServer keeps the route sets equal.
func validateResponse(t *testing.T, req *http.Request, res response) {
	t.Helper()
	if err := responseProblem(t, req, res); err != nil {
		t.Errorf("%s %s: response %d does not match docs/openapi.json: %v\nbody: %s", req.Method, req.URL, res.status, err, clip(res.body))
	}
}

// responseProblem returns how res departs from the document, nil when it
// matches or the document has no operation for req.
func responseProblem(t *testing.T, req *http.Request, res response) error {
	t.Helper()
	probe := httptest.NewRequest(req.Method, req.URL.String(), http.NoBody)
	probe.Header = req.Header.Clone()
	route, params, err := documentRouter(t).FindRoute(probe)
	if err != nil {
		if errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed) {
			return nil
		}
		return fmt.Errorf("finding the documented operation: %w", err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: probe, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: res.status,
		Header: res.header,
		Body:   io.NopCloser(bytes.NewReader(res.body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	return openapi3filter.ValidateResponse(context.Background(), in)
}

// TestResponseValidationCatchesDrift: the validation hooked into every test
// request rejects a body that breaks the schema and a status the operation
// does not document, and accepts a real response.
func TestResponseValidationCatchesDrift(t *testing.T) {
	f := newFixture(t)
	req := httptest.NewRequest("GET", "/v1/notices?limit=1", http.NoBody)
	req.Header.Set(HeaderAPIKey, f.read)
	good := f.roundTrip(t, req)
	if good.status != 200 {
		t.Fatalf("status %d", good.status)
	}
	json := http.Header{"Content-Type": []string{contentTypeJSON}}
	tests := []struct {
		name string
		res  response
		ok   bool
	}{
		{"the real response", good, true},
		{"a field of the wrong type", response{status: 200, header: json, body: []byte(`{"data": "not a list"}`)}, false},
		{"an undocumented status", response{status: 418, header: json, body: []byte(`{"error":{"code":"x","message":"y"}}`)}, false},
		{"an error outside the Error shape", response{status: 401, header: json, body: []byte(`{"message":"no"}`)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := responseProblem(t, req, tt.res)
			if (err == nil) != tt.ok {
				t.Errorf("problem %v, want ok = %v", err, tt.ok)
			}
		})
	}
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}
