package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/console"
	"github.com/noticesd/noticesd/internal/errs"
)

// serveConsole is GET /console (no key): the analyst console's page.
func serveConsole(c *fiber.Ctx) error {
	a, _ := console.Lookup(console.Index)
	return sendConsoleAsset(c, a)
}

// serveConsoleAsset is GET /console/{file} (no key): one of the console's
// scripts and styles; any other name is 404 not_found.
func serveConsoleAsset(c *fiber.Ctx) error {
	a, ok := console.Lookup(c.Params("file"))
	if !ok {
		return errs.New(errs.NotFound, "the console has no file %s; open /console", errs.Clip(c.Path()))
	}
	return sendConsoleAsset(c, a)
}

// sendConsoleAsset sends an embedded file with the console's CSP and cache
// headers; a request naming its ETag in If-None-Match is 304 with no body.
func sendConsoleAsset(c *fiber.Ctx, a console.Asset) error {
	c.Set(fiber.HeaderContentSecurityPolicy, console.CSP)
	c.Set(fiber.HeaderCacheControl, console.CacheControl)
	c.Set(fiber.HeaderETag, a.ETag)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	if c.Get(fiber.HeaderIfNoneMatch) == a.ETag {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, a.ContentType)
	return c.Send(a.Body)
}
