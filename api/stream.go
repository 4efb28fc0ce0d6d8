package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"noticesd/internal/limit"
	"noticesd/internal/watch"
)

// writeScreen streams the bulk screen's answer: each element of the three
// lists is encoded on its own into a small reused buffer and written to the
// connection, so a 50,000-identifier answer (about 7 MB) is never held as
// a whole, in any number of copies. The bytes are those writeJSON would
// send (compact, HTML not escaped) except the absent trailing newline.
// release is called once the last byte is written (it holds the request's
// heavy slot).
func writeScreen(c *fiber.Ctx, res watch.ScreenResult, release limit.Release) {
	c.Status(fiber.StatusOK)
	c.Set(fiber.HeaderContentType, contentTypeJSON)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer release()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		put := func(v any) bool {
			buf.Reset()
			if err := enc.Encode(v); err != nil {
				return false
			}
			_, err := w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
			return err == nil
		}
		list := func(name string, n int, at func(int) any) bool {
			fmt.Fprintf(w, "%q:[", name)
			for i := range n {
				if i > 0 {
					_ = w.WriteByte(',')
				}
				if !put(at(i)) {
					return false
				}
			}
			_, err := w.WriteString("],")
			return err == nil
		}
		_ = w.WriteByte('{')
		if !list("matched", len(res.Matched), func(i int) any { return res.Matched[i] }) ||
			!list("unmatched", len(res.Unmatched), func(i int) any { return res.Unmatched[i] }) ||
			!list("unresolved", len(res.Unresolved), func(i int) any { return res.Unresolved[i] }) {
			return // the client went away; nothing more can be said
		}
		_, _ = w.WriteString(`"counts":`)
		if put(res.Counts) {
			_ = w.WriteByte('}')
		}
	})
}
