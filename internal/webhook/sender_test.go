package webhook

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-github/v75/github"
)

// trustFile writes srv's certificate to a PEM file in t.TempDir.
func trustFile(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newSender builds a Sender or fails the test.
func newSender(t *testing.T, cfg SenderConfig) *Sender {
	t.Helper()
	s, err := NewSender(cfg)
	if err != nil {
		t.Fatalf("NewSender: %v", err)
	}
	return s
}

// server starts a TLS receiver that counts its requests.
func server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func request(url string) Request {
	return Request{URL: url, DeliveryID: "dlv_test", Secret: "whsec_test", Body: []byte(`{"watch_id":"wch_1"}`)}
}

func TestSendStatus(t *testing.T) {
	tests := []struct {
		status  int
		ok      bool
		lastErr string
	}{
		{200, true, ""},
		{204, true, ""},
		{202, true, ""},
		{502, false, "HTTP 502"},
		{500, false, "HTTP 500"},
		{404, false, "HTTP 404"},
		{401, false, "HTTP 401"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			srv, hits := server(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, "answer")
			})
			s := newSender(t, SenderConfig{AllowPrivate: true, CAFile: trustFile(t, srv)})
			got := s.Send(t.Context(), request(srv.URL+"/hook"))
			if got.OK != tt.ok || got.StatusCode != tt.status || got.LastError != tt.lastErr {
				t.Fatalf("Send = %+v, want OK %v, status %d, last_error %q", got, tt.ok, tt.status, tt.lastErr)
			}
			if hits.Load() != 1 {
				t.Fatalf("receiver got %d requests, want 1", hits.Load())
			}
		})
	}
}

func TestSendRedirectNotFollowed(t *testing.T) {
	for _, code := range []int{301, 302, 303, 307, 308} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			target, targetHits := server(t, func(w http.ResponseWriter, r *http.Request) {})
			srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL+"/elsewhere", code)
			})
			// Trust both (same httptest certificate) so a followed redirect would succeed.
			s := newSender(t, SenderConfig{AllowPrivate: true, CAFile: trustFile(t, srv)})
			got := s.Send(t.Context(), request(srv.URL+"/hook"))
			want := fmt.Sprintf("redirect HTTP %d not followed", code)
			if got.OK || got.StatusCode != code || got.LastError != want {
				t.Fatalf("Send = %+v, want failure %q", got, want)
			}
			if n := targetHits.Load(); n != 0 {
				t.Fatalf("redirect target was hit %d times, want 0", n)
			}
		})
	}
}

func TestSendSignedRequest(t *testing.T) {
	type seen struct {
		method string
		header http.Header
		body   []byte
	}
	got := make(chan seen, 1)
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.Header.Clone(), body}
		w.WriteHeader(http.StatusNoContent)
	})
	now := time.Date(2026, 11, 21, 3, 4, 5, 0, time.UTC)
	s := newSender(t, SenderConfig{AllowPrivate: true, CAFile: trustFile(t, srv), Now: func() time.Time { return now }})

	secret := NewSecret()
	body := []byte(`{"watch_id":"wch_1","delivered_at":"2026-11-21T03:04:05.000Z","notice":{"id":"ntc_a"}}`)
	id := DeliveryID("wch_1", "ntc_a")
	res := s.Send(t.Context(), Request{URL: srv.URL + "/hook?x=1", DeliveryID: id, Secret: secret, Body: body})
	if !res.OK || !res.At.Equal(now) {
		t.Fatalf("Send = %+v, want OK at %s", res, now)
	}
	r := <-got
	checks := []struct{ name, got, want string }{
		{"method", r.method, "POST"},
		{"body", string(r.body), string(body)},
		{"Content-Type", r.header.Get("Content-Type"), "application/json"},
		{"X-Notices-Delivery", r.header.Get("X-Notices-Delivery"), id},
		{"User-Agent", r.header.Get("User-Agent"), "noticesd-webhook/1"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	sig := r.header.Get("X-Notices-Signature")
	if err := github.ValidateSignature(sig, r.body, []byte(secret)); err != nil {
		t.Fatalf("go-github rejects X-Notices-Signature %q: %v", sig, err)
	}
	if err := github.ValidateSignature(sig, r.body, []byte(NewSecret())); err == nil {
		t.Fatal("go-github accepts the signature under another secret")
	}
}

func TestSendTimeout(t *testing.T) {
	unblock := make(chan struct{})
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-unblock:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(unblock) }) // runs before srv.Close
	s := newSender(t, SenderConfig{Timeout: 300 * time.Millisecond, AllowPrivate: true, CAFile: trustFile(t, srv)})
	got := s.Send(t.Context(), request(srv.URL))
	if got.OK || got.LastError != "timeout after 300ms" {
		t.Fatalf("Send = %+v, want last_error %q", got, "timeout after 300ms")
	}
}

func TestSendConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := newSender(t, SenderConfig{AllowPrivate: true})
	got := s.Send(t.Context(), request("https://"+addr+"/hook"))
	if got.OK || got.LastError != "connection refused" {
		t.Fatalf("Send = %+v, want last_error %q", got, "connection refused")
	}
}

func TestSendBlockedAddress(t *testing.T) {
	srv, hits := server(t, func(w http.ResponseWriter, r *http.Request) {})
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	tests := []struct {
		name, url, want string
		prefixOnly      bool
	}{
		{"ip literal", srv.URL, "blocked address 127.0.0.1", false},
		{"mapped ip literal", "https://[::ffff:127.0.0.1]:" + port, "blocked address 127.0.0.1", false},
		// A name is checked on the address it resolves to at dial time.
		{"hostname resolved to loopback", "https://localhost:" + port, "blocked address ", true},
	}
	s := newSender(t, SenderConfig{CAFile: trustFile(t, srv)})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.Send(t.Context(), request(tt.url))
			match := got.LastError == tt.want
			if tt.prefixOnly {
				match = strings.HasPrefix(got.LastError, tt.want)
			}
			if got.OK || !match {
				t.Fatalf("Send = %+v, want last_error %q", got, tt.want)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("blocked receiver was hit %d times, want 0", n)
	}
}

func TestSendUntrustedCertificate(t *testing.T) {
	srv, hits := server(t, func(w http.ResponseWriter, r *http.Request) {})
	s := newSender(t, SenderConfig{AllowPrivate: true}) // system roots only
	got := s.Send(t.Context(), request(srv.URL))
	if got.OK || got.LastError != "tls: certificate signed by unknown authority" {
		t.Fatalf("Send = %+v, want a TLS unknown-authority failure", got)
	}
	if hits.Load() != 0 {
		t.Fatal("a request reached the receiver over an unverified connection")
	}
}

func TestSendInvalidURL(t *testing.T) {
	srv, hits := server(t, func(w http.ResponseWriter, r *http.Request) {})
	s := newSender(t, SenderConfig{AllowPrivate: true, CAFile: trustFile(t, srv)})
	for _, u := range []string{"http" + strings.TrimPrefix(srv.URL, "https"), "https://u:p@" + strings.TrimPrefix(srv.URL, "https://"), "", "/relative"} {
		t.Run(u, func(t *testing.T) {
			got := s.Send(t.Context(), request(u))
			if got.OK || !strings.HasPrefix(got.LastError, "invalid webhook url") {
				t.Fatalf("Send(%q) = %+v, want an invalid webhook url failure", u, got)
			}
		})
	}
	if hits.Load() != 0 {
		t.Fatal("an invalid URL reached the receiver")
	}
}

// countingTransport counts the response body bytes the Sender reads.
type countingTransport struct {
	next http.RoundTripper
	read *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if resp != nil {
		resp.Body = countingBody{resp.Body, c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	read *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// A practically endless response body (it stops at 64 MiB so that a broken
// bound fails the test instead of hanging it) is read only up to
// MaxResponseBytes, and a 2xx status is still a success.
func TestSendEndlessBody(t *testing.T) {
	const stopAt = 64 << 20
	var written atomic.Int64
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 4096))
		for written.Load() < stopAt {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	s := newSender(t, SenderConfig{Timeout: time.Hour, AllowPrivate: true, CAFile: trustFile(t, srv)})
	var read atomic.Int64
	s.client.Transport = countingTransport{s.client.Transport, &read}
	got := s.Send(t.Context(), request(srv.URL))
	if !got.OK || got.StatusCode != 200 {
		t.Fatalf("Send = %+v, want OK", got)
	}
	if n := read.Load(); n != MaxResponseBytes {
		t.Fatalf("Sender read %d body bytes, want exactly %d", n, MaxResponseBytes)
	}
}

func TestSendPerHostLimit(t *testing.T) {
	const perHost, sends = 2, 6
	var inflight, maxInflight atomic.Int64
	arrived := make(chan struct{}, sends)
	release := make(chan struct{})
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		for m := maxInflight.Load(); n > m && !maxInflight.CompareAndSwap(m, n); m = maxInflight.Load() {
		}
		arrived <- struct{}{}
		<-release
		inflight.Add(-1)
	})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // runs before srv.Close, even when the test fails
	s := newSender(t, SenderConfig{PerHost: perHost, AllowPrivate: true, CAFile: trustFile(t, srv)})
	waited := make(chan struct{}, sends)
	s.limit.onWait = func(string) { waited <- struct{}{} }

	results := make(chan Result, sends)
	for range sends {
		go func() { results <- s.Send(t.Context(), request(srv.URL)) }()
	}
	// Every send either reaches the receiver or waits for a slot.
	var arrivals, waits int
	for arrivals+waits < sends {
		select {
		case <-arrived:
			arrivals++
		case <-waited:
			waits++
		}
	}
	if arrivals != perHost || waits != sends-perHost {
		t.Fatalf("with all receivers held: %d in flight and %d waiting, want %d and %d", arrivals, waits, perHost, sends-perHost)
	}
	unblock()
	for range sends {
		if r := <-results; !r.OK {
			t.Fatalf("Send = %+v, want OK", r)
		}
	}
	if m := maxInflight.Load(); m != perHost {
		t.Fatalf("receiver saw at most %d concurrent requests, want %d", m, perHost)
	}
}

func TestNewSender(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     SenderConfig
		mention string // "" means no error
	}{
		{"defaults", SenderConfig{}, ""},
		{"missing CA file", SenderConfig{CAFile: filepath.Join(dir, "absent.pem")}, "NOTICES_WEBHOOK_CA_FILE"},
		{"CA file without PEM", SenderConfig{CAFile: notPEM}, "BEGIN CERTIFICATE"},
		{"negative timeout", SenderConfig{Timeout: -time.Second}, "NOTICES_DELIVERY_TIMEOUT"},
		{"negative per host", SenderConfig{PerHost: -1}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSender(tt.cfg)
			if tt.mention == "" {
				if err != nil {
					t.Fatalf("NewSender = %v", err)
				}
				if s.Timeout() != 10*time.Second || s.limit.per != 4 {
					t.Fatalf("defaults: timeout %s, per host %d; want 10s and 4", s.Timeout(), s.limit.per)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("NewSender error = %v, want one mentioning %q", err, tt.mention)
			}
		})
	}
}

func TestDescribeError(t *testing.T) {
	op := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"dns not found", &net.DNSError{Err: "no such host", Name: "example.invalid", IsNotFound: true}, "dns: no such host example.invalid"},
		{"dns timeout", &net.DNSError{Err: "i/o timeout", Name: "slow.example", IsTimeout: true}, "dns: lookup of slow.example timed out"},
		{"dns other", &net.DNSError{Err: "server misbehaving", Name: "x.example"}, "dns: lookup of x.example failed: server misbehaving"},
		{"refused", op(os.NewSyscallError("connect", syscall.ECONNREFUSED)), "connection refused"},
		{"reset", op(os.NewSyscallError("read", syscall.ECONNRESET)), "connection reset"},
		{"host unreachable", op(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), "host unreachable"},
		{"eof", fmt.Errorf("wrapped: %w", io.EOF), "connection closed before a response"},
		{"unknown authority", x509.UnknownAuthorityError{}, "tls: certificate signed by unknown authority"},
		{"hostname", x509.HostnameError{Host: "hooks.example.com", Certificate: &x509.Certificate{}}, "tls: certificate is not valid for hooks.example.com"},
		{"expired", x509.CertificateInvalidError{Reason: x509.Expired}, "tls: certificate has expired or is not yet valid"},
		{"other", errors.New("something odd"), "something odd"},
		{"long", errors.New(strings.Repeat("z", 500)), strings.Repeat("z", 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeError(tt.err, 10*time.Second); got != tt.want {
				t.Fatalf("describeError = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHostLimiter(t *testing.T) {
	l := newHostLimiter(2)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var releases []func()
	for range 2 {
		r, err := l.acquire(t.Context(), "a:443")
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	if _, err := l.acquire(done, "a:443"); err == nil {
		t.Fatal("a third slot for a:443 was granted with a limit of 2")
	}
	other, err := l.acquire(done, "b:443")
	if err != nil {
		t.Fatalf("another endpoint is limited by a:443's slots: %v", err)
	}
	other()
	releases[0]()
	r, err := l.acquire(done, "a:443")
	if err != nil {
		t.Fatalf("freed slot not granted: %v", err)
	}
	r()
	releases[1]()
	l.mu.Lock()
	n := len(l.hosts)
	l.mu.Unlock()
	if n != 0 {
		t.Fatalf("limiter still tracks %d idle endpoints, want 0", n)
	}
}

// TestSendObserve: Observe sees the result of every attempt (for the
// delivery metrics), and no cancelled one.
func TestSendObserve(t *testing.T) {
	status := http.StatusOK
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) })
	var seen []Result
	s := newSender(t, SenderConfig{AllowPrivate: true, CAFile: trustFile(t, srv), Observe: func(r Result) { seen = append(seen, r) }})
	s.Send(t.Context(), request(srv.URL+"/hook"))
	status = http.StatusBadGateway
	s.Send(t.Context(), request(srv.URL+"/hook"))
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	s.Send(cancelled, request(srv.URL+"/hook"))
	if len(seen) != 2 || !seen[0].OK || seen[1].OK || seen[1].LastError != "HTTP 502" {
		t.Fatalf("observed %+v, want one success and one HTTP 502", seen)
	}
}

// TestSendSignsWithCurrentSecret: Request.Current is asked once the
// endpoint's slot is held, so a secret rotated (or a webhook moved) while
// the attempt waited for the slot signs (and addresses) what is sent; an
// error from it ends the attempt with nothing sent.
func TestSendSignsWithCurrentSecret(t *testing.T) {
	tests := []struct {
		name     string
		path     string // what Current answers ("" : an error)
		secret   string
		wantPath string // "" : nothing sent
	}{
		{"rotated while waiting", "/hook", "whsec_new", "/hook"},
		{"moved while waiting", "/moved", "whsec_moved", "/moved"},
		{"removed while waiting", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			type seen struct {
				path, sig string
				body      []byte
			}
			got := make(chan seen, 2)
			arrived, hold := make(chan struct{}), make(chan struct{})
			srv, hits := server(t, func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if r.URL.Path == "/hold" {
					arrived <- struct{}{}
					<-hold
				}
				got <- seen{r.URL.Path, r.Header.Get("X-Notices-Signature"), body}
			})
			var once sync.Once
			unhold := func() { once.Do(func() { close(hold) }) }
			t.Cleanup(unhold)
			s := newSender(t, SenderConfig{PerHost: 1, AllowPrivate: true, CAFile: trustFile(t, srv)})
			waited := make(chan struct{}, 1)
			s.limit.onWait = func(string) { waited <- struct{}{} }

			first := make(chan Result, 1)
			go func() { first <- s.Send(t.Context(), request(srv.URL+"/hold")) }()
			<-arrived // the held request has the endpoint's one slot

			var asked atomic.Int64
			req := request(srv.URL + "/hook")
			req.Secret = "whsec_old"
			req.Current = func(context.Context) (string, string, error) {
				asked.Add(1)
				if tc.path == "" {
					return "", "", errors.New("no webhook")
				}
				return srv.URL + tc.path, tc.secret, nil
			}
			second := make(chan Result, 1)
			go func() { second <- s.Send(t.Context(), req) }()
			<-waited
			if n := asked.Load(); n != 0 {
				t.Fatalf("Current asked %d times before the endpoint's slot was free", n)
			}
			unhold()
			if r := <-first; !r.OK {
				t.Fatalf("held send = %+v", r)
			}
			<-got
			r := <-second
			if tc.wantPath == "" {
				if r.NotSent == nil || r.OK || hits.Load() != 1 {
					t.Fatalf("Send = %+v with %d requests received, want NotSent and only the held one", r, hits.Load())
				}
				return
			}
			if !r.OK || r.NotSent != nil {
				t.Fatalf("Send = %+v, want OK", r)
			}
			sent := <-got
			if sent.path != tc.wantPath {
				t.Fatalf("sent to %s, want %s", sent.path, tc.wantPath)
			}
			if !Verify(tc.secret, sent.body, sent.sig) || Verify("whsec_old", sent.body, sent.sig) {
				t.Fatalf("signature %s does not verify with %s only", sent.sig, tc.secret)
			}
		})
	}
}

// TestSendGivesUpOnAMovingWebhook: a webhook whose URL changes every time
// the attempt asks ends the attempt unsent, never sending the new secret
// to an old URL.
func TestSendGivesUpOnAMovingWebhook(t *testing.T) {
	srv, hits := server(t, func(http.ResponseWriter, *http.Request) {})
	s := newSender(t, SenderConfig{AllowPrivate: true, CAFile: trustFile(t, srv)})
	n := 0
	req := request(srv.URL + "/0")
	req.Current = func(context.Context) (string, string, error) {
		n++
		return fmt.Sprintf("%s/%d", srv.URL, n), fmt.Sprintf("whsec_%d", n), nil
	}
	r := s.Send(t.Context(), req)
	if r.NotSent == nil || r.OK || hits.Load() != 0 {
		t.Fatalf("Send = %+v with %d requests received; want NotSent and nothing sent", r, hits.Load())
	}
	if n != maxURLChanges+1 {
		t.Fatalf("Current asked %d times, want %d", n, maxURLChanges+1)
	}
}

// TestSendBuildsBodyOnceTheSlotIsHeld: a request that waits for its
// endpoint's slot builds its body only once it holds the slot, so a time in
// the body (delivered_at) is that of the request, not of the wait; the
// body built is the one sent and signed, and Result.At is the send's time.
func TestSendBuildsBodyOnceTheSlotIsHeld(t *testing.T) {
	var mu sync.Mutex
	clock := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	bodies := make(chan string, 2)
	release := make(chan struct{})
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if got, want := r.Header.Get("X-Notices-Signature"), Sign("whsec_test", b); got != want {
			t.Errorf("signature %q, want %q over the body sent", got, want)
		}
		bodies <- string(b)
		<-release
	})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	s := newSender(t, SenderConfig{PerHost: 1, AllowPrivate: true, CAFile: trustFile(t, srv), Now: now})
	waited := make(chan struct{}, 1)
	s.limit.onWait = func(string) { waited <- struct{}{} }
	build := func() ([]byte, error) { return []byte(`{"delivered_at":"` + now().Format(time.RFC3339) + `"}`), nil }

	first := make(chan Result, 1)
	go func() {
		first <- s.Send(t.Context(), Request{URL: srv.URL, DeliveryID: "dlv_1", Secret: "whsec_test", Build: build})
	}()
	if b := <-bodies; b != `{"delivered_at":"2026-11-24T07:00:00Z"}` {
		t.Fatalf("first body %s", b)
	}
	second := make(chan Result, 1)
	go func() {
		second <- s.Send(t.Context(), Request{URL: srv.URL, DeliveryID: "dlv_2", Secret: "whsec_test", Build: build})
	}()
	<-waited // the second holds no slot yet
	mu.Lock()
	clock = clock.Add(30 * time.Second)
	mu.Unlock()
	unblock()
	if b := <-bodies; b != `{"delivered_at":"2026-11-24T07:00:30Z"}` {
		t.Errorf("the body of the request that waited for its slot is %s; want it built when sent, at 07:00:30", b)
	}
	if r := <-second; !r.OK || !r.At.Equal(clock) {
		t.Errorf("second Send = %+v; want OK at %s", r, clock)
	}
	<-first
}
