package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/errs"
)

// addAccountTestRoute registers GET /v1/_test/account, an account-key
// route that answers 200 {"ok":true}, for tests of the key checks.
func (f *fixture) addAccountTestRoute() {
	f.srv.handle(http.MethodGet, "/v1/_test/account", accountKey, func(c *fiber.Ctx) error {
		return writeJSON(c, http.StatusOK, map[string]bool{"ok": true})
	})
}

// TestCheckOrder is the order of checks on a /v1/ route: route
// 404/405, then 401, 402 subscription_inactive, 403, 400 validation and
// the resource's 404.
func TestCheckOrder(t *testing.T) {
	f := newFixture(t)
	f.addAccountTestRoute()
	tests := []struct {
		name      string
		method    string
		target    string
		key       string
		status    int
		code      string
		wantAllow string
	}{
		{"unknown route without key", "GET", "/v1/nothing", "", 404, "not_found", ""},
		{"unknown route with key", "GET", "/v1/nothing", f.read, 404, "not_found", ""},
		{"unknown top-level route", "GET", "/nothing", "", 404, "not_found", ""},
		{"paths are case-sensitive", "GET", "/V1/NOTICES", f.read, 404, "not_found", ""},
		{"too many segments", "GET", "/v1/notices/a/b", f.read, 404, "not_found", ""},
		{"wrong method without key is 405", "POST", "/v1/notices", "", 405, "method_not_allowed", "GET, HEAD"},
		{"wrong method on a parameter route", "DELETE", "/v1/notices/ntc_x", "", 405, "method_not_allowed", "GET, HEAD"},
		{"wrong method on health", "POST", "/health", "", 405, "method_not_allowed", "GET, HEAD"},
		{"OPTIONS is a wrong method", "OPTIONS", "/v1/stats", "", 405, "method_not_allowed", "GET, HEAD"},
		{"method fiber does not know", "PROPFIND", "/v1/filters", "", 405, "method_not_allowed", "GET, HEAD"},
		{"method fiber does not know on unknown route", "PROPFIND", "/nowhere", "", 404, "not_found", ""},
		{"no key", "GET", "/v1/notices", "", 401, "unauthorised", ""},
		{"no key before bad parameter", "GET", "/v1/notices?limit=abc", "", 401, "unauthorised", ""},
		{"no key before malformed company", "GET", "/v1/companies/12", "", 401, "unauthorised", ""},
		{"unknown key", "GET", "/v1/notices", "nk_read_nope", 401, "unauthorised", ""},
		{"lapsed read key on search", "GET", "/v1/notices", f.lapsedRead, 402, "subscription_inactive", ""},
		{"lapsed read key on notice", "GET", "/v1/notices/ntc_unknown", f.lapsedRead, 402, "subscription_inactive", ""},
		{"lapsed read key on company", "GET", "/v1/companies/123456780", f.lapsedRead, 402, "subscription_inactive", ""},
		{"lapsed read key on filters", "GET", "/v1/filters", f.lapsedRead, 402, "subscription_inactive", ""},
		{"lapsed read key on stats", "GET", "/v1/stats", f.lapsedRead, 402, "subscription_inactive", ""},
		{"lapsed account key", "GET", "/v1/notices", f.lapsedAcct, 402, "subscription_inactive", ""},
		{"lapsed before bad parameter", "GET", "/v1/notices?limit=abc", f.lapsedRead, 402, "subscription_inactive", ""},
		{"lapsed read key before account_required", "GET", "/v1/_test/account", f.lapsedRead, 402, "subscription_inactive", ""},
		{"read key on account route", "GET", "/v1/_test/account", f.read, 403, "account_required", ""},
		{"no key on account route", "GET", "/v1/_test/account", "", 401, "unauthorised", ""},
		{"malformed company before not found", "GET", "/v1/companies/12", f.read, 400, "invalid_acn", ""},
		{"well-formed unknown company", "GET", "/v1/companies/444444446", f.read, 404, "not_found", ""},
		{"unknown notice", "GET", "/v1/notices/ntc_doesnotexist", f.read, 404, "not_found", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.do(t, tt.method, tt.target, tt.key)
			wantError(t, res, tt.status, tt.code)
			if got := res.header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow %q, want %q", got, tt.wantAllow)
			}
		})
	}

	t.Run("account key on account route", func(t *testing.T) {
		if res := f.do(t, "GET", "/v1/_test/account", f.acct); res.status != 200 {
			t.Errorf("status %d, want 200; body %s", res.status, res.body)
		}
	})
	t.Run("405 message names the method to use", func(t *testing.T) {
		msg := errorMessage(t, f.do(t, "POST", "/v1/notices", ""))
		if !strings.Contains(msg, "POST") || !strings.Contains(msg, "use GET") {
			t.Errorf("message %q does not name POST and GET", msg)
		}
	})
}

// TestRouting covers fiber behaviours that must not change the contract.
func TestRouting(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name   string
		method string
		target string
		status int
	}{
		{"trailing slash is the same route", "GET", "/v1/notices/", 200},
		{"trailing slash on health", "GET", "/health/", 200},
		{"HEAD answers like GET", "HEAD", "/v1/notices", 200},
		{"HEAD on health", "HEAD", "/health", 200},
		{"HEAD without key", "HEAD", "/v1/notices", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.do(t, tt.method, tt.target, map[bool]string{true: f.read}[tt.status == 200])
			if res.status != tt.status {
				t.Errorf("status %d, want %d; body %s", res.status, tt.status, res.body)
			}
			if tt.method == "HEAD" && len(res.body) != 0 {
				t.Errorf("HEAD returned a body: %s", res.body)
			}
		})
	}
}

// TestAPIKey covers the three places a key may be sent.
func TestAPIKey(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name   string
		target string
		header string
		status int
	}{
		{"header", "/v1/notices", f.read, 200},
		{"api_key query parameter", "/v1/notices?api_key=" + f.read, "", 200},
		{"account key reads too", "/v1/notices", f.acct, 200},
		{"header wins over query parameter", "/v1/notices?api_key=" + f.read, "nk_read_wrong", 401},
		{"unknown key in query parameter", "/v1/notices?api_key=nk_read_wrong", "", 401},
		{"empty query parameter", "/v1/notices?api_key=", "", 401},
		{"lapsed key in query parameter", "/v1/stats?api_key=" + f.lapsedRead, "", 402},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.do(t, "GET", tt.target, tt.header)
			if res.status != tt.status {
				t.Errorf("status %d, want %d; body %s", res.status, tt.status, res.body)
			}
		})
	}
	f.addAccountTestRoute()
	authTests := []struct {
		name   string
		auth   string
		xKey   string
		target string
		status int
	}{
		{"bearer", "Bearer " + f.read, "", "/v1/notices", 200},
		{"bearer scheme in any case", "bearer " + f.read, "", "/v1/notices", 200},
		{"bearer account key on an account route", "Bearer " + f.acct, "", "/v1/_test/account", 200},
		{"bearer read key on an account route", "Bearer " + f.read, "", "/v1/_test/account", 403},
		{"unknown bearer key", "Bearer nk_read_wrong", "", "/v1/notices", 401},
		{"lapsed bearer key", "Bearer " + f.lapsedRead, "", "/v1/stats", 402},
		{"bearer without a key", "Bearer ", "", "/v1/notices", 401},
		{"another scheme", "Basic dXNlcjpwYXNz", "", "/v1/notices", 401},
		{"another scheme beside a key in the query", "Basic dXNlcjpwYXNz", "", "/v1/notices?api_key=" + f.read, 200},
		{"another scheme beside X-API-Key", "Basic dXNlcjpwYXNz", f.read, "/v1/notices", 200},
		{"X-API-Key wins over Authorization", "Bearer nk_read_wrong", f.read, "/v1/notices", 200},
		{"Authorization wins over the query", "Bearer " + f.read, "", "/v1/notices?api_key=nk_read_wrong", 200},
	}
	for _, tt := range authTests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tt.target, http.NoBody)
			req.Header.Set("Authorization", tt.auth)
			if tt.xKey != "" {
				req.Header.Set(HeaderAPIKey, tt.xKey)
			}
			res := f.roundTrip(t, req)
			if res.status != tt.status {
				t.Errorf("status %d, want %d; body %s", res.status, tt.status, res.body)
			}
			if tt.status == 401 && tt.auth == "Basic dXNlcjpwYXNz" && !strings.Contains(errorMessage(t, res), "Bearer <key>") {
				t.Errorf("message %q does not say to use Bearer", errorMessage(t, res))
			}
		})
	}
	t.Run("reactivated subscription: the same key works again", func(t *testing.T) {
		g := newFixture(t)
		ctx := context.Background()
		p, err := g.store.Authenticate(ctx, g.lapsedRead)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.store.SetSubscription(ctx, p.Account.ID, true); err != nil {
			t.Fatal(err)
		}
		if res := g.do(t, "GET", "/v1/notices", g.lapsedRead); res.status != 200 {
			t.Errorf("status %d, want 200; body %s", res.status, res.body)
		}
	})
}

// TestPanic: a panic becomes a logged 500 server_error that leaks nothing.
func TestPanic(t *testing.T) {
	f := newFixture(t)
	f.srv.handle(http.MethodGet, "/v1/_test/panic", readKey, func(*fiber.Ctx) error {
		panic("secret detail from /etc/credentials")
	})
	res := f.do(t, "GET", "/v1/_test/panic", f.read)
	wantError(t, res, 500, "server_error")
	if strings.Contains(string(res.body), "secret") {
		t.Errorf("panic value leaked: %s", res.body)
	}
	if !strings.Contains(f.logs.String(), "secret detail from /etc/credentials") {
		t.Errorf("panic not logged; log: %s", f.logs.String())
	}
	// The server keeps serving.
	if res := f.do(t, "GET", "/v1/notices", f.read); res.status != 200 {
		t.Errorf("after panic: status %d", res.status)
	}
}

// TestBackendFailure: an error without a code becomes a generic 500
// server_error; the cause is logged, not sent.
func TestBackendFailure(t *testing.T) {
	f := newFixture(t)
	f.srv.handle(http.MethodGet, "/v1/_test/fail", readKey, func(*fiber.Ctx) error {
		return io.ErrUnexpectedEOF
	})
	f.srv.handle(http.MethodGet, "/v1/_test/server_error", readKey, func(*fiber.Ctx) error {
		return errs.New(errs.ServerError, "disk /var/db/x is full")
	})
	for _, path := range []string{"/v1/_test/fail", "/v1/_test/server_error"} {
		t.Run(path, func(t *testing.T) {
			res := f.do(t, "GET", path, f.read)
			wantError(t, res, 500, "server_error")
			if msg := errorMessage(t, res); msg != serverErrorMessage {
				t.Errorf("message %q, want the generic one", msg)
			}
		})
	}
	if !strings.Contains(f.logs.String(), "unexpected EOF") || !strings.Contains(f.logs.String(), "disk /var/db/x is full") {
		t.Errorf("causes not logged: %s", f.logs.String())
	}
	t.Run("store closed", func(t *testing.T) {
		if err := f.store.Close(); err != nil {
			t.Fatal(err)
		}
		wantError(t, f.do(t, "GET", "/v1/notices", f.read), 500, "server_error")
	})
}

// TestBodyLimit: a body over cfg.MaxBodyBytes is 413 payload_too_large in
// the JSON error shape. It runs on a real listener: fasthttp rejects the
// body while reading the request, which app.Test reports as an error.
func TestBodyLimit(t *testing.T) {
	f := newFixture(t)
	f.srv.handle(http.MethodPost, "/v1/_test/echo", readKey, func(c *fiber.Ctx) error {
		body, err := f.srv.requestBody(c)
		if err != nil {
			return err
		}
		return writeJSON(c, http.StatusOK, map[string]int{"bytes": len(body)})
	})
	f.srv.largeBody = append(f.srv.largeBody, "/v1/_test/echo")
	limit := f.srv.cfg.MaxBodyBytes
	if limit != 8<<20 {
		t.Fatalf("default body limit %d, want 8 MiB", limit)
	}
	base := f.listen(t)
	t.Run("at the limit", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, base+"/v1/_test/echo", bytes.NewReader(make([]byte, limit)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(HeaderAPIKey, f.read)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || !strings.Contains(string(body), fmt.Sprint(limit)) {
			t.Errorf("status %d, body %.200s; want 200 with the byte count", res.StatusCode, body)
		}
	})
	t.Run("over the limit", func(t *testing.T) {
		// The server answers as soon as it sees the size, then closes:
		// write the body in the background and read the answer.
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		head := fmt.Sprintf("POST /v1/_test/echo HTTP/1.1\r\nHost: x\r\n%s: %s\r\nContent-Length: %d\r\n\r\n", HeaderAPIKey, f.read, limit+1)
		if _, err := io.WriteString(conn, head); err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = conn.Write(make([]byte, limit+1)) }()
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("read response: %v", err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		wantError(t, response{status: res.StatusCode, header: res.Header, body: body}, 413, "payload_too_large")
	})
}

// listen serves the fixture on a real loopback listener until the test
// ends, exercising Serve and Shutdown, and returns the base URL.
func (f *fixture) listen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := f.srv // the server serving now, whatever f.srv is when the test ends
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve returned %v after shutdown", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// TestNoPlainTextErrors sends raw, malformed HTTP to a real listener: the
// answers are still the JSON error shape, never fiber's text defaults.
func TestNoPlainTextErrors(t *testing.T) {
	f := newFixture(t)
	addr := strings.TrimPrefix(f.listen(t), "http://")
	tests := []struct {
		name   string
		raw    string
		status int
		code   string
		says   string // a part of the message, when set
	}{
		{"not HTTP", "GARBAGE\r\n\r\n", 400, "invalid_parameter", "cannot find http request method)"},
		{"unknown method", "BREW /v1/notices HTTP/1.1\r\nHost: x\r\n\r\n", 405, "method_not_allowed", ""},
		{"header too large", "GET /v1/notices HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n", 400, "invalid_parameter", ""},
		{"declared body too large", "POST /v1/match HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n", 413, "payload_too_large", "split the list"},
		{"declared body on a small route", "POST /v1/watches/wch_1/webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\n\r\n", 413, "payload_too_large", "only a few short members"},
		{"body without a key", "POST /v1/match HTTP/1.1\r\nHost: x\r\nContent-Length: 8000000\r\n\r\n", 401, "unauthorised", ""},
		{"body with an unknown key", "POST /v1/match HTTP/1.1\r\nHost: x\r\nX-API-Key: nk_read_bogus\r\nContent-Length: 8000000\r\n\r\n", 401, "unauthorised", ""},
		{"body with a lapsed key", "POST /v1/match HTTP/1.1\r\nHost: x\r\nX-API-Key: " + f.lapsedRead + "\r\nContent-Length: 8000000\r\n\r\n", 402, "subscription_inactive", ""},
		{"body with an unknown key in the query", "POST /v1/match?api_key=nk_read_bogus HTTP/1.1\r\nHost: x\r\nContent-Length: 8000000\r\n\r\n", 401, "unauthorised", ""},
		{"unknown route", "GET /v2/notices HTTP/1.1\r\nHost: x\r\n\r\n", 404, "not_found", ""},
		{"bad Content-Length beside a key", "GET /v1/notices HTTP/1.1\r\nHost: x\r\nX-API-Key: nk_read_secretvalue\r\nCookie: session=secretcookie\r\nContent-Length: abc\r\n\r\n", 400, "invalid_parameter", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(conn, tt.raw); err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("read response: %v", err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.Header.Get("Content-Type") != contentTypeJSON {
				t.Errorf("Content-Type %q; body %q", res.Header.Get("Content-Type"), body)
			}
			var e errorBody
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" {
				t.Errorf("body %q is not the JSON error shape", body)
			}
			if tt.code != "" && string(e.Error.Code) != tt.code {
				t.Errorf("code %q, want %q", e.Error.Code, tt.code)
			}
			if !strings.Contains(e.Error.Message, tt.says) {
				t.Errorf("message %q, want it to say %q", e.Error.Message, tt.says)
			}
			// The request's own bytes (keys, cookies) are never echoed.
			for _, leak := range []string{"secretvalue", "secretcookie", "GARBAGE", "contents", "Buffer size"} {
				if strings.Contains(e.Error.Message, leak) {
					t.Errorf("message %q echoes the request (%q)", e.Error.Message, leak)
				}
			}
			if res.StatusCode != tt.status {
				t.Errorf("status %d, want %d", res.StatusCode, tt.status)
			}
		})
	}
}

// TestStatusFor pins the status of every error code.
func TestStatusFor(t *testing.T) {
	want := map[errs.Code]int{
		errs.Unauthorised: 401, errs.SubscriptionInactive: 402, errs.QuotaExceeded: 402,
		errs.WatchLimitReached: 402, errs.AccountRequired: 403, errs.EmptyRequest: 400,
		errs.EmptyWatch: 400, errs.TooManyIdentifiers: 400, errs.InvalidIdentifier: 400,
		errs.InvalidACN: 400, errs.InvalidFilter: 400, errs.InvalidSince: 400,
		errs.InvalidDate: 400, errs.InvalidQuery: 400, errs.InvalidGroupBy: 400,
		errs.InvalidUpdate: 400, errs.InvalidAlertEmail: 400, errs.InvalidWebhookURL: 400,
		errs.MissingURL: 400, errs.NotFound: 404, errs.MethodNotAllowed: 405,
		errs.ServerError: 500, errs.WebhookUnavailable: 500, errs.InvalidJSON: 400,
		errs.InvalidParameter: 400, errs.PayloadTooLarge: 413, errs.RateLimited: 429,
		errs.Unavailable: 503, errs.Code("no_such_code"): 500,
	}
	for code, status := range want {
		t.Run(string(code), func(t *testing.T) {
			if got := StatusFor(code); got != status {
				t.Errorf("StatusFor(%s) = %d, want %d", code, got, status)
			}
		})
	}
}
