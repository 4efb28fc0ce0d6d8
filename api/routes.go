package api

import (
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/noticesd/noticesd/internal/errs"
)

// preflight runs first on every request: an unknown path is 404 not_found
// and a known path with a method it does not answer is 405
// method_not_allowed with an Allow header, both before authentication; then
// a body declared larger than the route accepts is 413 payload_too_large,
// before any of it is read.
func (s *Server) preflight(c *fiber.Ctx) error {
	allowed, found := s.match(c.Path())
	if !found {
		return errs.New(errs.NotFound, "there is no route %s; check the path against the API reference", errs.Clip(c.Path()))
	}
	if !slices.Contains(allowed, c.Method()) {
		c.Set(fiber.HeaderAllow, strings.Join(allowed, ", "))
		return methodNotAllowed(c.Method(), c.Path(), allowed)
	}
	if err := s.checkDeclaredSize(c); err != nil {
		return err
	}
	return c.Next()
}

// unknownMethod answers a request whose method fiber does not know (such
// as PROPFIND) the way preflight answers any wrong method.
func (s *Server) unknownMethod(ctx *fasthttp.RequestCtx) {
	method, path := string(ctx.Method()), string(ctx.URI().PathOriginal())
	allowed, found := s.match(path)
	if !found {
		writeError(&ctx.Response, errs.New(errs.NotFound, "there is no route %s; check the path against the API reference", errs.Clip(path)))
		return
	}
	ctx.Response.Header.Set(fiber.HeaderAllow, strings.Join(allowed, ", "))
	writeError(&ctx.Response, methodNotAllowed(method, path, allowed))
}

func methodNotAllowed(method, path string, allowed []string) *errs.Error {
	use := allowed
	if slices.Contains(use, fiber.MethodGet) {
		use = slices.DeleteFunc(slices.Clone(use), func(m string) bool { return m == fiber.MethodHead })
	}
	return errs.New(errs.MethodNotAllowed, "%s is not allowed on %s; use %s", errs.Clip(method), errs.Clip(path), strings.Join(use, " or "))
}

// match returns the methods the route table answers on path (with HEAD
// beside GET), and whether any route has that path. Matching follows the
// fiber config: case-sensitive, trailing slashes ignored.
func (s *Server) match(path string) ([]string, bool) {
	segs := splitPath(path)
	var methods []string
	found := false
	for _, r := range s.routes {
		if !segmentsMatch(r.segments, segs) {
			continue
		}
		found = true
		for _, m := range r.methods {
			if !slices.Contains(methods, m) {
				methods = append(methods, m)
			}
			if m == fiber.MethodGet && !slices.Contains(methods, fiber.MethodHead) {
				methods = append(methods, fiber.MethodHead)
			}
		}
	}
	slices.Sort(methods)
	return methods, found
}

// splitPath splits a path into segments after removing trailing slashes.
func splitPath(path string) []string {
	if len(path) > 1 {
		path = strings.TrimRight(path, "/")
	}
	return strings.Split(strings.TrimPrefix(path, "/"), "/")
}

func segmentsMatch(pattern, segs []string) bool {
	if len(pattern) != len(segs) {
		return false
	}
	for i, p := range pattern {
		if strings.HasPrefix(p, ":") {
			if segs[i] == "" {
				return false
			}
			continue
		}
		if p != segs[i] {
			return false
		}
	}
	return true
}
