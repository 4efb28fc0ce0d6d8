package api

import (
	"bufio"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/watch"
)

// writeScreen streams the bulk screen's answer: it is encoded without
// reflection (watch.ScreenResult.WriteJSON) through a buffer of about 32 KiB
// straight to the connection, so a 50,000-identifier answer (about 7 MB) is
// never held as a whole, in any number of copies. The bytes are those
// writeJSON would send. The request's heavy slot is given back when the
// handler returns: the screen's work is done by then, and the encoding
// goes at the client's pace.
func writeScreen(c *fiber.Ctx, res watch.ScreenResult) {
	c.Status(fiber.StatusOK)
	c.Set(fiber.HeaderContentType, contentTypeJSON)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		// An error means the client went away; nothing more can be said.
		_ = res.WriteJSON(w)
	})
}
