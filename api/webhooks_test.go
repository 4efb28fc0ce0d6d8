package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/sqlite"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/internal/webhook"
)

// secretPattern is a webhook secret as webhook.NewSecret makes it.
var secretPattern = regexp.MustCompile(`^whsec_[A-Za-z0-9_-]{43}$`)

// webhookFixture is the watch fixture with the webhook routes wired to the
// real SQLite store, and a record of the OnWatchChange calls.
type webhookFixture struct {
	*watchFixture
	hooks   *secretRecorder
	mu      sync.Mutex
	changed []string
}

// secretRecorder passes every call to the store under test and records the
// secrets the API handed it, in order.
type secretRecorder struct {
	store.Webhooks
	mu      sync.Mutex
	secrets []string
}

func (r *secretRecorder) SetWebhook(ctx context.Context, accountID, watchID, url, secret string, now time.Time) (watch.Watch, error) {
	r.record(secret)
	return r.Webhooks.SetWebhook(ctx, accountID, watchID, url, secret, now)
}

func (r *secretRecorder) RotateSecret(ctx context.Context, accountID, watchID, secret string, now time.Time) (watch.Watch, error) {
	r.record(secret)
	return r.Webhooks.RotateSecret(ctx, accountID, watchID, secret, now)
}

func (r *secretRecorder) record(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets = append(r.secrets, secret)
}

func (r *secretRecorder) stored() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.secrets)
}

// The conformance tests run against the SQLite store's webhooks.
var _ store.Webhooks = (*sqlite.Store)(nil)

// newWebhookFixture builds the fixture with cfg (webhooks on, as by
// default, unless cfg says otherwise).
func newWebhookFixture(t *testing.T, cfg config.Config) *webhookFixture {
	t.Helper()
	wf := newWatchFixture(t, nil)
	var hooks store.Webhooks = wf.store
	if h, ok := wf.srv.deps.Watches.(store.Webhooks); ok && scaleWatches {
		hooks = h // the Redis store
	}
	f := &webhookFixture{watchFixture: wf, hooks: &secretRecorder{Webhooks: hooks}}
	deps := wf.srv.deps
	deps.Webhooks = f.hooks
	deps.OnWatchChange = func(_ context.Context, watchID string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.changed = append(f.changed, watchID)
	}
	f.srv = New(cfg, deps)
	return f
}

// changes returns and clears the watch ids passed to OnWatchChange.
func (f *webhookFixture) changes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.changed
	f.changed = nil
	return c
}

// registrationJSON mirrors the webhook registration result of SPEC.md.
type registrationJSON struct {
	ID         string `json:"id"`
	WebhookURL string `json:"webhook_url"`
	Secret     string `json:"secret"`
}

// deliveryJSON mirrors the delivery record of SPEC.md and API.md.
type deliveryJSON struct {
	ID            string  `json:"id"`
	NoticeID      string  `json:"notice_id"`
	NoticeSeq     int64   `json:"notice_seq"`
	Status        string  `json:"status"`
	Attempts      int     `json:"attempts"`
	LastError     *string `json:"last_error"`
	CreatedAt     string  `json:"created_at"`
	UpdatedAt     string  `json:"updated_at"`
	NextAttemptAt *string `json:"next_attempt_at"`
	DeliveredAt   *string `json:"delivered_at"`
}

// register posts {"url": url} for the watch and requires 201 and the
// registration result's exact shape.
func (f *webhookFixture) register(t *testing.T, watchID, url string) registrationJSON {
	t.Helper()
	res := f.call(t, http.MethodPost, "/v1/watches/"+watchID+"/webhook", f.acct, fmt.Sprintf(`{"url": %q}`, url))
	if res.status != http.StatusCreated {
		t.Fatalf("register %s: status %d, want 201; body %s", url, res.status, res.body)
	}
	return decodeRegistration(t, res)
}

func decodeRegistration(t *testing.T, res response) registrationJSON {
	t.Helper()
	if got, want := keysOf(t, res.body), sortedKeys("id", "webhook_url", "secret"); !slices.Equal(got, want) {
		t.Errorf("registration members %v, want %v", got, want)
	}
	var r registrationJSON
	decodeBody(t, res, &r)
	if !secretPattern.MatchString(r.Secret) {
		t.Errorf("secret %q, want whsec_ and 43 base64url characters", r.Secret)
	}
	return r
}

// deliveries lists the watch's deliveries with the query (such as
// "?limit=5") and requires 200.
func (f *webhookFixture) deliveries(t *testing.T, watchID, query string) []deliveryJSON {
	t.Helper()
	res := f.call(t, http.MethodGet, "/v1/watches/"+watchID+"/deliveries"+query, f.acct, "")
	if res.status != http.StatusOK {
		t.Fatalf("deliveries %s: status %d; body %s", query, res.status, res.body)
	}
	if got := keysOf(t, res.body); !slices.Equal(got, []string{"data"}) {
		t.Errorf("deliveries envelope members %v, want [data]", got)
	}
	var l struct {
		Data []deliveryJSON `json:"data"`
	}
	decodeBody(t, res, &l)
	return l.Data
}

// getWatch returns the watch object and the raw response.
func (f *webhookFixture) getWatch(t *testing.T, watchID string) (watchJSON, response) {
	t.Helper()
	res := f.call(t, http.MethodGet, "/v1/watches/"+watchID, f.acct, "")
	if res.status != http.StatusOK {
		t.Fatalf("GET watch: status %d; body %s", res.status, res.body)
	}
	var w watchJSON
	decodeBody(t, res, &w)
	return w, res
}

// arrive stores n new notices for acn, published an hour before the API
// clock (inside the delivery window), and returns them with their ids.
func (f *webhookFixture) arrive(t *testing.T, prefix, acn string, n int) []notice.Notice {
	t.Helper()
	ns := make([]notice.Notice, n)
	for i := range ns {
		ns[i] = arrival(fmt.Sprintf("%s%d", prefix, i+1), acn, "", "Appointment", "NSW", f.clock.Now().Add(-time.Hour))
	}
	if _, err := f.store.UpsertNotices(context.Background(), ns); err != nil {
		t.Fatalf("store notices: %v", err)
	}
	return ns
}

// TestWebhookRegister: 201 with exactly id, webhook_url and secret; the
// watch then shows the URL but the secret is never shown again;
// registering again replaces the URL and issues a new secret.
func TestWebhookRegister(t *testing.T) {
	f := newWebhookFixture(t, config.Default())
	w := f.create(t, f.acct, `{"identifiers": ["123456780"]}`)
	path := "/v1/watches/" + w.ID + "/webhook"

	first := f.register(t, w.ID, "https://hooks.example.com/notices?team=ops")
	if first.ID != w.ID || first.WebhookURL != "https://hooks.example.com/notices?team=ops" {
		t.Errorf("registration %+v, want id %s and the URL as sent", first, w.ID)
	}
	if got := f.changes(); !slices.Equal(got, []string{w.ID}) {
		t.Errorf("OnWatchChange calls %v, want [%s]", got, w.ID)
	}

	t.Run("the watch shows the URL, never the secret", func(t *testing.T) {
		got, res := f.getWatch(t, w.ID)
		if got.WebhookURL == nil || *got.WebhookURL != first.WebhookURL {
			t.Errorf("webhook_url %v, want %s", got.WebhookURL, first.WebhookURL)
		}
		list := f.call(t, http.MethodGet, "/v1/watches", f.acct, "")
		for _, body := range [][]byte{res.body, list.body} {
			if s := string(body); strings.Contains(s, first.Secret) || strings.Contains(s, webhook.SecretPrefix) {
				t.Errorf("secret shown again: %s", body)
			}
		}
	})

	t.Run("registering again replaces the URL and the secret", func(t *testing.T) {
		f.clock.Advance(time.Minute)
		second := f.register(t, w.ID, "https://other.example.net:8443/hook")
		if second.ID != w.ID || second.WebhookURL != "https://other.example.net:8443/hook" {
			t.Errorf("registration %+v, want the new URL", second)
		}
		if second.Secret == first.Secret {
			t.Errorf("re-registration kept the secret %s; want a new one", first.Secret)
		}
		if got, _ := f.getWatch(t, w.ID); got.WebhookURL == nil || *got.WebhookURL != second.WebhookURL {
			t.Errorf("webhook_url %v after re-registration, want %s", got.WebhookURL, second.WebhookURL)
		}
		if got := f.changes(); !slices.Equal(got, []string{w.ID}) {
			t.Errorf("OnWatchChange calls %v, want [%s]", got, w.ID)
		}
	})

	t.Run("same URL again still issues a new secret", func(t *testing.T) {
		a := f.register(t, w.ID, "https://hooks.example.com/same")
		b := f.register(t, w.ID, "https://hooks.example.com/same")
		if a.Secret == b.Secret || a.WebhookURL != b.WebhookURL {
			t.Errorf("registrations %+v and %+v: want the same URL and different secrets", a, b)
		}
	})

	t.Run("other members are ignored", func(t *testing.T) {
		res := f.call(t, http.MethodPost, path, f.acct,
			`{"url": "https://hooks.example.com/x", "secret": "whsec_chosen_by_client", "events": ["all"]}`)
		if res.status != http.StatusCreated {
			t.Fatalf("status %d, want 201; body %s", res.status, res.body)
		}
		if r := decodeRegistration(t, res); r.Secret == "whsec_chosen_by_client" || r.WebhookURL != "https://hooks.example.com/x" {
			t.Errorf("registration %+v: the service issues the secret; only url is read", r)
		}
	})

	t.Run("a URL of the maximum length is accepted", func(t *testing.T) {
		const base = "https://hooks.example.com/"
		longest := base + strings.Repeat("a", MaxWebhookURLLength-len(base))
		if r := f.register(t, w.ID, longest); r.WebhookURL != longest {
			t.Errorf("webhook_url %d bytes, want the %d sent", len(r.WebhookURL), len(longest))
		}
	})

	t.Run("a deactivated watch accepts a webhook", func(t *testing.T) {
		off := f.create(t, f.acct, `{"identifiers": ["333333332"]}`)
		if res := f.call(t, http.MethodPatch, "/v1/watches/"+off.ID, f.acct, `{"active": false}`); res.status != 200 {
			t.Fatalf("deactivate: %d %s", res.status, res.body)
		}
		f.register(t, off.ID, "https://hooks.example.com/off")
		if got, _ := f.getWatch(t, off.ID); got.Active {
			t.Errorf("registering a webhook reactivated the watch")
		}
	})
}

// TestWebhookRegisterValidation: every 400 of the registration, on a watch
// of the caller; nothing is written and no change is signalled.
func TestWebhookRegisterValidation(t *testing.T) {
	f := newWebhookFixture(t, config.Default())
	w := f.create(t, f.acct, `{"identifiers": ["123456780"]}`)
	path := "/v1/watches/" + w.ID + "/webhook"
	tests := []struct {
		name, body, code string
		msg              []string // substrings of the message
	}{
		{"no body", "", "empty_request", []string{"url"}},
		{"blank body", " \n\t", "empty_request", nil},
		{"not JSON", "url=https://hooks.example.com/", "invalid_json", nil},
		{"truncated JSON", `{"url": "https://hooks.example.com/"`, "invalid_json", nil},
		{"array", `["https://hooks.example.com/"]`, "invalid_json", nil},
		{"bare string", `"https://hooks.example.com/"`, "invalid_json", nil},
		{"null", `null`, "invalid_json", nil},
		{"empty object", `{}`, "missing_url", []string{"url"}},
		{"only other members", `{"uri": "https://hooks.example.com/"}`, "missing_url", nil},
		{"empty url", `{"url": ""}`, "missing_url", nil},
		{"blank url", `{"url": "   "}`, "missing_url", nil},
		{"null url", `{"url": null}`, "missing_url", nil},
		{"url not a string", `{"url": 443}`, "invalid_webhook_url", []string{"443"}},
		{"url an object", `{"url": {"href": "https://hooks.example.com/"}}`, "invalid_webhook_url", nil},
		{"http", `{"url": "http://hooks.example.com/notices"}`, "invalid_webhook_url", []string{"https"}},
		{"other scheme", `{"url": "ftp://hooks.example.com/"}`, "invalid_webhook_url", nil},
		{"relative path", `{"url": "/hooks/notices"}`, "invalid_webhook_url", []string{"absolute"}},
		{"no scheme", `{"url": "hooks.example.com/notices"}`, "invalid_webhook_url", nil},
		{"no host", `{"url": "https://"}`, "invalid_webhook_url", []string{"host"}},
		{"no host, path only", `{"url": "https:///notices"}`, "invalid_webhook_url", []string{"host"}},
		{"opaque", `{"url": "https:hooks.example.com"}`, "invalid_webhook_url", nil},
		{"userinfo", `{"url": "https://user:pw@hooks.example.com/"}`, "invalid_webhook_url", []string{"user info"}},
		{"user only", `{"url": "https://user@hooks.example.com/"}`, "invalid_webhook_url", nil},
		{"bad port", `{"url": "https://hooks.example.com:99999/"}`, "invalid_webhook_url", nil},
		{"loopback IPv4", `{"url": "https://127.0.0.1/hook"}`, "invalid_webhook_url", []string{"loopback", "NOTICES_WEBHOOK_ALLOW_PRIVATE"}},
		{"private IPv4", `{"url": "https://10.0.0.7/hook"}`, "invalid_webhook_url", []string{"private"}},
		{"private 192.168", `{"url": "https://192.168.1.20:8443/hook"}`, "invalid_webhook_url", nil},
		{"loopback IPv6", `{"url": "https://[::1]/hook"}`, "invalid_webhook_url", []string{"loopback"}},
		{"link-local", `{"url": "https://169.254.10.1/"}`, "invalid_webhook_url", []string{"link-local"}},
		{"metadata", `{"url": "https://169.254.169.254/latest"}`, "invalid_webhook_url", nil},
		{"IPv4-mapped loopback", `{"url": "https://[::ffff:127.0.0.1]/"}`, "invalid_webhook_url", nil},
		{"localhost", `{"url": "https://localhost:8443/"}`, "invalid_webhook_url", nil},
		{"numeric host", `{"url": "https://2130706433/"}`, "invalid_webhook_url", nil},
		{"control character", `{"url": "https://hooks.example.com/\u0000x"}`, "invalid_webhook_url", nil},
		{"surrounding spaces", `{"url": " https://hooks.example.com/"}`, "invalid_webhook_url", nil},
		{"too long", `{"url": "https://hooks.example.com/` + strings.Repeat("a", MaxWebhookURLLength) + `"}`, "invalid_webhook_url", []string{"2048"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.call(t, http.MethodPost, path, f.acct, tt.body)
			wantError(t, res, http.StatusBadRequest, tt.code)
			msg := errorMessage(t, res)
			for _, s := range tt.msg {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q does not contain %q", msg, s)
				}
			}
		})
	}
	if got, _ := f.getWatch(t, w.ID); got.WebhookURL != nil {
		t.Errorf("rejected registrations stored webhook_url %q", *got.WebhookURL)
	}
	if got := f.changes(); len(got) != 0 {
		t.Errorf("rejected registrations called OnWatchChange %v", got)
	}

	t.Run("validation before the resource", func(t *testing.T) {
		for _, id := range []string{"wch_aaaaaaaaaaaaaaaaaaaaaaaaaa", w.ID} {
			other := f.newAccount(t, "standard").AccountKey
			wantError(t, f.call(t, http.MethodPost, "/v1/watches/"+id+"/webhook", other, `{}`), 400, "missing_url")
			wantError(t, f.call(t, http.MethodPost, "/v1/watches/"+id+"/webhook", other, `{"url": "http://x.example/"}`), 400, "invalid_webhook_url")
			wantError(t, f.call(t, http.MethodPost, "/v1/watches/"+id+"/webhook", other, ``), 400, "empty_request")
		}
	})
	t.Run("a valid URL on a missing watch is 404", func(t *testing.T) {
		wantError(t, f.call(t, http.MethodPost, "/v1/watches/wch_aaaaaaaaaaaaaaaaaaaaaaaaaa/webhook", f.acct, `{"url": "https://hooks.example.com/"}`), 404, "not_found")
	})
}

// TestWebhookAllowPrivate: with NOTICES_WEBHOOK_ALLOW_PRIVATE the
// IP-literal private, loopback and link-local hosts are accepted; the
// scheme and user-info rules still hold.
func TestWebhookAllowPrivate(t *testing.T) {
	cfg := config.Default()
	cfg.WebhookAllowPrivate = true
	f := newWebhookFixture(t, cfg)
	w := f.create(t, f.acct, `{"identifiers": ["123456780"]}`)
	for _, url := range []string{"https://127.0.0.1:8443/hook", "https://10.0.0.7/", "https://[::1]/hook", "https://169.254.10.1/", "https://localhost/"} {
		t.Run(url, func(t *testing.T) {
			if r := f.register(t, w.ID, url); r.WebhookURL != url {
				t.Errorf("webhook_url %q, want %q", r.WebhookURL, url)
			}
		})
	}
	for _, body := range []string{`{"url": "http://127.0.0.1/"}`, `{"url": "https://u:p@127.0.0.1/"}`, `{"url": "/hook"}`} {
		t.Run(body, func(t *testing.T) {
			wantError(t, f.call(t, http.MethodPost, "/v1/watches/"+w.ID+"/webhook", f.acct, body), 400, "invalid_webhook_url")
		})
	}
}

// TestWebhookRotate: a new secret for the same URL; 404 without a webhook.
func TestWebhookRotate(t *testing.T) {
	f := newWebhookFixture(t, config.Default())
	w := f.create(t, f.acct, `{"identifiers": ["123456780"]}`)
	rotate := "/v1/watches/" + w.ID + "/webhook/rotate"

	t.Run("without a webhook is 404", func(t *testing.T) {
		wantError(t, f.call(t, http.MethodPost, rotate, f.acct, ""), 404, "not_found")
		if got := f.changes(); len(got) != 0 {
			t.Errorf("failed rotation called OnWatchChange %v", got)
		}
	})
	reg := f.register(t, w.ID, "https://hooks.example.com/notices")
	f.changes()

	seen := []string{reg.Secret}
	for i := range 2 {
		f.clock.Advance(time.Minute)
		res := f.call(t, http.MethodPost, rotate, f.acct, "")
		if res.status != http.StatusOK {
			t.Fatalf("rotation %d: status %d, want 200; body %s", i+1, res.status, res.body)
		}
		r := decodeRegistration(t, res)
		if r.ID != w.ID || r.WebhookURL != reg.WebhookURL {
			t.Errorf("rotation %d: %+v, want id %s and the same URL %s", i+1, r, w.ID, reg.WebhookURL)
		}
		if slices.Contains(seen, r.Secret) {
			t.Errorf("rotation %d returned a secret already issued", i+1)
		}
		seen = append(seen, r.Secret)
	}
	if got := f.changes(); !slices.Equal(got, []string{w.ID, w.ID}) {
		t.Errorf("OnWatchChange calls %v, want the watch id twice", got)
	}
	t.Run("a body is ignored", func(t *testing.T) {
		res := f.call(t, http.MethodPost, rotate, f.acct, `{"url": "https://elsewhere.example.com/"}`)
		if res.status != http.StatusOK {
			t.Fatalf("status %d; body %s", res.status, res.body)
		}
		if r := decodeRegistration(t, res); r.WebhookURL != reg.WebhookURL {
			t.Errorf("rotation changed the URL to %s", r.WebhookURL)
		}
	})
	t.Run("the URL is unchanged on the watch", func(t *testing.T) {
		if got, _ := f.getWatch(t, w.ID); got.WebhookURL == nil || *got.WebhookURL != reg.WebhookURL {
			t.Errorf("webhook_url %v, want %s", got.WebhookURL, reg.WebhookURL)
		}
	})
	t.Run("missing watch is 404", func(t *testing.T) {
		wantError(t, f.call(t, http.MethodPost, "/v1/watches/wch_aaaaaaaaaaaaaaaaaaaaaaaaaa/webhook/rotate", f.acct, ""), 404, "not_found")
	})
}

// TestWebhookSecretReachesStore: the secret the API returns is the very
// one it hands the store (which signs deliveries with it), on registration
// and on rotation.
func TestWebhookSecretReachesStore(t *testing.T) {
	f := newWebhookFixture(t, config.Default())
	w := f.create(t, f.acct, `{"identifiers": ["123456780"]}`)
	reg := f.register(t, w.ID, "https://hooks.example.com/notices")
	rot := decodeRegistration(t, f.call(t, http.MethodPost, "/v1/watches/"+w.ID+"/webhook/rotate", f.acct, ""))
	if got, want := f.hooks.stored(), []string{reg.Secret, rot.Secret}; !slices.Equal(got, want) {
		t.Errorf("secrets handed to the store differ from those returned to the caller")
	}
}

// TestWebhookDelete: 204; pending deliveries become dead with last_error
// "webhook removed"; the URL is gone; matches stay pollable; a second
// DELETE and a rotation are 404; a new registration works.
func TestWebhookDelete(t *testing.T) {
	f := newWebhookFixture(t, config.Default())
	w := f.create(t, f.acct, `{"identifiers": ["123456780"]}`)
	path := "/v1/watches/" + w.ID + "/webhook"

	t.Run("without a webhook is 404", func(t *testing.T) {
		wantError(t, f.call(t, http.MethodDelete, path, f.acct, ""), 404, "not_found")
	})
	f.arrive(t, "D", "123456780", 3)
	f.register(t, w.ID, "https://hooks.example.com/notices")
	before := f.deliveries(t, w.ID, "")
	if len(before) != 3 {
		t.Fatalf("%d deliveries after registration, want 3 pending", len(before))
	}
	for _, d := range before {
		if d.Status != delivery.Pending {
			t.Fatalf("delivery %s status %s before DELETE, want pending", d.ID, d.Status)
		}
	}
	f.changes()

	f.clock.Advance(time.Minute)
	res := f.call(t, http.MethodDelete, path, f.acct, "")
	if res.status != http.StatusNoContent || len(res.body) != 0 {
		t.Fatalf("DELETE: status %d body %q, want 204 and no body", res.status, res.body)
	}
	if got := f.changes(); !slices.Equal(got, []string{w.ID}) {
		t.Errorf("OnWatchChange calls %v, want [%s]", got, w.ID)
	}

	t.Run("pending deliveries are dead with webhook removed", func(t *testing.T) {
		after := f.deliveries(t, w.ID, "")
		if len(after) != len(before) {
			t.Fatalf("%d deliveries after DELETE, want the same %d", len(after), len(before))
		}
		for _, d := range after {
			if d.Status != delivery.Dead || d.LastError == nil || *d.LastError != delivery.WebhookRemoved {
				t.Errorf("delivery %s: status %s last_error %v, want dead and %q", d.ID, d.Status, d.LastError, delivery.WebhookRemoved)
			}
			if d.NextAttemptAt != nil || d.DeliveredAt != nil {
				t.Errorf("delivery %s: next_attempt_at %v delivered_at %v, want both null", d.ID, d.NextAttemptAt, d.DeliveredAt)
			}
		}
	})
	t.Run("the watch has no webhook_url and stays pollable", func(t *testing.T) {
		got, _ := f.getWatch(t, w.ID)
		if got.WebhookURL != nil {
			t.Errorf("webhook_url %q after DELETE, want null", *got.WebhookURL)
		}
		if !got.Active {
			t.Errorf("DELETE deactivated the watch")
		}
		res := f.call(t, http.MethodGet, "/v1/watches/"+w.ID+"/matches", f.acct, "")
		var m matchesJSON
		decodeBody(t, res, &m)
		if res.status != 200 || !slices.Contains(sourcesOf(m.Data), "D1") {
			t.Errorf("matches after DELETE: status %d sources %v, want 200 including D1", res.status, sourcesOf(m.Data))
		}
	})
	t.Run("DELETE and rotate again are 404", func(t *testing.T) {
		wantError(t, f.call(t, http.MethodDelete, path, f.acct, ""), 404, "not_found")
		wantError(t, f.call(t, http.MethodPost, path+"/rotate", f.acct, ""), 404, "not_found")
		if got := f.changes(); len(got) != 0 {
			t.Errorf("failed requests called OnWatchChange %v", got)
		}
	})
	t.Run("registering again works", func(t *testing.T) {
		r := f.register(t, w.ID, "https://hooks.example.com/again")
		if got, _ := f.getWatch(t, w.ID); got.WebhookURL == nil || *got.WebhookURL != r.WebhookURL {
			t.Errorf("webhook_url %v, want %s", got.WebhookURL, r.WebhookURL)
		}
	})
	t.Run("missing watch is 404", func(t *testing.T) {
		wantError(t, f.call(t, http.MethodDelete, "/v1/watches/wch_aaaaaaaaaaaaaaaaaaaaaaaaaa/webhook", f.acct, ""), 404, "not_found")
	})
}

// TestWebhookDeliveries: the record fields, eligibility at registration,
// newest first, the limit parameter, and the empty list.
func TestWebhookDeliveries(t *testing.T) {
	f := newWebhookFixture(t, config.Default())

	t.Run("empty list", func(t *testing.T) {
		w := f.create(t, f.acct, `{"identifiers": ["444444446"]}`)
		for _, step := range []string{"no webhook", "webhook, no matches"} {
			if step != "no webhook" {
				f.register(t, w.ID, "https://hooks.example.com/empty")
			}
			res := f.call(t, http.MethodGet, "/v1/watches/"+w.ID+"/deliveries", f.acct, "")
			if res.status != 200 || strings.TrimSpace(string(res.body)) != `{"data":[]}` {
				t.Errorf("%s: status %d body %s, want {\"data\":[]}", step, res.status, res.body)
			}
		}
	})

	t.Run("records, eligibility and newest first", func(t *testing.T) {
		// N4 (222222228) was published the day before the clock but
		// arrived before the watch was created: never delivered.
		w := f.create(t, f.acct, `{"identifiers": ["222222228"]}`)
		early := f.arrive(t, "E", "222222228", 2)
		old := arrival("OLD", "222222228", "", "Appointment", "NSW", f.clock.Now().Add(-delivery.Window-time.Hour))
		if _, err := f.store.UpsertNotices(context.Background(), []notice.Notice{old}); err != nil {
			t.Fatal(err)
		}
		registeredAt := notice.Timestamp(f.clock.Now())
		f.register(t, w.ID, "https://hooks.example.com/records")
		f.clock.Advance(time.Minute)
		late := f.arrive(t, "L", "222222228", 2)
		f.register(t, w.ID, "https://hooks.example.com/records") // picks up L1, L2; keeps E1, E2

		got := f.deliveries(t, w.ID, "")
		var sources []string
		byID := map[string]notice.Notice{}
		for _, n := range append(early, late...) {
			byID[n.ID] = n
		}
		for _, d := range got {
			n, ok := byID[d.NoticeID]
			if !ok {
				t.Errorf("delivery for notice %s, which is not eligible", d.NoticeID)
				continue
			}
			sources = append(sources, n.SourceID)
		}
		if len(got) != 4 {
			t.Fatalf("%d deliveries (%v), want 4: E1, E2, L1, L2", len(got), sources)
		}
		if !slices.Equal(sorted(sources[:2]), []string{"L1", "L2"}) || !slices.Equal(sorted(sources[2:]), []string{"E1", "E2"}) {
			t.Errorf("order %v, want the later deliveries (L) first", sources)
		}
		for i := 1; i < len(got); i++ {
			if got[i].CreatedAt > got[i-1].CreatedAt {
				t.Errorf("created_at %s after %s: want newest first", got[i].CreatedAt, got[i-1].CreatedAt)
			}
		}
		raw := f.call(t, http.MethodGet, "/v1/watches/"+w.ID+"/deliveries?limit=1", f.acct, "")
		var l struct {
			Data []json.RawMessage `json:"data"`
		}
		decodeBody(t, raw, &l)
		want := sortedKeys("id", "notice_id", "notice_seq", "status", "attempts", "last_error",
			"created_at", "updated_at", "next_attempt_at", "delivered_at")
		if len(l.Data) != 1 {
			t.Fatalf("limit=1 gave %d records", len(l.Data))
		}
		if ks := keysOf(t, l.Data[0]); !slices.Equal(ks, want) {
			t.Errorf("record members %v, want %v", ks, want)
		}
		for _, d := range got {
			seq := f.seqOf(t, d.NoticeID)
			if d.ID != webhook.DeliveryID(w.ID, d.NoticeID) {
				t.Errorf("id %s, want the stable dlv_ id %s of (watch, notice)", d.ID, webhook.DeliveryID(w.ID, d.NoticeID))
			}
			if d.NoticeSeq != seq || d.Status != delivery.Pending || d.Attempts != 0 || d.LastError != nil || d.DeliveredAt != nil {
				t.Errorf("record %+v, want notice_seq %d, pending, 0 attempts, null last_error and delivered_at", d, seq)
			}
			if d.NextAttemptAt == nil {
				t.Errorf("record %s: next_attempt_at null, want the scheduled first attempt", d.ID)
			}
			for _, ts := range []string{d.CreatedAt, d.UpdatedAt} {
				if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(ts) {
					t.Errorf("timestamp %q, want RFC 3339 UTC with milliseconds", ts)
				}
			}
		}
		if last := got[len(got)-1]; last.CreatedAt != registeredAt {
			t.Errorf("first deliveries created_at %s, want the registration time %s", last.CreatedAt, registeredAt)
		}
	})

	t.Run("limit", func(t *testing.T) {
		w := f.create(t, f.acct, `{"identifiers": ["987654321"]}`)
		f.arrive(t, "M", "987654321", 120)
		f.register(t, w.ID, "https://hooks.example.com/many")
		for _, c := range []struct {
			query string
			want  int
		}{{"", 50}, {"?limit=100", 100}, {"?limit=1", 1}, {"?limit=73", 73}} {
			if got := f.deliveries(t, w.ID, c.query); len(got) != c.want {
				t.Errorf("deliveries%s: %d records, want %d", c.query, len(got), c.want)
			}
		}
		for _, q := range []string{"0", "101", "-1", "abc", "1.5", "", "1e2", "99999999999999999999"} {
			t.Run("limit="+q, func(t *testing.T) {
				res := f.call(t, http.MethodGet, "/v1/watches/"+w.ID+"/deliveries?limit="+q, f.acct, "")
				wantError(t, res, 400, "invalid_parameter")
				if msg := errorMessage(t, res); !strings.Contains(msg, "limit") || !strings.Contains(msg, "100") {
					t.Errorf("message %q does not name limit and its range", msg)
				}
			})
		}
		wantError(t, f.call(t, http.MethodGet, "/v1/watches/"+w.ID+"/deliveries?limit=5&limit=6", f.acct, ""), 400, "invalid_parameter")
	})
	t.Run("missing watch is 404; a bad limit is 400 first", func(t *testing.T) {
		wantError(t, f.call(t, http.MethodGet, "/v1/watches/wch_aaaaaaaaaaaaaaaaaaaaaaaaaa/deliveries", f.acct, ""), 404, "not_found")
		wantError(t, f.call(t, http.MethodGet, "/v1/watches/wch_aaaaaaaaaaaaaaaaaaaaaaaaaa/deliveries?limit=0", f.acct, ""), 400, "invalid_parameter")
	})
}

// seqOf returns a stored notice's notice_seq.
func (f *webhookFixture) seqOf(t *testing.T, id string) int64 {
	t.Helper()
	var n notice.Notice
	f.get(t, "/v1/notices/"+id, &n)
	return n.Seq
}

func sorted(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// webhookRoutes are the four webhook routes for a watch id, with a body
// that is valid where one is read.
func webhookRoutes(id string) []struct{ method, target, body string } {
	return []struct{ method, target, body string }{
		{http.MethodPost, "/v1/watches/" + id + "/webhook", `{"url": "https://hooks.example.com/x"}`},
		{http.MethodPost, "/v1/watches/" + id + "/webhook/rotate", ""},
		{http.MethodDelete, "/v1/watches/" + id + "/webhook", ""},
		{http.MethodGet, "/v1/watches/" + id + "/deliveries", ""},
	}
}

// TestWebhookUnavailable: with NOTICES_WEBHOOKS=off every webhook route is
// 500 webhook_unavailable with its own message, after the route, key,
// subscription and account-key checks and before validation and lookup.
// It needs no webhook store.
func TestWebhookUnavailable(t *testing.T) {
	cfg := config.Default()
	cfg.Webhooks = false
	f := newFixture(t, fixtureOpts{cfg: &cfg})
	const missing = "wch_aaaaaaaaaaaaaaaaaaaaaaaaaa"
	routes := append(webhookRoutes(missing),
		struct{ method, target, body string }{http.MethodPost, "/v1/watches/" + missing + "/webhook", ""},
		struct{ method, target, body string }{http.MethodPost, "/v1/watches/" + missing + "/webhook", `{"url": "http://x"}`},
		struct{ method, target, body string }{http.MethodGet, "/v1/watches/" + missing + "/deliveries?limit=0", ""},
	)
	for _, r := range routes {
		t.Run(r.method+" "+r.target+" "+r.body, func(t *testing.T) {
			var body []byte
			if r.body != "" {
				body = []byte(r.body)
			}
			res := f.send(t, r.method, r.target, f.acct, body)
			wantError(t, res, http.StatusInternalServerError, "webhook_unavailable")
			if msg := errorMessage(t, res); !strings.Contains(msg, "not configured on this deployment") {
				t.Errorf("message %q, want it to say webhook delivery is not configured on this deployment", msg)
			}
			for _, k := range []struct {
				key    string
				status int
				code   string
			}{{"", 401, "unauthorised"}, {f.lapsedAcct, 402, "subscription_inactive"}, {f.read, 403, "account_required"}} {
				wantError(t, f.send(t, r.method, r.target, k.key, body), k.status, k.code)
			}
		})
	}
	if strings.Contains(f.logs.String(), "level=ERROR") {
		t.Errorf("webhook_unavailable was logged as a failure: %s", f.logs)
	}
	t.Run("HEAD deliveries", func(t *testing.T) {
		res := f.do(t, http.MethodHead, "/v1/watches/"+missing+"/deliveries", f.acct)
		if res.status != http.StatusInternalServerError || len(res.body) != 0 {
			t.Errorf("status %d body %q, want 500 and no body", res.status, res.body)
		}
	})
}

// TestWebhookAccess: 401, 402 and 403 on every webhook route, in that
// order and before any validation; 404 and 405 before authentication.
func TestWebhookAccess(t *testing.T) {
	f := newFixture(t)
	const id = "wch_aaaaaaaaaaaaaaaaaaaaaaaaaa"
	routes := append(webhookRoutes(id),
		struct{ method, target, body string }{http.MethodPost, "/v1/watches/" + id + "/webhook", ""},
		struct{ method, target, body string }{http.MethodPost, "/v1/watches/" + id + "/webhook", `{"url": "http://x"}`},
		struct{ method, target, body string }{http.MethodGet, "/v1/watches/" + id + "/deliveries?limit=0", ""},
		struct{ method, target, body string }{http.MethodGet, "/v1/watches/" + id + "/deliveries?api_key=nk_nope", ""},
	)
	keys := []struct {
		name, key string
		status    int
		code      string
	}{
		{"no key", "", 401, "unauthorised"},
		{"unknown key", "nk_acct_nope", 401, "unauthorised"},
		{"lapsed account key", f.lapsedAcct, 402, "subscription_inactive"},
		{"lapsed read key", f.lapsedRead, 402, "subscription_inactive"},
		{"read key", f.read, 403, "account_required"},
	}
	for _, r := range routes {
		for _, k := range keys {
			t.Run(r.method+" "+r.target+" "+r.body+" "+k.name, func(t *testing.T) {
				var body []byte
				if r.body != "" {
					body = []byte(r.body)
				}
				wantError(t, f.send(t, r.method, r.target, k.key, body), k.status, k.code)
			})
		}
	}
	t.Run("HEAD deliveries with a read key", func(t *testing.T) {
		res := f.do(t, http.MethodHead, "/v1/watches/"+id+"/deliveries", f.read)
		if res.status != 403 || len(res.body) != 0 {
			t.Errorf("status %d body %q, want 403 and no body", res.status, res.body)
		}
	})

	methods := []struct{ method, target, allow string }{
		{"GET", "/v1/watches/" + id + "/webhook", "DELETE, POST"},
		{"PUT", "/v1/watches/" + id + "/webhook", "DELETE, POST"},
		{"PATCH", "/v1/watches/" + id + "/webhook", "DELETE, POST"},
		{"GET", "/v1/watches/" + id + "/webhook/rotate", "POST"},
		{"DELETE", "/v1/watches/" + id + "/webhook/rotate", "POST"},
		{"POST", "/v1/watches/" + id + "/deliveries", "GET, HEAD"},
		{"DELETE", "/v1/watches/" + id + "/deliveries", "GET, HEAD"},
	}
	for _, m := range methods {
		t.Run(m.method+" "+m.target, func(t *testing.T) {
			res := f.do(t, m.method, m.target, "")
			wantError(t, res, 405, "method_not_allowed")
			if got := res.header.Get("Allow"); got != m.allow {
				t.Errorf("Allow %q, want %q", got, m.allow)
			}
		})
	}
	for _, target := range []string{"/v1/watches/" + id + "/webhook/nothing", "/v1/watches/" + id + "/webhooks", "/v1/watches/" + id + "/delivery", "/v1/watches//webhook"} {
		t.Run("404 "+target, func(t *testing.T) {
			wantError(t, f.do(t, http.MethodPost, target, ""), 404, "not_found")
		})
	}
}

// TestWebhookIsolation: another account's watch is 404 not_found on every
// webhook route, worded exactly as for a missing watch, and its webhook
// and deliveries are left as they were.
func TestWebhookIsolation(t *testing.T) {
	f := newWebhookFixture(t, config.Default())
	w := f.create(t, f.acct, `{"identifiers": ["123456780"]}`)
	f.arrive(t, "I", "123456780", 2)
	reg := f.register(t, w.ID, "https://hooks.example.com/mine")
	before := f.deliveries(t, w.ID, "")
	f.changes()
	other := f.newAccount(t, "standard").AccountKey
	const missing = "wch_aaaaaaaaaaaaaaaaaaaaaaaaaa"
	theirs, none := webhookRoutes(w.ID), webhookRoutes(missing)
	for i := range theirs {
		r := theirs[i]
		t.Run(r.method+" "+r.target, func(t *testing.T) {
			a := f.call(t, r.method, r.target, other, r.body)
			wantError(t, a, 404, "not_found")
			b := f.call(t, none[i].method, none[i].target, other, none[i].body)
			wantError(t, b, 404, "not_found")
			if ma, mb := strings.ReplaceAll(errorMessage(t, a), w.ID, "ID"), strings.ReplaceAll(errorMessage(t, b), missing, "ID"); ma != mb {
				t.Errorf("messages differ: %q (another account's) vs %q (missing)", ma, mb)
			}
		})
	}
	if got := f.changes(); len(got) != 0 {
		t.Errorf("rejected requests called OnWatchChange %v", got)
	}
	got, _ := f.getWatch(t, w.ID)
	if got.WebhookURL == nil || *got.WebhookURL != reg.WebhookURL {
		t.Errorf("webhook_url %v after another account's requests, want %s", got.WebhookURL, reg.WebhookURL)
	}
	after := f.deliveries(t, w.ID, "")
	if len(after) != len(before) {
		t.Fatalf("%d deliveries, want %d", len(after), len(before))
	}
	for i := range after {
		if after[i].Status != delivery.Pending {
			t.Errorf("delivery %s is %s after another account's DELETE, want pending", after[i].ID, after[i].Status)
		}
	}
}

// TestWebhookNoStore: a server built without a webhook store answers a
// webhook route with a logged server_error (an operator wiring fault).
func TestWebhookNoStore(t *testing.T) {
	f := newFixture(t)
	res := f.send(t, http.MethodPost, "/v1/watches/wch_x/webhook", f.acct, []byte(`{"url": "https://hooks.example.com/"}`))
	wantError(t, res, 500, "server_error")
	if msg := errorMessage(t, res); msg != serverErrorMessage {
		t.Errorf("message %q, want the generic server_error message", msg)
	}
	if !strings.Contains(f.logs.String(), "Deps.Webhooks is nil") {
		t.Errorf("cause not logged: %s", f.logs)
	}
}
