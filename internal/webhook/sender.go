package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

// DefaultTimeout bounds one delivery attempt when SenderConfig.Timeout is 0
// (SPEC.md: a response within 10 seconds).
const DefaultTimeout = 10 * time.Second

// DefaultPerHost is the number of concurrent requests per endpoint when
// SenderConfig.PerHost is 0.
const DefaultPerHost = 4

// MaxResponseBytes is how much of a response body is read before the
// connection is closed; the same bound applies to the response headers.
const MaxResponseBytes = 64 << 10

// UserAgent is the User-Agent header of every delivery request.
const UserAgent = "noticesd-webhook/1"

// SenderConfig configures a Sender. The zero value is usable: 10 s timeout,
// public targets only, system roots, 4 requests per endpoint, time.Now.
type SenderConfig struct {
	// Timeout bounds a whole attempt: dial, TLS handshake, request, response
	// headers and the read of the body (NOTICES_DELIVERY_TIMEOUT). 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// AllowPrivate lets deliveries reach addresses BlockedIP refuses
	// (NOTICES_WEBHOOK_ALLOW_PRIVATE), for development.
	AllowPrivate bool
	// CAFile names a PEM file of extra root certificates trusted in addition
	// to the system pool (NOTICES_WEBHOOK_CA_FILE). Empty means none.
	CAFile string
	// PerHost is the most requests in flight at once to one endpoint
	// (host:port). 0 means DefaultPerHost.
	PerHost int
	// Now is the clock for Result.At and Sender.Now. nil means time.Now.
	Now func() time.Time
	// Observe, if set, is called with the Result of every attempt that
	// was not cancelled (for metrics). It runs on the attempt: keep it
	// short.
	Observe func(Result)
}

// Request is one delivery attempt.
type Request struct {
	// URL is the registered webhook URL.
	URL string
	// DeliveryID is sent as X-Notices-Delivery (see DeliveryID).
	DeliveryID string
	// Secret is the watch's secret; the body is signed with it unless
	// Current gives a newer one.
	Secret string
	// Body is the exact JSON sent and signed (see Payload), unless Build
	// is set.
	Body []byte
	// Build, when set, makes the body once the endpoint's slot is held
	// (after Current), so that times in it are those of the request and
	// not of the wait for the slot (Payload's delivered_at). An error ends
	// the attempt unsent (Result.NotSent).
	Build func() ([]byte, error)
	// Current, when set, is called once the endpoint's slot is held, just
	// before the body is signed: it returns the webhook's URL and secret as
	// they are now. An attempt that waited (for its claim, the notice or a
	// slot) while the secret was rotated is then signed with the new one.
	// When the URL changed, the attempt takes the new endpoint's slot and
	// asks again. An error ends the attempt unsent (Result.NotSent).
	Current func(ctx context.Context) (url, secret string, err error)
	// SlotWait, when positive, bounds the wait for one of the endpoint's
	// slots: past it the attempt ends unsent with Result.NotSent
	// ErrEndpointBusy. 0 waits as long as the context allows.
	SlotWait time.Duration
}

// ErrEndpointBusy is Result.NotSent of an attempt whose Request.SlotWait
// ran out before one of its endpoint's slots was free.
var ErrEndpointBusy = errors.New("webhook: every slot of the endpoint stayed taken for the request's SlotWait")

// Result is the outcome of one attempt.
type Result struct {
	// OK is true when the endpoint answered with any 2xx status.
	OK bool
	// StatusCode is the HTTP status received, 0 when none was.
	StatusCode int
	// LastError is "" on success, otherwise the delivery record's last_error
	// text: "HTTP 502", "timeout after 10s", "connection refused",
	// "redirect HTTP 301 not followed", "blocked address 10.0.0.7",
	// "tls: certificate signed by unknown authority",
	// "dns: no such host example.invalid", and similar short forms.
	LastError string
	// At is when the request was made (its endpoint's slot held), by the
	// configured clock; for an attempt that ended before, when it started.
	At time.Time
	// NotSent is Request.Current's error when it ended the attempt before
	// anything was sent; OK and LastError then say nothing.
	NotSent error
}

// Sender performs delivery attempts. It is safe for concurrent use; build one
// per process with NewSender.
type Sender struct {
	client       *http.Client
	timeout      time.Duration
	allowPrivate bool
	now          func() time.Time
	limit        *hostLimiter
	observe      func(Result)
}

// NewSender builds a Sender from cfg. It fails when CAFile cannot be read or
// holds no PEM certificate, and when Timeout or PerHost is negative.
func NewSender(cfg SenderConfig) (*Sender, error) {
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("webhook delivery timeout %s is negative; set NOTICES_DELIVERY_TIMEOUT to a positive duration such as 10s", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.PerHost < 0 {
		return nil, fmt.Errorf("webhook per-endpoint concurrency %d is negative; use a positive number or 0 for the default %d", cfg.PerHost, DefaultPerHost)
	}
	if cfg.PerHost == 0 {
		cfg.PerHost = DefaultPerHost
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	roots, err := rootPool(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	s := &Sender{
		timeout:      cfg.Timeout,
		allowPrivate: cfg.AllowPrivate,
		now:          cfg.Now,
		limit:        newHostLimiter(cfg.PerHost),
		observe:      cfg.Observe,
	}
	dialer := &net.Dialer{KeepAlive: 30 * time.Second, ControlContext: s.checkAddress}
	transport := &http.Transport{
		Proxy:                  nil, // never from the environment: the dial-time check must see the real target
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		MaxIdleConnsPerHost:    cfg.PerHost,
		MaxIdleConns:           100,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: MaxResponseBytes,
	}
	s.client = &http.Client{
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // never follow; the 3xx is the answer
		},
	}
	return s, nil
}

// rootPool returns the system roots plus the PEM certificates in caFile,
// or nil (meaning the system roots) when caFile is empty.
func rootPool(caFile string) (*x509.CertPool, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("webhook CA file (NOTICES_WEBHOOK_CA_FILE): %w; point it at a readable PEM file or unset it", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("webhook CA file %s (NOTICES_WEBHOOK_CA_FILE) holds no PEM certificate; it must contain one or more -----BEGIN CERTIFICATE----- blocks", caFile)
	}
	return pool, nil
}

// Now returns the Sender's clock reading; callers stamp delivered_at with it.
func (s *Sender) Now() time.Time { return s.now() }

// Timeout returns the bound on one attempt.
func (s *Sender) Timeout() time.Duration { return s.timeout }

// blockedError is returned by the dial-time check.
type blockedError struct{ addr netip.Addr }

func (e *blockedError) Error() string { return "blocked address " + e.addr.String() }

// checkAddress runs on every new connection with the resolved IP being
// dialled, so a name that resolves (or re-resolves) to a private address is
// refused no matter what it resolved to at registration.
func (s *Sender) checkAddress(_ context.Context, _, address string, _ syscall.RawConn) error {
	if s.allowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("unexpected dial address %q: %w", address, err)
	}
	addr := ap.Addr().WithZone("")
	if blockReason(addr) != "" {
		return &blockedError{addr: addr.Unmap()}
	}
	return nil
}

// Send makes one delivery attempt: a POST of req.Body to req.URL with
// Content-Type application/json, X-Notices-Signature Sign(req.Secret,
// req.Body), X-Notices-Delivery req.DeliveryID and User-Agent UserAgent.
// Any 2xx is success; every other outcome is a failure described in
// Result.LastError. Redirects are never followed. The attempt, from dial to
// reading the body, is bounded by the configured timeout; waiting for a free
// per-endpoint slot is not counted and ends only with ctx. At most
// MaxResponseBytes of the body are read. The status line decides the outcome:
// a 2xx whose body then stalls or breaks is still a success, since the
// endpoint has accepted the delivery.
func (s *Sender) Send(ctx context.Context, req Request) Result {
	res := s.send(ctx, req)
	if s.observe != nil && ctx.Err() == nil && res.NotSent == nil {
		s.observe(res)
	}
	return res
}

// maxURLChanges bounds how often one attempt follows a webhook URL that
// changed while it waited for an endpoint's slot.
const maxURLChanges = 3

func (s *Sender) send(ctx context.Context, req Request) Result {
	res := Result{At: s.now()}
	var (
		u       *url.URL
		release func()
	)
	for changes := 0; ; changes++ {
		var err error
		u, err = url.Parse(req.URL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			res.LastError = "invalid webhook url: only absolute https:// URLs without user info are delivered to"
			return res
		}
		release, err = s.acquireSlot(ctx, endpointKey(u), req.SlotWait)
		if errors.Is(err, ErrEndpointBusy) {
			res.NotSent = err
			return res
		}
		if err != nil {
			res.LastError = "cancelled before sending"
			return res
		}
		if req.Current == nil {
			break
		}
		current, secret, err := req.Current(ctx)
		if err == nil && current != req.URL && changes == maxURLChanges {
			err = fmt.Errorf("webhook: the webhook URL changed %d times while this attempt waited for its endpoint", changes+1)
		}
		if err != nil {
			release()
			res.NotSent = err
			return res
		}
		req.Secret = secret
		if current == req.URL {
			break
		}
		release() // the webhook moved: take the new endpoint's slot
		req.URL = current
	}
	defer release()
	res.At = s.now()
	if req.Build != nil {
		body, err := req.Build()
		if err != nil {
			res.NotSent = err
			return res
		}
		req.Body = body
	}

	attempt, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(attempt, http.MethodPost, u.String(), bytes.NewReader(req.Body))
	if err != nil {
		res.LastError = "invalid webhook url: " + err.Error()
		return res
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("X-Notices-Signature", Sign(req.Secret, req.Body))
	hreq.Header.Set("X-Notices-Delivery", req.DeliveryID)
	hreq.Header.Set("User-Agent", UserAgent)

	resp, err := s.client.Do(hreq)
	if err != nil {
		res.LastError = s.describe(ctx, attempt, err)
		return res
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
	_ = resp.Body.Close()

	res.StatusCode = resp.StatusCode
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		res.OK = true
	case resp.StatusCode >= 300 && resp.StatusCode <= 399:
		res.LastError = fmt.Sprintf("redirect HTTP %d not followed", resp.StatusCode)
	default:
		res.LastError = fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return res
}

// acquireSlot takes one of the endpoint's slots, waiting at most wait
// when it is positive (then ErrEndpointBusy) and until ctx ends.
func (s *Sender) acquireSlot(ctx context.Context, endpoint string, wait time.Duration) (func(), error) {
	if wait <= 0 {
		return s.limit.acquire(ctx, endpoint)
	}
	bounded, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	release, err := s.limit.acquire(bounded, endpoint)
	if err != nil && ctx.Err() == nil {
		return nil, ErrEndpointBusy
	}
	return release, err
}

// endpointKey names the endpoint a URL reaches, for the per-endpoint limit.
func endpointKey(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// describe turns a failed round trip into the short last_error text. parent
// is the caller's context, attempt the one bounded by the timeout.
func (s *Sender) describe(parent, attempt context.Context, err error) string {
	var blocked *blockedError
	if errors.As(err, &blocked) {
		return blocked.Error()
	}
	if parent.Err() != nil {
		return "cancelled before a response"
	}
	if attempt.Err() != nil {
		return "timeout after " + s.timeout.String()
	}
	return describeError(err, s.timeout)
}

// describeError maps a transport error to a short, stable last_error text.
func describeError(err error, timeout time.Duration) string {
	var (
		dnsErr     *net.DNSError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		recordErr  tls.RecordHeaderError
		alertErr   tls.AlertError
		netErr     net.Error
	)
	switch {
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "dns: no such host " + dnsErr.Name
		}
		if dnsErr.IsTimeout {
			return "dns: lookup of " + dnsErr.Name + " timed out"
		}
		return "dns: lookup of " + dnsErr.Name + " failed: " + dnsErr.Err
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.As(err, &unknownCA):
		return "tls: certificate signed by unknown authority"
	case errors.As(err, &hostErr):
		return "tls: certificate is not valid for " + hostErr.Host
	case errors.As(err, &invalidErr):
		switch invalidErr.Reason {
		case x509.Expired:
			return "tls: certificate has expired or is not yet valid"
		default:
			return "tls: certificate is invalid"
		}
	case errors.As(err, &recordErr):
		return "tls: endpoint did not answer with TLS"
	case errors.As(err, &alertErr):
		return alertErr.Error() // already "tls: ..."
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before a response"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timeout after " + timeout.String()
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = ue.Err.Error()
	}
	const max = 200
	if len(msg) > max {
		msg = msg[:max]
	}
	return msg
}
