// Package api is the HTTP interface of the service (SPEC.md, API.md): the
// routes, authentication, parameter parsing and the one error shape. It talks
// to backends only through the seams of package store.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"runtime/debug"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/valyala/fasthttp"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/metrics"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/webhook"
)

// Deps are the backends and collaborators of the API.
type Deps struct {
	// Notices serves the read routes.
	Notices store.Notices
	// Accounts authenticates API keys.
	Accounts store.Accounts
	// Watches stores watches and answers matches and the bulk screen; nil
	// makes those routes answer server_error.
	Watches store.Watches
	// Webhooks registers webhooks and lists deliveries; nil makes those
	// routes answer server_error (when cfg.Webhooks is on).
	Webhooks store.Webhooks
	// OnWatchChange, if set, is called after every successful webhook
	// write (register, rotate, delete) and watch update with the watch id, so the delivery
	// dispatcher can refresh what it holds about the watch. It must not
	// block for long: it runs on the request.
	OnWatchChange func(ctx context.Context, watchID string)
	// TestSender sends the test deliveries of POST
	// /v1/watches/{id}/webhook/test: a webhook.Sender configured as the
	// delivery worker's (timeout, address checks, CA file) but its own, so
	// tests are not counted as delivery attempts. nil makes that route
	// answer server_error (when cfg.Webhooks is on).
	TestSender *webhook.Sender
	// Plans are the plan limits by name; nil means cfg.Plans, and when that
	// is nil too, account.DefaultPlans.
	Plans map[string]account.Plan
	// Health reports the collector; nil means DisabledCollector.
	Health HealthSource
	// Mail reports alert_email mail on /health; nil means mail is off.
	Mail MailSource
	// Checks probes backends for /health by name ("search", "store",
	// "queue"). A name without a probe reports the result of reading the
	// index status, which is right for the embedded backend where one
	// SQLite file serves all three.
	Checks map[string]Check
	// StoreWritable probes that the store can write (disk not full, file
	// system not read-only, no I/O error); an error makes /health degraded
	// with the error as its reason (HTTP 200) and /ready 503. nil means no
	// write probe.
	StoreWritable Check
	// Search, if set, details the search backend on /health (scale mode:
	// the cluster status, each alias's index with its mapping version and
	// document count, the age of the newest notice); nil shows null.
	Search SearchSource
	// Redis, if set, reports the Redis primary in use on /health and
	// /ready (scale mode); nil leaves the block out.
	Redis RedisSource
	// SearchNodes, if set, says which configured search nodes answer, on
	// /health (search_nodes; a node that does not answer makes it
	// degraded) and /ready (scale mode); nil shows null.
	SearchNodes SearchNodesSource
	// Limiter enforces the per-key request limits; nil means an in-process
	// limit.Local on the wall clock with cfg.HeavyConcurrency global heavy
	// slots (right for
	// the embedded backend, one process). A scale deployment passes a
	// limit.Redis on its Redis and namespace so all replicas share limits.
	Limiter Limiter
	// Gate, if set, checks a key and takes its rate token in one step
	// (KeyGate); it must share the Limiter's rate buckets (scale mode:
	// the Redis store's AuthenticateAndAllow beside a limit.Redis on the
	// same Redis and namespace). nil: the key check and the token are
	// two calls, made side by side.
	Gate KeyGate
	// HeavyGate, if set, is Gate for heavy requests: it also takes the
	// heavy slot in the same step (HeavyGate); it must share the Limiter's
	// buckets and heavy slots (scale mode: the Redis store's SlotGate on
	// the limit.Redis). nil: the slot is taken by the Limiter, beside the
	// key check.
	HeavyGate HeavyGate
	// Ready is the readiness probe of GET /ready: nil when the store is
	// reachable and its schema (migrations, indices) is in place. nil
	// means every Checks probe and the index status must answer.
	Ready Check
	// Metrics counts requests and serves GET /metrics; nil means a
	// registry of this server's own request metrics only.
	Metrics *metrics.Metrics
	// Build is the release and commit /health reports.
	Build Build
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives server-side failures; nil discards them.
	Logger *slog.Logger
}

// Build identifies the binary serving the API on /health.
type Build struct {
	// Version is the release (SemVer); Commit the commit it was built
	// from, "unknown" when not recorded. Empty strings are reported as
	// "unknown".
	Version, Commit string
}

// Server is the HTTP API: a fiber app with the routes of SPEC.md.
type Server struct {
	cfg     config.Config
	deps    Deps
	log     *slog.Logger
	app     *fiber.App
	routes  []route
	limiter Limiter
	// guesses remember each key's principal so its rate token can be
	// taken while the key is checked (rateguess.go).
	guesses rateGuesses
	// askHeld: a held key's requests are checked and limited in Redis
	// as any other's (not early), instead of refused here (heldRefusal).
	// Only BenchmarkScale sets it, to time the server as it was before.
	askHeld bool
	// largeBody are the POST paths with the large body cap.
	largeBody []string
	// writeProbe caches the store's write probe for /health.
	writeProbe probe[error]
	// mailProbe caches the mail queue's status for /health.
	mailProbe probe[MailStatus]
	// probeTimeout bounds each of /health's backend probes
	// (healthProbeTimeout; tests shorten it).
	probeTimeout time.Duration
	// metrics counts every request (observe.go).
	metrics *metrics.Metrics
	// exportMax is the most notices a CSV export carries (MaxExport;
	// tests lower it).
	exportMax int
	// spoolDir is where an export larger than spoolMemory is spooled
	// before it is sent ("": os.TempDir()).
	spoolDir string
}

// access is what a route demands of the caller.
type access uint8

const (
	public     access = iota // no key (/health, /ready, /metrics, /openapi.json, /docs, /console)
	readKey                  // any valid key with an active subscription
	accountKey               // an account key with an active subscription
)

// route is one path of the route table with the methods it answers.
type route struct {
	path     string
	segments []string // a segment starting with ':' matches any one segment
	methods  []string
}

// readBufferSize is the longest request line + headers accepted.
const readBufferSize = 16 << 10

// New builds the API server with every route registered.
func New(cfg config.Config, deps Deps) *Server {
	if deps.Health == nil {
		deps.Health = DisabledCollector{}
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	log := deps.Logger
	if log == nil {
		log = discardLogger()
	}
	if deps.Build.Version == "" {
		deps.Build.Version = "unknown"
	}
	if deps.Build.Commit == "" {
		deps.Build.Commit = "unknown"
	}
	if deps.Plans == nil {
		deps.Plans = cfg.Plans
	}
	if deps.Plans == nil {
		deps.Plans = account.DefaultPlans()
	}
	cfg = withServerDefaults(cfg)
	s := &Server{cfg: cfg, deps: deps, log: log, limiter: deps.Limiter, largeBody: largeBodyRoutes,
		writeProbe: probe[error]{every: writeProbeEvery}, mailProbe: probe[MailStatus]{every: writeProbeEvery}, probeTimeout: healthProbeTimeout, exportMax: MaxExport}
	s.metrics = deps.Metrics
	if s.metrics == nil {
		s.metrics = metrics.New(nil, log)
	}
	if s.limiter == nil {
		s.limiter = limit.NewLocal(cfg.HeavyConcurrency, nil) // wall-clock: rates are per real second
	}
	s.app = fiber.New(fiber.Config{
		DisableStartupMessage: true,
		CaseSensitive:         true,
		StrictRouting:         false,
		BodyLimit:             cfg.MaxBodyBytes,
		StreamRequestBody:     true, // bodies are read by requestBody, after the checks (body.go)
		ReduceMemoryUsage:     true, // idle connections give their buffers back
		ReadTimeout:           cfg.HeaderTimeout,
		WriteTimeout:          cfg.WriteTimeout,
		IdleTimeout:           cfg.IdleTimeout,
		Concurrency:           cfg.MaxConns,
		ReadBufferSize:        readBufferSize,
		ErrorHandler:          s.handleError,
	})
	s.app.Server().HeaderReceived = s.headerReceived
	// fiber answers a method it does not know with a plain-text 400 before
	// any handler runs; wrap the server's handler so it answers like any
	// other wrong method. A request whose body was left unread ends its
	// connection.
	inner, known := s.app.Server().Handler, s.app.Config().RequestMethods
	s.app.Server().Handler = func(ctx *fasthttp.RequestCtx) {
		defer s.observe(ctx, time.Now())
		defer closeIfBodyUnread(ctx)
		if !slices.Contains(known, string(ctx.Method())) {
			s.unknownMethod(ctx)
			return
		}
		inner(ctx)
	}
	s.app.Use(s.recoverPanic, s.preflight)

	s.handle(fiber.MethodGet, "/", public, s.root)
	s.handle(fiber.MethodGet, "/health", public, s.health)
	s.handle(fiber.MethodGet, "/ready", public, s.ready)
	if cfg.MetricsAddr == "" { // else serve answers it on that address only, and here it is an unknown path (404)
		s.handle(fiber.MethodGet, "/metrics", public, adaptor.HTTPHandler(s.metrics.Handler()))
	}
	s.handle(fiber.MethodGet, "/openapi.json", public, serveOpenAPI)
	s.handle(fiber.MethodGet, "/docs", public, serveDocsPage)
	s.handle(fiber.MethodGet, "/console", public, serveConsole)
	s.handle(fiber.MethodGet, "/console/:file", public, serveConsoleAsset)
	s.handle(fiber.MethodGet, "/v1/notices", readKey, s.searchNotices)
	s.handle(fiber.MethodGet, "/v1/notices/:id", readKey, s.getNotice)
	s.handle(fiber.MethodGet, "/v1/companies", readKey, s.findCompanies)
	s.handle(fiber.MethodGet, "/v1/companies/:id", readKey, s.getCompany)
	s.handle(fiber.MethodGet, "/v1/filters", readKey, s.filters)
	s.handle(fiber.MethodGet, "/v1/stats", readKey, s.stats)
	s.handle(fiber.MethodPost, "/v1/watches", accountKey, s.createWatch)
	s.handle(fiber.MethodGet, "/v1/watches", accountKey, s.listWatches)
	s.handle(fiber.MethodGet, "/v1/watches/:id", accountKey, s.getWatch)
	s.handle(fiber.MethodPatch, "/v1/watches/:id", accountKey, s.patchWatch)
	s.handle(fiber.MethodDelete, "/v1/watches/:id", accountKey, s.deleteWatch)
	s.handle(fiber.MethodGet, "/v1/watches/:id/matches", accountKey, s.watchMatches)
	s.handle(fiber.MethodPost, "/v1/match", readKey, s.screen)
	s.handle(fiber.MethodPost, "/v1/watches/:id/webhook", accountKey, s.registerWebhook)
	s.handle(fiber.MethodDelete, "/v1/watches/:id/webhook", accountKey, s.deleteWebhook)
	s.handle(fiber.MethodPost, "/v1/watches/:id/webhook/rotate", accountKey, s.rotateWebhookSecret)
	s.handle(fiber.MethodGet, "/v1/watches/:id/deliveries", accountKey, s.watchDeliveries)
	s.handle(fiber.MethodPost, "/v1/watches/:id/webhook/test", accountKey, s.testWebhook)
	s.handle(fiber.MethodPost, "/v1/watches/:id/deliveries/:dlv/retry", accountKey, s.retryDelivery)
	return s
}

// App returns the fiber app, for tests (app.Test) and embedding.
func (s *Server) App() *fiber.App { return s.app }

// Start listens on addr and serves until Shutdown; it returns nil after a
// clean shutdown.
func (s *Server) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Serve serves on an existing listener until Shutdown, admitting at most
// cfg.MaxConns connections at once and cfg.MaxConnsPerIP from one address.
func (s *Server) Serve(ln net.Listener) error {
	return s.app.Listener(newConnLimiter(ln, s.cfg.MaxConns, s.cfg.MaxConnsPerIP))
}

// withServerDefaults fills the HTTP settings a caller left zero (tests
// build configs by hand) from config.Default.
func withServerDefaults(cfg config.Config) config.Config {
	d := config.Default()
	for _, f := range []struct{ v, def *int }{
		{&cfg.MaxBodyBytes, &d.MaxBodyBytes}, {&cfg.MaxSmallBodyBytes, &d.MaxSmallBodyBytes},
		{&cfg.MaxConns, &d.MaxConns}, {&cfg.MaxConnsPerIP, &d.MaxConnsPerIP}, {&cfg.HeavyConcurrency, &d.HeavyConcurrency},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	for _, f := range []struct{ v, def *time.Duration }{
		{&cfg.HeaderTimeout, &d.HeaderTimeout}, {&cfg.BodyTimeout, &d.BodyTimeout},
		{&cfg.WriteTimeout, &d.WriteTimeout}, {&cfg.IdleTimeout, &d.IdleTimeout}, {&cfg.HeavyWait, &d.HeavyWait},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	cfg.MaxSmallBodyBytes = min(cfg.MaxSmallBodyBytes, cfg.MaxBodyBytes)
	return cfg
}

// Shutdown stops accepting connections and waits for requests in flight,
// and for the heavy slots they released to be freed, until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.app.ShutdownWithContext(ctx)
	// The Redis limiter frees released heavy slots in the background:
	// they are written before the caller closes its client.
	if f, ok := s.limiter.(interface{ Flush(context.Context) error }); ok {
		err = errors.Join(err, f.Flush(ctx))
	}
	return err
}

// handle registers a route: it is added to the route table that decides 404
// and 405 before authentication, then to fiber with the access check in
// front of the handler. GET routes also answer HEAD (same headers, no body).
func (s *Server) handle(method, path string, acc access, h fiber.Handler) {
	chain := []fiber.Handler{h}
	switch acc {
	case readKey:
		auth := s.authenticate
		if method == fiber.MethodGet { // reads, and HEAD below: they may run early (earlyread.go)
			auth = s.authenticateRead
		}
		chain = []fiber.Handler{auth, s.limitRequest, h}
	case accountKey:
		chain = []fiber.Handler{s.authenticate, requireAccountKey, s.limitRequest, h}
	}
	s.app.Add(method, path, chain...)
	if method == fiber.MethodGet {
		s.app.Add(fiber.MethodHead, path, chain...)
	}
	for i := range s.routes {
		if s.routes[i].path == path {
			s.routes[i].methods = append(s.routes[i].methods, method)
			return
		}
	}
	s.routes = append(s.routes, route{path: path, segments: splitPath(path), methods: []string{method}})
}

// recoverPanic turns a panic in any later handler into a logged 500
// server_error; the panic value never reaches the client.
func (s *Server) recoverPanic(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic while serving request", "method", c.Method(), "path", c.Path(),
				"panic", r, "stack", string(debug.Stack()))
			err = errs.New(errs.ServerError, serverErrorMessage)
		}
	}()
	return c.Next()
}
