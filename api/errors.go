package api

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/noticesd/noticesd/internal/errs"
)

// contentTypeJSON is the Content-Type of every response body.
const contentTypeJSON = "application/json; charset=utf-8"

// serverErrorMessage is the only message a 500 server_error carries: the
// cause is logged, never sent.
const serverErrorMessage = "the service failed to answer this request; retry with backoff, and report it if it persists"

// statuses maps every error code to its HTTP status: SPEC.md's error table
// plus API.md's extra codes. It is the only place that knows HTTP statuses
// of error codes.
var statuses = map[errs.Code]int{
	errs.Unauthorised:         http.StatusUnauthorized,
	errs.SubscriptionInactive: http.StatusPaymentRequired,
	errs.QuotaExceeded:        http.StatusPaymentRequired,
	errs.WatchLimitReached:    http.StatusPaymentRequired,
	errs.AccountRequired:      http.StatusForbidden,
	errs.EmptyRequest:         http.StatusBadRequest,
	errs.EmptyWatch:           http.StatusBadRequest,
	errs.TooManyIdentifiers:   http.StatusBadRequest,
	errs.InvalidIdentifier:    http.StatusBadRequest,
	errs.InvalidACN:           http.StatusBadRequest,
	errs.InvalidFilter:        http.StatusBadRequest,
	errs.InvalidSince:         http.StatusBadRequest,
	errs.InvalidDate:          http.StatusBadRequest,
	errs.InvalidQuery:         http.StatusBadRequest,
	errs.InvalidGroupBy:       http.StatusBadRequest,
	errs.InvalidUpdate:        http.StatusBadRequest,
	errs.InvalidAlertEmail:    http.StatusBadRequest,
	errs.InvalidWebhookURL:    http.StatusBadRequest,
	errs.MissingURL:           http.StatusBadRequest,
	errs.NotFound:             http.StatusNotFound,
	errs.MethodNotAllowed:     http.StatusMethodNotAllowed,
	errs.ServerError:          http.StatusInternalServerError,
	errs.WebhookUnavailable:   http.StatusInternalServerError,
	errs.InvalidJSON:          http.StatusBadRequest,
	errs.InvalidParameter:     http.StatusBadRequest,
	errs.PayloadTooLarge:      http.StatusRequestEntityTooLarge,
	errs.RateLimited:          http.StatusTooManyRequests,
	errs.ExportTooLarge:       http.StatusBadRequest,
	errs.Unavailable:          http.StatusServiceUnavailable,
	errs.BackendUnavailable:   http.StatusServiceUnavailable,
	errs.NoWebhook:            http.StatusConflict,
	errs.DeliveryNotDead:      http.StatusConflict,
}

// StatusFor returns the HTTP status of an error code; unknown codes are 500.
func StatusFor(code errs.Code) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// errorBody is the error shape of SPEC.md: {"error": {"code", "message"}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    errs.Code `json:"code"`
	Message string    `json:"message"`
}

// handleError is fiber's ErrorHandler: every error of every route, fiber's
// own (unknown route, body too large, malformed request) and recovered
// panics end here and leave as the JSON error shape.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	e := s.apiError(c, err)
	writeError(c.Response(), e)
	return nil
}

// apiError turns any error into the *errs.Error sent to the client. Errors
// without a known code are logged and become a generic server_error.
func (s *Server) apiError(c *fiber.Ctx, err error) *errs.Error {
	if e, ok := errs.As(err); ok {
		if _, known := statuses[e.Code]; !known || e.Code == errs.ServerError {
			if e.Message == serverErrorMessage { // already logged where it arose
				return e
			}
			s.log.Error("request failed", "method", c.Method(), "path", c.Path(), "error", err)
			return errs.New(errs.ServerError, serverErrorMessage)
		}
		return e
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case fiber.StatusNotFound:
			return errs.New(errs.NotFound, "there is no route %s; check the path against the API reference", errs.Clip(c.Path()))
		case fiber.StatusMethodNotAllowed:
			return errs.New(errs.MethodNotAllowed, "%s is not allowed on %s", c.Method(), errs.Clip(c.Path()))
		case fiber.StatusRequestEntityTooLarge:
			return s.tooLarge(s.bodyCap(c.Method(), c.Path()))
		case fiber.StatusRequestHeaderFieldsTooLarge:
			return errs.New(errs.InvalidParameter, "the request line or headers are too large; shorten the query string or headers")
		case fiber.StatusRequestTimeout:
			return errs.New(errs.InvalidParameter, "the request was not received in time; send it again")
		}
		if fe.Code >= 400 && fe.Code < 500 {
			return errs.New(errs.InvalidParameter, "the HTTP request could not be read (%s); send a well-formed HTTP/1.1 request", readProblem(fe.Message))
		}
	}
	s.log.Error("request failed", "method", c.Method(), "path", c.Path(), "error", err)
	return errs.New(errs.ServerError, serverErrorMessage)
}

// readProblem is the HTTP server's reason for refusing a malformed request,
// without the request bytes it quotes after it (they can hold an API key or
// cookies): everything from the first quote or "Buffer size=" is dropped.
func readProblem(msg string) string {
	for _, cut := range []string{"Buffer size=", "contents:", `"`} {
		if i := strings.Index(msg, cut); i >= 0 {
			msg = msg[:i]
		}
	}
	msg = strings.TrimSuffix(strings.TrimRight(msg, " .,:;"), " in") // "... method in <quoted request>"
	if len(msg) > 200 {
		msg = msg[:200]
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
	}
	if msg == "" {
		return "malformed request"
	}
	return msg
}

// writeError writes e as the JSON error body with its status. It works on
// the raw fasthttp response so the few paths outside fiber's router (an
// unknown HTTP method) answer the same way.
func writeError(resp *fasthttp.Response, e *errs.Error) {
	body, err := marshal(errorBody{Error: errorDetail{Code: e.Code, Message: e.Message}})
	if err != nil { // cannot happen: two strings
		body = []byte(`{"error":{"code":"server_error","message":"` + serverErrorMessage + `"}}`)
	}
	resp.SetStatusCode(StatusFor(e.Code))
	if e.Code == errs.BackendUnavailable && len(resp.Header.Peek(fiber.HeaderRetryAfter)) == 0 {
		// A backend outage: ask for a short pause, as for every 503.
		resp.Header.Set(fiber.HeaderRetryAfter, strconv.Itoa(backendRetryAfter))
	}
	resp.Header.SetContentType(contentTypeJSON)
	resp.SetBody(body)
}

// backendRetryAfter is the Retry-After (seconds) of a 503
// backend_unavailable: a pause before the next try, shorter than the
// backends' own call timeouts (Redis 3 s, Elasticsearch 10 s).
const backendRetryAfter = 2

// writeJSON writes v as the JSON response body with the given status.
func writeJSON(c *fiber.Ctx, status int, v any) error {
	body, err := marshal(v)
	if err != nil {
		return err
	}
	c.Status(status)
	c.Set(fiber.HeaderContentType, contentTypeJSON)
	return c.Send(body)
}

// marshal encodes v without HTML escaping, so notice text reads as sent.
// go-json writes what encoding/json writes (map keys sorted, the same
// escapes and numbers; TestMarshalAsEncodingJSON) in under half its time
// (BenchmarkMarshal: the fixture page 10.7 us with encoding/json, 4.7 us).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := gojson.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// discardLogger is used when Deps.Logger is nil.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
