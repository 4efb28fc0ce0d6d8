package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/docs"
)

// serveOpenAPI is GET /openapi.json (no key): the OpenAPI document the
// tests validate every response against, as embedded at build time.
func serveOpenAPI(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, contentTypeJSON)
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.Send(docs.OpenAPI)
}

// serveDocsPage is GET /docs (no key): a self-contained page that renders
// /openapi.json in the browser with no external assets.
func serveDocsPage(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	c.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'")
	return c.Send(docs.Viewer)
}
