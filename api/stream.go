package api

import (
	"bufio"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/watch"
)

// writeScreen streams the bulk screen's answer: it is encoded without
// reflection (watch.ScreenResult.WriteJSON) through a buffer of about 32 KiB
// straight to the connection, so a 50,000-identifier answer (about 7 MB) is
// never held as a whole, in any number of copies. The bytes are those
// writeJSON would send. release is called once the last byte is written (it
// holds the request's heavy slot).
func writeScreen(c *fiber.Ctx, res watch.ScreenResult, release limit.Release) {
	c.Status(fiber.StatusOK)
	c.Set(fiber.HeaderContentType, contentTypeJSON)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer release()
		// An error means the client went away; nothing more can be said.
		_ = res.WriteJSON(w)
	})
}
