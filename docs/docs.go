// Package docs embeds the documents the service serves itself: the OpenAPI
// document (GET /openapi.json) and the page that renders it (GET /docs).
// The rest of this directory is prose for people, not compiled.
package docs

import _ "embed"

// OpenAPI is docs/openapi.json, the API's OpenAPI 3.1 document.
//
//go:embed openapi.json
var OpenAPI []byte

// Viewer is docs/viewer.html: a self-contained page (no external scripts,
// styles or fonts) that fetches /openapi.json and renders it.
//
//go:embed viewer.html
var Viewer []byte
