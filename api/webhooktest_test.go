package api

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/store/sqlite"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/internal/webhook"
)

// TestWebhookScaleMode runs the API tests of the webhook test delivery
// and of the retry of a dead delivery against the Redis backend.
func TestWebhookScaleMode(t *testing.T) {
	testservers.Redis(t)
	scaleWatches = true
	defer func() { scaleWatches = false }()
	t.Run("WebhookTestDelivery", TestWebhookTestDelivery)
	t.Run("DeliveryRetry", TestDeliveryRetry)
}

// testReceiver is a TLS endpoint on loopback that records each request
// and answers with its status.
type testReceiver struct {
	srv    *httptest.Server
	caFile string

	mu     sync.Mutex
	status int
	got    []receivedRequest
	hold   chan struct{} // when set, requests wait for it to close
	held   int           // requests waiting on hold
}

func (r *testReceiver) setHold(c chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hold = c
}

func (r *testReceiver) waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}

// testbinWait polls cond until it holds, failing after 10 s.
func testbinWait(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
	}
}

// receivedRequest is one request a testReceiver got.
type receivedRequest struct {
	header http.Header
	body   []byte
}

func newTestReceiver(t *testing.T) *testReceiver {
	t.Helper()
	r := &testReceiver{status: http.StatusNoContent}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		hold := r.hold
		if hold != nil {
			r.held++
			r.mu.Unlock()
			<-hold
			r.mu.Lock()
			r.held--
			r.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		r.got = append(r.got, receivedRequest{header: req.Header.Clone(), body: body})
		status := r.status
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	r.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(r.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *testReceiver) setStatus(s int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = s
}

func (r *testReceiver) requests() []receivedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// testResultJSON mirrors the body of POST /v1/watches/{id}/webhook/test.
type testResultJSON struct {
	Type       string  `json:"type"`
	DeliveryID string  `json:"delivery_id"`
	WebhookURL string  `json:"webhook_url"`
	OK         bool    `json:"ok"`
	StatusCode *int    `json:"status_code"`
	Error      *string `json:"error"`
	SentAt     string  `json:"sent_at"`
	DurationMS int64   `json:"duration_ms"`
}

// newTestDeliveryFixture is the webhook fixture with loopback targets
// allowed (registration) and a test sender that trusts rcv; allowPrivate
// false gives the sender the production address check.
func newTestDeliveryFixture(t *testing.T, rcv *testReceiver, allowPrivate bool) *webhookFixture {
	t.Helper()
	cfg := config.Default()
	cfg.WebhookAllowPrivate = true
	f := newWebhookFixture(t, cfg)
	sender, err := webhook.NewSender(webhook.SenderConfig{AllowPrivate: allowPrivate, CAFile: rcv.caFile, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	deps := f.srv.deps
	deps.TestSender = sender
	f.srv = New(cfg, deps)
	return f
}

// TestWebhookTestDelivery: POST /v1/watches/{id}/webhook/test sends one
// request signed with the watch's current secret, of type webhook.test
// with a fresh dlv_test_ id, and answers 200 with the outcome, failures
// included; it records no delivery; the address check of real deliveries
// applies; a watch without a webhook is 409 no_webhook.
func TestWebhookTestDelivery(t *testing.T) {
	rcv := newTestReceiver(t)
	f := newTestDeliveryFixture(t, rcv, true)
	w := f.create(t, f.acct, `{"identifiers": ["123456780"]}`)
	target := "/v1/watches/" + w.ID + "/webhook/test"

	res := f.call(t, http.MethodPost, target, f.acct, "")
	wantError(t, res, http.StatusConflict, "no_webhook")
	if msg := errorMessage(t, res); !strings.Contains(msg, "POST /v1/watches/"+w.ID+"/webhook") {
		t.Errorf("message %q does not say how to register a webhook", msg)
	}
	if n := len(rcv.requests()); n != 0 {
		t.Fatalf("%d requests sent for a watch without a webhook", n)
	}

	reg := f.register(t, w.ID, rcv.srv.URL+"/hook")
	reg = decodeRegistration(t, f.call(t, http.MethodPost, "/v1/watches/"+w.ID+"/webhook/rotate", f.acct, ""))
	test := func(t *testing.T) testResultJSON {
		t.Helper()
		res := f.call(t, http.MethodPost, target, f.acct, "")
		if res.status != http.StatusOK {
			t.Fatalf("status %d, want 200; body %s", res.status, res.body)
		}
		want := sortedKeys("type", "delivery_id", "webhook_url", "ok", "status_code", "error", "sent_at", "duration_ms")
		if got := keysOf(t, res.body); !slices.Equal(got, want) {
			t.Errorf("members %v, want %v", got, want)
		}
		var out testResultJSON
		decodeBody(t, res, &out)
		return out
	}

	t.Run("accepted", func(t *testing.T) {
		out := test(t)
		if !out.OK || out.StatusCode == nil || *out.StatusCode != http.StatusNoContent || out.Error != nil {
			t.Errorf("outcome %+v, want ok, status_code 204, error null", out)
		}
		if out.Type != "webhook.test" || !strings.HasPrefix(out.DeliveryID, "dlv_test_") || out.WebhookURL != reg.WebhookURL {
			t.Errorf("outcome %+v, want type webhook.test, a dlv_test_ id, webhook_url %s", out, reg.WebhookURL)
		}
		if out.SentAt != notice.Timestamp(f.clock.Now()) {
			t.Errorf("sent_at %s, want the clock's %s", out.SentAt, notice.Timestamp(f.clock.Now()))
		}
		got := rcv.requests()
		if len(got) != 1 {
			t.Fatalf("receiver got %d requests, want 1", len(got))
		}
		r := got[0]
		if !webhook.Verify(reg.Secret, r.body, r.header.Get("X-Notices-Signature")) {
			t.Errorf("signature %q does not verify with the current secret over %s", r.header.Get("X-Notices-Signature"), r.body)
		}
		if r.header.Get("X-Notices-Delivery") != out.DeliveryID || r.header.Get("Content-Type") != "application/json" || r.header.Get("User-Agent") != webhook.UserAgent {
			t.Errorf("headers %v, want X-Notices-Delivery %s, JSON, the delivery User-Agent", r.header, out.DeliveryID)
		}
		want := fmt.Sprintf(`{"type":"webhook.test","watch_id":%q,"delivered_at":%q,"notice":null}`, w.ID, out.SentAt)
		if string(r.body) != want {
			t.Errorf("body %s, want %s", r.body, want)
		}
		if again := test(t); again.DeliveryID == out.DeliveryID {
			t.Errorf("two tests sent the same delivery id %s", out.DeliveryID)
		}
	})

	t.Run("refused by the receiver", func(t *testing.T) {
		rcv.setStatus(http.StatusInternalServerError)
		defer rcv.setStatus(http.StatusNoContent)
		out := test(t)
		if out.OK || out.StatusCode == nil || *out.StatusCode != 500 || out.Error == nil || *out.Error != "HTTP 500" {
			t.Errorf("outcome %+v, want not ok, status_code 500, error \"HTTP 500\"", out)
		}
	})

	t.Run("nothing recorded", func(t *testing.T) {
		if d := f.deliveries(t, w.ID, ""); len(d) != 0 {
			t.Errorf("test deliveries left %d delivery records: %+v", len(d), d)
		}
		got, _ := f.getWatch(t, w.ID)
		if !got.Active {
			t.Errorf("a failed test deactivated the watch")
		}
	})

	t.Run("address check of real deliveries", func(t *testing.T) {
		strict := newTestDeliveryFixture(t, rcv, false)
		sw := strict.create(t, strict.acct, `{"identifiers": ["123456780"]}`)
		strict.register(t, sw.ID, rcv.srv.URL+"/hook")
		before := len(rcv.requests())
		res := strict.call(t, http.MethodPost, "/v1/watches/"+sw.ID+"/webhook/test", strict.acct, "")
		var out testResultJSON
		decodeBody(t, res, &out)
		if res.status != 200 || out.OK || out.StatusCode != nil || out.Error == nil || *out.Error != "blocked address 127.0.0.1" {
			t.Errorf("status %d outcome %+v, want 200, not ok, no status, error \"blocked address 127.0.0.1\"", res.status, out)
		}
		if n := len(rcv.requests()); n != before {
			t.Errorf("a blocked address still got %d requests", n-before)
		}
	})

	t.Run("endpoint slots all taken", func(t *testing.T) {
		defer func(d time.Duration) { testSlotWait = d }(testSlotWait)
		testSlotWait = 50 * time.Millisecond
		hold := make(chan struct{})
		rcv.setHold(hold)
		var sends sync.WaitGroup
		for range webhook.DefaultPerHost { // requests in flight to the endpoint hold every slot
			sends.Go(func() {
				f.srv.deps.TestSender.Send(context.Background(), webhook.Request{URL: reg.WebhookURL, DeliveryID: "dlv_test_hold", Secret: "s", Body: []byte("{}")})
			})
		}
		testbinWait(t, func() bool { return rcv.waiting() == webhook.DefaultPerHost })
		res := f.call(t, http.MethodPost, target, f.acct, "")
		rcv.setHold(nil)
		close(hold)
		sends.Wait()
		wantError(t, res, http.StatusTooManyRequests, "rate_limited")
		if msg := errorMessage(t, res); !strings.Contains(msg, "retry the test") {
			t.Errorf("message %q does not say to retry", msg)
		}
		if out := test(t); !out.OK {
			t.Errorf("a test once the slots are free: %+v, want ok", out)
		}
	})

	t.Run("another account's watch and a missing one", func(t *testing.T) {
		other := f.newAccount(t, "standard").AccountKey
		wantError(t, f.call(t, http.MethodPost, target, other, ""), 404, "not_found")
		wantError(t, f.call(t, http.MethodPost, "/v1/watches/wch_aaaaaaaaaaaaaaaaaaaaaaaaaa/webhook/test", f.acct, ""), 404, "not_found")
	})

	t.Run("no sender", func(t *testing.T) {
		g := newWebhookFixture(t, config.Default())
		gw := g.create(t, g.acct, `{"identifiers": ["123456780"]}`)
		g.register(t, gw.ID, "https://hooks.example.com/x")
		wantError(t, g.call(t, http.MethodPost, "/v1/watches/"+gw.ID+"/webhook/test", g.acct, ""), 500, "server_error")
		if !strings.Contains(g.logs.String(), "TestSender is nil") {
			t.Errorf("cause not logged: %s", g.logs)
		}
	})
}

// failUntilDead makes every pending delivery of the watch dead the way
// the delivery worker does: delivery.MaxAttempts failed attempts each
// (HTTP 500), begun and recorded through the backend's ledger.
func (f *webhookFixture) failUntilDead(t *testing.T, watchID string) {
	t.Helper()
	ctx := context.Background()
	fail := store.Outcome{LastError: "HTTP 500", RetryUnit: time.Second}
	switch st := f.hooks.Webhooks.(type) {
	case *sqlite.Store:
		for range delivery.MaxAttempts {
			f.clock.Advance(time.Hour)
			jobs, err := st.Claim(ctx, f.clock.Now(), store.ClaimRequest{Limit: 100, Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs {
				if err := st.Complete(ctx, j, fail, f.clock.Now()); err != nil {
					t.Fatal(err)
				}
			}
		}
	case *redisstore.Store:
		for _, d := range f.deliveries(t, watchID, "") {
			ref := redisstore.Ref{WatchID: watchID, DeliveryID: d.ID, NoticeSeq: d.NoticeSeq}
			for range delivery.MaxAttempts {
				f.clock.Advance(time.Hour)
				b, err := st.Begin(ctx, ref, f.clock.Now(), redisstore.Hold{})
				if err != nil || b.State != redisstore.BeginAttempt {
					t.Fatalf("begin an attempt of %s: %v %+v", d.ID, err, b)
				}
				if err := st.Complete(ctx, b.Job, fail, f.clock.Now()); err != nil {
					t.Fatal(err)
				}
			}
		}
	default:
		t.Fatalf("no ledger for %T", st)
	}
	for _, d := range f.deliveries(t, watchID, "") {
		if d.Status != delivery.Dead || d.Attempts != delivery.MaxAttempts {
			t.Fatalf("delivery %s is %s after %d attempts, want dead after %d", d.ID, d.Status, d.Attempts, delivery.MaxAttempts)
		}
	}
}

// TestDeliveryRetry: POST /v1/watches/{id}/deliveries/{dlv}/retry makes a
// dead delivery pending again (202, the record: same id, attempts 0, due
// now, last_error kept) and wakes the worker; held when the watch is
// inactive; 409 delivery_not_dead for one that is not dead; 409
// no_webhook without a webhook; 404 for an unknown delivery or another
// account's watch.
func TestDeliveryRetry(t *testing.T) {
	f := newWebhookFixture(t, config.Default())
	w := f.create(t, f.acct, `{"identifiers": ["123456780"]}`)
	ns := make([]notice.Notice, 3)
	for i := range ns {
		ns[i] = arrival(fmt.Sprintf("RT%d", i), "123456780", "", "Appointment", "NSW", f.clock.Now().Add(-time.Hour))
	}
	if _, err := f.writer.UpsertNotices(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	const url = "https://hooks.example.com/retry"
	f.register(t, w.ID, url)
	if got := f.deliveries(t, w.ID, ""); len(got) != 3 {
		t.Fatalf("%d deliveries, want 3", len(got))
	}
	retry := func(key, watchID, id string) response {
		return f.call(t, http.MethodPost, "/v1/watches/"+watchID+"/deliveries/"+id+"/retry", key, "")
	}

	t.Run("a pending delivery is not dead", func(t *testing.T) {
		d := f.deliveries(t, w.ID, "")[0]
		res := retry(f.acct, w.ID, d.ID)
		wantError(t, res, http.StatusConflict, "delivery_not_dead")
		if msg := errorMessage(t, res); !strings.Contains(msg, "pending") {
			t.Errorf("message %q does not name the delivery's state", msg)
		}
	})

	f.failUntilDead(t, w.ID)
	dead := f.deliveries(t, w.ID, "")
	t.Run("no webhook", func(t *testing.T) {
		if res := f.call(t, http.MethodDelete, "/v1/watches/"+w.ID+"/webhook", f.acct, ""); res.status != http.StatusNoContent {
			t.Fatalf("DELETE webhook: %d %s", res.status, res.body)
		}
		wantError(t, retry(f.acct, w.ID, dead[0].ID), http.StatusConflict, "no_webhook")
		f.register(t, w.ID, url)
	})
	f.changes()
	f.clock.Advance(time.Minute)

	t.Run("dead becomes pending", func(t *testing.T) {
		d := dead[0]
		res := retry(f.acct, w.ID, d.ID)
		if res.status != http.StatusAccepted {
			t.Fatalf("status %d, want 202; body %s", res.status, res.body)
		}
		want := sortedKeys("id", "notice_id", "notice_seq", "status", "attempts", "last_error",
			"created_at", "updated_at", "next_attempt_at", "delivered_at")
		if ks := keysOf(t, res.body); !slices.Equal(ks, want) {
			t.Errorf("record members %v, want %v", ks, want)
		}
		var r deliveryJSON
		decodeBody(t, res, &r)
		now := notice.Timestamp(f.clock.Now())
		if r.ID != d.ID || r.NoticeID != d.NoticeID || r.Status != delivery.Pending || r.Attempts != 0 ||
			r.NextAttemptAt == nil || *r.NextAttemptAt != now || r.UpdatedAt != now || r.CreatedAt != d.CreatedAt ||
			r.LastError == nil || *r.LastError != "HTTP 500" || r.DeliveredAt != nil {
			t.Errorf("record %+v, want %s pending, 0 attempts, due and updated %s, created %s, last_error %q kept", r, d.ID, now, d.CreatedAt, "HTTP 500")
		}
		if got := f.changes(); !slices.Equal(got, []string{w.ID}) {
			t.Errorf("OnWatchChange calls %v, want [%s] (the worker is woken)", got, w.ID)
		}
		for _, l := range f.deliveries(t, w.ID, "") {
			if l.ID == d.ID && (l.Status != delivery.Pending || l.Attempts != 0) {
				t.Errorf("listed %+v, want pending with 0 attempts", l)
			}
		}
		wantError(t, retry(f.acct, w.ID, d.ID), http.StatusConflict, "delivery_not_dead")
	})

	t.Run("held while the watch is inactive", func(t *testing.T) {
		if res := f.call(t, http.MethodPatch, "/v1/watches/"+w.ID, f.acct, `{"active": false}`); res.status != 200 {
			t.Fatalf("PATCH: %d %s", res.status, res.body)
		}
		defer f.call(t, http.MethodPatch, "/v1/watches/"+w.ID, f.acct, `{"active": true}`)
		res := retry(f.acct, w.ID, dead[1].ID)
		var r deliveryJSON
		decodeBody(t, res, &r)
		if res.status != http.StatusAccepted || r.Status != delivery.Pending || r.NextAttemptAt != nil {
			t.Errorf("status %d record %+v, want 202, pending and held (next_attempt_at null)", res.status, r)
		}
	})

	t.Run("unknown delivery, another account", func(t *testing.T) {
		res := retry(f.acct, w.ID, "dlv_nope")
		wantError(t, res, 404, "not_found")
		if msg := errorMessage(t, res); !strings.Contains(msg, "/deliveries") {
			t.Errorf("message %q does not point at the deliveries list", msg)
		}
		other := f.newAccount(t, "standard").AccountKey
		wantError(t, retry(other, w.ID, dead[2].ID), 404, "not_found")
		wantError(t, retry(f.acct, "wch_aaaaaaaaaaaaaaaaaaaaaaaaaa", dead[2].ID), 404, "not_found")
		for _, l := range f.deliveries(t, w.ID, "") {
			if l.ID == dead[2].ID && l.Status != delivery.Dead {
				t.Errorf("refused retries changed %s to %s", l.ID, l.Status)
			}
		}
	})
}
