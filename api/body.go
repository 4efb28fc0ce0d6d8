package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/noticesd/noticesd/internal/errs"
)

// How request bodies are read. The server streams bodies
// (StreamRequestBody): fasthttp hands the request over once the headers
// and at most 8 KiB of body have arrived, and the body is read only by
// requestBody, after the route, the declared size, the key and the request
// limits have been checked, incrementally up to the route's cap. So a
// client that declares a large body and sends nothing costs one small
// buffer, not the declared size.
//
// Two kinds of request are answered without waiting for any body byte:
// one that declares more than its route accepts (413) and one whose API key
// is missing, unknown or of a lapsed subscription (401/402, or whatever the
// route answers without a body).
// headerReceived, which sees only the headers, marks such a request with
// unreadBodyHeader, tells fasthttp it has no body and asks for the
// connection to be closed after the answer, so the unsent body is never
// waited for and never read.

// bodyReadKey is the fasthttp user value set once a handler has read the
// whole request body; a request whose body was not read ends its
// connection (the unread bytes cannot be told from the next request).
const bodyReadKey = "noticesd.body-read"

// unreadBodyHeader marks a request whose body headerReceived decided not to
// read; its value is the Content-Length the client declared (-1 for
// chunked). A client-sent header of that name is removed first.
const unreadBodyHeader = "X-Noticesd-Unread-Body"

// largeBodyRoutes are the POST routes that take up to cfg.MaxBodyBytes
// (50,000 identifiers need megabytes); every other route takes
// cfg.MaxSmallBodyBytes.
var largeBodyRoutes = []string{"/v1/match", "/v1/watches"}

// bodyCap returns the body cap of a request.
func (s *Server) bodyCap(method, path string) int {
	if method == fiber.MethodPost {
		if len(path) > 1 {
			path = strings.TrimRight(path, "/")
		}
		for _, p := range s.largeBody {
			if p == path {
				return s.cfg.MaxBodyBytes
			}
		}
	}
	return s.cfg.MaxSmallBodyBytes
}

// headerReceived is fasthttp's HeaderReceived hook: once the headers are
// in, the body gets its own read deadline and the route's cap, and a body
// that is too large or comes without a key is not waited for (see above).
func (s *Server) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	path, query, _ := bytes.Cut(h.RequestURI(), []byte("?"))
	limit := s.bodyCap(string(h.Method()), string(path))
	h.Del(unreadBodyHeader)
	if n := h.ContentLength(); n > limit || (n > 0 || n == -1) && !s.keyAccepted(h, query) {
		h.Set(unreadBodyHeader, strconv.Itoa(n))
		h.Del(fiber.HeaderExpect)
		h.SetContentLength(0)
		h.SetConnectionClose()
	}
	return fasthttp.RequestConfig{ReadTimeout: s.cfg.BodyTimeout, MaxRequestBodySize: limit}
}

// keyAuthTimeout bounds the key lookup of headerReceived.
const keyAuthTimeout = 5 * time.Second

// keyAccepted reports whether a request's API key (requestKey)
// authenticates to an active subscription, so its body is worth
// reading. A store failure counts as accepted: the handler's own check
// then answers it properly.
//
// A key that authenticated on this server before and was not refused
// since (rateguess.go) is accepted without a lookup: its check comes
// before its body is read anyway (in the scale mode one script call with
// its rate token and heavy slot), so a bulk screen with a seen key costs
// one Redis round trip, not two. What that costs: a key revoked or lapsed
// since its last request to this server has its body's first bytes sent
// once (an Expect: 100-continue is answered) before its 401 or 402, which
// then closes the connection as for any unread body; its next request is
// refused here again.
func (s *Server) keyAccepted(h *fasthttp.RequestHeader, query []byte) bool {
	key, err := requestKey(h, query)
	if err != nil {
		return false
	}
	if _, seen := s.guesses.get(keyDigest(key)); seen {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), keyAuthTimeout)
	defer cancel()
	p, err := s.deps.Accounts.Authenticate(ctx, key)
	if err != nil {
		return !errs.Is(err, errs.Unauthorised)
	}
	return p.Account.Active
}

// declaredLength is the Content-Length the client declared (-1 chunked,
// -2 none), also for a request whose body headerReceived left unread.
func declaredLength(c *fiber.Ctx) int {
	if v := c.Request().Header.Peek(unreadBodyHeader); len(v) > 0 {
		if n, err := strconv.Atoi(string(v)); err == nil {
			return n
		}
	}
	return c.Request().Header.ContentLength()
}

// checkDeclaredSize refuses a body whose Content-Length is over the
// route's cap before anything of it is read: 413 payload_too_large.
func (s *Server) checkDeclaredSize(c *fiber.Ctx) error {
	if limit := s.bodyCap(c.Method(), c.Path()); declaredLength(c) > limit {
		return s.tooLarge(limit)
	}
	return nil
}

// tooLarge is the 413 for a body over limit. Only the routes that take
// identifier lists (limit is the large cap) are told to split the list.
func (s *Server) tooLarge(limit int) *errs.Error {
	if limit == s.cfg.MaxBodyBytes && limit > s.cfg.MaxSmallBodyBytes {
		return errs.New(errs.PayloadTooLarge, "the request body is larger than the %d bytes this route accepts; send a smaller body (split the list into several requests)", limit)
	}
	return errs.New(errs.PayloadTooLarge, "the request body is larger than the %d bytes this route accepts; its body has only a few short members (see the API reference), so send just those", limit)
}

// requestBody returns the raw request body of a JSON route, read from the
// stream up to the route's cap (413 payload_too_large past it). Content-Type
// is not checked: the body is parsed as JSON whatever it says, and a
// missing one is fine. A Content-Encoding other than identity is refused,
// because decompressing would bypass the size limit.
func (s *Server) requestBody(c *fiber.Ctx) ([]byte, error) {
	if enc := strings.TrimSpace(c.Get(fiber.HeaderContentEncoding)); enc != "" && !strings.EqualFold(enc, "identity") {
		return nil, errs.New(errs.InvalidJSON, "Content-Encoding %s is not accepted; send the JSON body uncompressed", errs.Quote(enc))
	}
	limit := s.bodyCap(c.Method(), c.Path())
	if len(c.Request().Header.Peek(unreadBodyHeader)) > 0 { // cannot happen: such requests end before (413, 401)
		return nil, errs.New(errs.InvalidParameter, "the request body was not read; send the request again with its API key")
	}
	ctx := c.Context()
	stream := ctx.RequestBodyStream()
	if stream == nil { // no body, or the body was already read in full (app.Test)
		body := c.Request().Body()
		if len(body) > limit {
			return nil, s.tooLarge(limit)
		}
		ctx.SetUserValue(bodyReadKey, true)
		return body, nil
	}
	var buf bytes.Buffer
	if n := c.Request().Header.ContentLength(); n > 0 {
		buf.Grow(min(n, 64<<10)) // grows with the bytes that arrive, never ahead of them
	}
	n, err := buf.ReadFrom(io.LimitReader(stream, int64(limit)+1))
	if n > int64(limit) {
		return nil, s.tooLarge(limit)
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errs.New(errs.InvalidParameter, "the request body was not received in time (%d of its bytes arrived); send it again", n)
		}
		return nil, errs.New(errs.InvalidJSON, "the request body could not be read after %d bytes (%v); send it again", n, err)
	}
	ctx.SetUserValue(bodyReadKey, true)
	return buf.Bytes(), nil
}

// closeIfBodyUnread ends the connection after a response to a request
// whose body the handler did not read in full.
func closeIfBodyUnread(ctx *fasthttp.RequestCtx) {
	n := ctx.Request.Header.ContentLength() // -1 chunked, -2 none declared
	if (n > 0 || n == -1) && ctx.UserValue(bodyReadKey) == nil {
		ctx.SetConnectionClose()
	}
}
