package api

import (
	"log/slog"
	"slices"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/noticesd/noticesd/internal/account"
)

// unmatchedRoute is the route label of a request for a path no route has,
// so the label set of logs and metrics stays bounded.
const unmatchedRoute = "unmatched"

// observe writes the access-log line of one answered request and counts it
// in the metrics: method, route pattern (never the raw path, which may
// carry an api_key), status, duration and the caller's account id. The key
// itself is never logged.
func (s *Server) observe(ctx *fasthttp.RequestCtx, start time.Time) {
	d := time.Since(start)
	method := string(ctx.Method())
	if !slices.Contains(s.app.Config().RequestMethods, method) {
		method = "OTHER"
	}
	route := s.routePattern(string(ctx.Path()))
	status := ctx.Response.StatusCode()
	s.metrics.ObserveRequest(route, method, status, d)
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
	}
	if p, ok := ctx.UserValue(principalKey{}).(account.Principal); ok {
		kind := "read"
		if p.Kind == account.AccountKey {
			kind = "account"
		}
		attrs = append(attrs, slog.String("account", p.Account.ID), slog.String("key_kind", kind))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
}

// routePattern returns the registered pattern of the route that answers
// path (/v1/watches/:id), or unmatchedRoute.
func (s *Server) routePattern(path string) string {
	segs := splitPath(path)
	for _, r := range s.routes {
		if segmentsMatch(r.segments, segs) {
			return r.path
		}
	}
	return unmatchedRoute
}
