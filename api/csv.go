package api

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/csvout"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/watch"
)

// CSV in and out (docs/api.md, "CSV").
//
// A CSV answer is chosen by the Accept header (wantsCSV); errors are always
// the JSON error shape, whatever Accept says. A CSV answer is RFC 4180,
// UTF-8 without a byte-order mark, CRLF record ends, with a header row,
// written by csvout: a cell's text as the JSON answer has it, except that
// a text cell a spreadsheet would run as a formula gets a leading
// apostrophe unless the request says raw=true (csvRaw).

// contentTypeCSV is the Content-Type of every CSV answer.
const contentTypeCSV = "text/csv; charset=utf-8"

// MaxExport is the most notices one CSV export of GET /v1/notices carries.
const MaxExport = 100000

// exportFailedMarker starts the last line of an export that failed after
// its first bytes were sent; the chunked body then ends without its last
// chunk, so HTTP clients (curl, browsers) report the download as failed.
const exportFailedMarker = "#ERROR: export incomplete"

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

// csvRaw reads the raw parameter of a CSV answer: true leaves cells that
// look like formulas as they are.
func csvRaw(c *fiber.Ctx) (bool, error) { return params{c}.boolean("raw", false) }

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

// exportNotices is GET /v1/notices with Accept: text/csv: every matching
// notice (limit and page ignored), streamed. More than s.exportMax matches
// is 400 export_too_large before anything is sent. The request holds its
// heavy slot until the last byte is written.
func (s *Server) exportNotices(c *fiber.Ctx) error {
	sq, err := params{c}.searchOrder()
	if err != nil {
		return err
	}
	raw, err := csvRaw(c)
	if err != nil {
		return err
	}
	exp, err := s.deps.Notices.ExportNotices(c.UserContext(), sq, s.exportMax)
	if err != nil {
		return err
	}
	c.Status(fiber.StatusOK)
	c.Set(fiber.HeaderContentType, contentTypeCSV)
	s.attachment(c, "notices")
	c.Set("X-Total-Count", strconv.FormatInt(exp.Total(), 10))
	c.Context().SetBodyStream(newExportReader(context.WithoutCancel(c.UserContext()), exp, takeSlot(c), s.log, raw), -1)
	return nil
}

// newExportReader returns the body of export exp, its header row first;
// raw leaves cells that look like formulas as they are.
func newExportReader(ctx context.Context, exp store.NoticeExport, release limit.Release, log *slog.Logger, raw bool) *exportReader {
	r := &exportReader{exp: exp, ctx: ctx, release: release, log: log}
	r.cw = csvout.NewWriter(&r.buf, raw)
	r.write(notice.CSVColumns)
	return r
}

// exportReader is the body of a CSV export: it reads the export a batch at
// a time as the connection takes the bytes, so an export holds one batch
// in memory whatever its size. When a batch cannot be read it logs the
// error, ends the body with a line starting exportFailedMarker, and
// returns the error so the chunked body is cut short.
type exportReader struct {
	exp     store.NoticeExport
	ctx     context.Context
	release limit.Release
	log     *slog.Logger
	buf     bytes.Buffer
	cw      *csvout.Writer
	rec     []string
	rows    int64
	err     error
	done    bool
}

func (r *exportReader) write(rec []string) {
	_ = r.cw.Write(rec) // into a bytes.Buffer: cannot fail
}

// Read implements io.Reader.
func (r *exportReader) Read(p []byte) (int, error) {
	for r.buf.Len() == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.done {
			return 0, io.EOF
		}
		r.fill()
	}
	return r.buf.Read(p)
}

// fill encodes the next batch into buf, or the end, or the failure.
func (r *exportReader) fill() {
	ns, err := r.exp.Next(r.ctx)
	if err == nil && len(ns) == 0 && r.rows != r.exp.Total() {
		err = errors.New("the export ended early")
	}
	if err != nil {
		r.log.Error("CSV export failed after its answer began", "rows_sent", r.rows, "rows_total", r.exp.Total(), "error", err)
		r.write([]string{exportFailedMarker + " after " + strconv.FormatInt(r.rows, 10) + " of " +
			strconv.FormatInt(r.exp.Total(), 10) + " rows; the service failed while reading them; download the export again"})
		r.err = err
		return
	}
	if len(ns) == 0 {
		r.done = true
		return
	}
	for i := range ns {
		r.rec = ns[i].CSVRecord(r.rec)
		r.write(r.rec)
	}
	r.rows += int64(len(ns))
}

// Close ends the export and gives back the heavy slot.
func (r *exportReader) Close() error {
	defer r.release()
	if err := r.exp.Close(); err != nil {
		r.log.Warn("CSV export could not be closed", "error", err)
	}
	return nil
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

// writeScreenCSV streams the bulk screen as CSV, one row per distinct
// submitted identifier in ids' order; release is called once the last
// byte is written.
func (s *Server) writeScreenCSV(c *fiber.Ctx, res watch.ScreenResult, ids []ident.ID, raw bool, release limit.Release) {
	c.Status(fiber.StatusOK)
	c.Set(fiber.HeaderContentType, contentTypeCSV)
	s.attachment(c, "screen")
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer release()
		// An error means the client went away; nothing more can be said.
		_ = res.WriteCSV(w, ids, raw)
	})
}
