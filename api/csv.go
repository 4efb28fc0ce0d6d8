package api

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/csvout"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/watch"
)

// CSV in and out (docs/api.md, "CSV").
//
// A CSV answer is chosen by the Accept header (wantsCSV); errors are always
// the JSON error shape, whatever Accept says. A CSV answer is RFC 4180,
// UTF-8 (with a byte-order mark only when the request says bom=1, for
// Excel: csvOpts), CRLF record ends, with a header row, written by
// csvout: a cell's text as the JSON answer has it, except that a text
// cell a spreadsheet would run as a formula gets a leading apostrophe
// unless the request says raw=true.

// contentTypeCSV is the Content-Type of every CSV answer.
const contentTypeCSV = "text/csv; charset=utf-8"

// MaxExport is the most notices one CSV export of GET /v1/notices carries.
const MaxExport = 100000

// wantsCSV reports whether the Accept header prefers text/csv to JSON: the
// q of text/csv (from the most specific of text/csv, text/*, */*) is
// above 0 and above the q of application/json (application/json,
// application/*, */*). A tie, no Accept header, */* alone, or an Accept
// naming neither is JSON.
func wantsCSV(c *fiber.Ctx) bool {
	csvQ, jsonQ := acceptQ(c.Get(fiber.HeaderAccept), "text", "csv"), acceptQ(c.Get(fiber.HeaderAccept), "application", "json")
	return csvQ > 0 && csvQ > jsonQ
}

// acceptQ is the q an Accept header gives typ/sub: that of its most
// specific matching media range, 0 when none matches.
func acceptQ(accept, typ, sub string) float64 {
	best, specificity := 0.0, -1
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		t, s, _ := strings.Cut(mt, "/")
		spec := -1
		switch {
		case t == typ && s == sub:
			spec = 2
		case t == typ && s == "*":
			spec = 1
		case t == "*" && s == "*":
			spec = 0
		}
		if spec < specificity || spec < 0 {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
				q = f
			}
		}
		if spec > specificity || q > best {
			best, specificity = q, spec
		}
	}
	return best
}

// csvBody reports whether the request body is CSV (Content-Type text/csv);
// a charset other than UTF-8 is refused.
func csvBody(c *fiber.Ctx) (bool, error) {
	mt, params, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if err != nil || mt != "text/csv" {
		return false, nil
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return true, errs.New(errs.InvalidIdentifier, "the CSV body is declared as charset %s; send it as UTF-8 (charset=utf-8)", errs.Quote(cs))
	}
	return true, nil
}

// attachment names the file a CSV answer is saved as.
func (s *Server) attachment(c *fiber.Ctx, name string) {
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+name+"-"+s.deps.Now().UTC().Format("20060102T150405Z")+`.csv"`)
}

// bom is the UTF-8 byte-order mark a CSV answer starts with on bom=1.
const bom = "\xef\xbb\xbf"

// csvOptions are the parameters of every CSV answer.
type csvOptions struct {
	// raw leaves cells that look like formulas as they are.
	raw bool
	// bom starts the answer with a UTF-8 byte-order mark, which Excel
	// needs to read the file as UTF-8 rather than its ANSI code page.
	bom bool
}

// csvOpts reads the parameters of a CSV answer: raw (true or false) and
// bom (1 or true, 0 or false; absent is no mark).
func csvOpts(c *fiber.Ctx) (csvOptions, error) {
	var o csvOptions
	p := params{c}
	var err error
	if o.raw, err = p.boolean("raw", false); err != nil {
		return o, err
	}
	v, _, err := p.scalar("bom")
	if err != nil {
		return o, err
	}
	switch v {
	case "", "0", "false":
	case "1", "true":
		o.bom = true
	default:
		return o, errs.New(errs.InvalidParameter, "bom %s must be 1 (start the CSV with a UTF-8 byte-order mark, for Excel) or 0", errs.Quote(v))
	}
	return o, nil
}

// exportNotices is GET /v1/notices with Accept: text/csv: every matching
// notice (limit and page ignored). More than s.exportMax matches is 400
// export_too_large. The whole export is produced before anything is sent,
// into a spool (spool.go), while the request holds its heavy slot: the
// slot is given back when the handler returns, so it bounds the server's
// work, not the client's reading speed, and a store failure is a JSON
// error, never a cut answer. HEAD produces nothing.
func (s *Server) exportNotices(c *fiber.Ctx) error {
	sq, err := params{c}.searchOrder()
	if err != nil {
		return err
	}
	opts, err := csvOpts(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	exp, err := s.deps.Notices.ExportNotices(ctx, sq, s.exportMax)
	if err != nil {
		return err
	}
	defer func() {
		if err := exp.Close(); err != nil {
			s.log.Warn("CSV export could not be closed", "error", err)
		}
	}()
	var body io.Reader = bytes.NewReader(nil)
	size := -1 // HEAD: chunked, as a GET's would be without its length
	if c.Method() != fiber.MethodHead {
		sp := &spool{dir: s.spoolDir}
		if err := writeExport(ctx, exp, sp, opts); err != nil {
			_ = sp.Close()
			s.log.Error("CSV export failed before its answer began", "rows_total", exp.Total(), "error", err)
			return err
		}
		body, size = &exportBody{sp: sp, size: sp.size, total: exp.Total(), log: s.log}, int(sp.size)
	}
	c.Status(fiber.StatusOK)
	c.Set(fiber.HeaderContentType, contentTypeCSV)
	s.attachment(c, "notices")
	c.Set("X-Total-Count", strconv.FormatInt(exp.Total(), 10))
	c.Context().SetBodyStream(body, size)
	return nil
}

// writeExport encodes every notice of exp, its header row first, into w
// (csvout; opts.raw leaves cells that look like formulas as they are,
// opts.bom writes the byte-order mark first). An export that ends before
// its Total is an error.
func writeExport(ctx context.Context, exp store.NoticeExport, w io.Writer, opts csvOptions) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if opts.bom {
		_, _ = bw.WriteString(bom) // an error shows at the flush
	}
	cw := csvout.NewWriter(bw, opts.raw)
	if err := cw.Write(notice.CSVColumns); err != nil {
		return fmt.Errorf("spool the export: %w", err)
	}
	var rec []string
	var rows int64
	for {
		ns, err := exp.Next(ctx)
		if err != nil {
			return err
		}
		if len(ns) == 0 {
			break
		}
		for i := range ns {
			rec = ns[i].CSVRecord(rec)
			if err := cw.Write(rec); err != nil {
				return fmt.Errorf("spool the export: %w", err)
			}
		}
		rows += int64(len(ns))
	}
	if rows != exp.Total() {
		return fmt.Errorf("the export ended after %d of its %d notices", rows, exp.Total())
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("spool the export: %w", err)
	}
	return nil
}

// exportBody sends a spooled export. It counts the rows it hands to the
// connection (a record ends at a line feed outside quotes) and, closed
// before its last byte was handed over (the client went away, or did not
// read it within the write timeout), logs the export as cut with the rows
// sent.
type exportBody struct {
	sp          *spool
	size, sent  int64
	total, rows int64
	quoted      bool
	log         *slog.Logger
}

// Read implements io.Reader.
func (b *exportBody) Read(p []byte) (int, error) {
	n, err := b.sp.Read(p)
	for _, c := range p[:n] {
		switch {
		case c == '"':
			b.quoted = !b.quoted // an escaped quote ("") toggles twice
		case c == '\n' && !b.quoted:
			b.rows++
		}
	}
	b.sent += int64(n)
	return n, err
}

// Close frees the spool, logging a cut export.
func (b *exportBody) Close() error {
	if b.sent < b.size {
		b.log.Warn("CSV export cut before its end: the client went away or did not read it within the write timeout",
			"rows_sent", max(b.rows-1, 0), "rows_total", b.total, "bytes_sent", b.sent, "bytes_total", b.size)
	}
	return b.sp.Close()
}

// parseScreenRequest parses POST /v1/match's body: CSV when its
// Content-Type is text/csv, JSON otherwise.
func parseScreenRequest(c *fiber.Ctx, body []byte) (watch.MatchRequest, error) {
	isCSV, err := csvBody(c)
	switch {
	case err != nil:
		return watch.MatchRequest{}, err
	case isCSV:
		return watch.ParseMatchCSV(body)
	}
	return watch.ParseMatchRequest(body)
}

// writeScreenCSV streams the bulk screen as CSV: for a CSV body, the
// upload given back, every row in its order with the result columns
// appended; for a JSON body, one row per distinct submitted identifier in
// submission order (the heavy slot is given back when the handler
// returns, as for writeScreen).
func (s *Server) writeScreenCSV(c *fiber.Ctx, res watch.ScreenResult, req watch.MatchRequest, opts csvOptions) {
	c.Status(fiber.StatusOK)
	c.Set(fiber.HeaderContentType, contentTypeCSV)
	s.attachment(c, "screen")
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		if opts.bom {
			_, _ = w.WriteString(bom)
		}
		// An error means the client went away; nothing more can be said.
		if req.Upload != nil {
			_ = res.WriteUploadCSV(w, req.Upload, opts.raw)
			return
		}
		_ = res.WriteCSV(w, req.Identifiers, opts.raw)
	})
}
