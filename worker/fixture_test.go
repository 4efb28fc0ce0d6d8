package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v75/github"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/secretbox"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/sqlite"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/internal/webhook"
)

// unit is the retry unit of these tests (the schedule of SPEC.md).
const unit = 10 * time.Minute

// received is one delivery the receiver accepted (signature valid).
type received struct {
	ID        string
	Body      []byte
	WatchID   string          `json:"watch_id"`
	Delivered string          `json:"delivered_at"`
	Notice    json.RawMessage `json:"notice"`
}

// receiver is a webhook endpoint over real TLS that does what SPEC.md asks
// of receivers: it verifies X-Notices-Signature over the raw body with an
// independent implementation (go-github's ValidateSignature) before
// parsing, answers 401 on a mismatch, and deduplicates on
// X-Notices-Delivery. status decides the answer to a valid request.
type receiver struct {
	srv    *httptest.Server
	caFile string

	mu       sync.Mutex
	secret   string
	status   func(n int) int // n counts valid requests so far, from 1
	requests int             // every request
	valid    int             // requests with a valid signature
	badSig   int
	unique   map[string]received // accepted deliveries by id
	order    []string            // ids in first-accepted order
	hold     chan struct{}       // when non-nil, valid requests wait on it
	entered  chan struct{}       // receives once per held request
}

func newReceiver(t testing.TB) *receiver {
	t.Helper()
	r := &receiver{unique: map[string]received{}, status: func(int) int { return http.StatusNoContent }}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	r.caFile = filepath.Join(t.TempDir(), "receiver-ca.pem")
	pemData := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	if err := os.WriteFile(r.caFile, pemData, 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.requests++
	secret := r.secret
	r.mu.Unlock()
	// Verify over the raw bytes before any JSON parsing.
	if err := github.ValidateSignature(req.Header.Get("X-Notices-Signature"), body, []byte(secret)); err != nil ||
		req.Header.Get("Content-Type") != "application/json" || req.Method != http.MethodPost {
		r.mu.Lock()
		r.badSig++
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	r.mu.Lock()
	r.valid++
	n := r.valid
	status := r.status(n)
	hold, entered := r.hold, r.entered
	r.mu.Unlock()
	if hold != nil {
		entered <- struct{}{}
		select {
		case <-hold:
		case <-req.Context().Done():
			// The sender gave up: abort without an answer (returning would
			// send an implicit 200 that a slow sender could still read).
			panic(http.ErrAbortHandler)
		}
	}
	if status/100 == 2 {
		var got received
		if err := json.Unmarshal(body, &got); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		got.ID, got.Body = req.Header.Get("X-Notices-Delivery"), body
		r.mu.Lock()
		if _, dup := r.unique[got.ID]; !dup {
			r.unique[got.ID] = got
			r.order = append(r.order, got.ID)
		}
		r.mu.Unlock()
	}
	if status/100 == 3 {
		w.Header().Set("Location", "https://example.com/elsewhere")
	}
	w.WriteHeader(status)
}

// setSecret sets the secret the receiver verifies with.
func (r *receiver) setSecret(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = s
}

// setStatus sets the answer to valid requests.
func (r *receiver) setStatus(f func(n int) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = f
}

// counts returns (every request, valid ones, accepted unique deliveries).
func (r *receiver) counts() (requests, valid, unique int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, r.valid, len(r.unique)
}

// got returns the accepted deliveries in first-accepted order.
func (r *receiver) got() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]received, 0, len(r.order))
	for _, id := range r.order {
		out = append(out, r.unique[id])
	}
	return out
}

// fix is a store with one account and a fake clock, a receiver, and a
// Worker and its Dispatcher on the clock, driven by runOnce and RunOnce.
type fix struct {
	t       testing.TB
	ctx     context.Context
	st      *sqlite.Store
	clock   *storetest.Clock
	account string
	rcv     *receiver
	sender  *webhook.Sender
	disp    *Dispatcher
	work    *Worker
	seq     int
}

// senderConfig is the configuration of the test Sender: trusts the
// receiver, allows loopback.
func senderConfig(r *receiver) webhook.SenderConfig {
	return webhook.SenderConfig{AllowPrivate: true, CAFile: r.caFile, Timeout: 5 * time.Second}
}

func newFix(t testing.TB) *fix {
	t.Helper()
	return newFixWith(t, nil)
}

// newFixWith builds the fixture; tweak, if set, adjusts the Sender
// configuration.
func newFixWith(t testing.TB, tweak func(*webhook.SenderConfig)) *fix {
	t.Helper()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Start)
	box, err := secretbox.New(bytes.Repeat([]byte{7}, secretbox.KeySize), nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "notices.db"), sqlite.WithClock(clock.Now), sqlite.WithSecretBox(box))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	created, err := st.CreateAccount(ctx, "Acme", "enterprise")
	if err != nil {
		t.Fatal(err)
	}
	f := &fix{t: t, ctx: ctx, st: st, clock: clock, account: created.AccountID, rcv: newReceiver(t)}
	cfg := senderConfig(f.rcv)
	if tweak != nil {
		tweak(&cfg)
	}
	if f.sender, err = webhook.NewSender(cfg); err != nil {
		t.Fatal(err)
	}
	if f.work, err = New(Config{Queue: st, Sender: f.sender, RetryUnit: unit, now: clock.Now, batch: 3}); err != nil {
		t.Fatal(err)
	}
	f.disp = f.work.Dispatcher
	return f
}

// watch creates a watch from a POST /v1/watches body.
func (f *fix) watch(body string) string {
	f.t.Helper()
	req, err := watch.ParseCreate([]byte(body))
	if err != nil {
		f.t.Fatal(err)
	}
	w, err := f.st.CreateWatch(f.ctx, watch.New(req, f.account, f.clock.Now()), account.DefaultPlans()["enterprise"])
	if err != nil {
		f.t.Fatal(err)
	}
	return w.ID
}

// hook registers the receiver as the watch's webhook (path /watchID) and
// makes the receiver verify with the new secret.
func (f *fix) hook(watchID string) string {
	f.t.Helper()
	secret := webhook.NewSecret()
	if _, err := f.st.SetWebhook(f.ctx, f.account, watchID, f.rcv.srv.URL+"/"+watchID, secret, f.clock.Now()); err != nil {
		f.t.Fatal(err)
	}
	f.rcv.setSecret(secret)
	return secret
}

// ingest stores notices of the given ACNs, published ago before now, as
// an ingest would, and returns their ids.
func (f *fix) ingest(ago time.Duration, acns ...string) []string {
	f.t.Helper()
	var batch []notice.Notice
	var ids []string
	for _, acn := range acns {
		f.seq++
		a := acn
		src := fmt.Sprintf("7E%07d", f.seq)
		batch = append(batch, notice.Notice{
			SourceID: src, PublishedAt: notice.Timestamp(f.clock.Now().Add(-ago)), ACN: &a,
			CompanyName: "ALPHA PTY LTD", NoticeType: "Appointment of liquidator", NoticeCode: "APP",
			NoticePurpose: "Appointment", State: "NSW", Status: "In Liquidation", Text: "notice text " + src,
			Practitioners: []notice.Practitioner{{Name: "Jane Doe", Firm: "Doe & Co", Role: "Liquidator"}},
		})
		ids = append(ids, notice.IDFor(src))
	}
	if _, err := f.st.UpsertNotices(f.ctx, batch); err != nil {
		f.t.Fatal(err)
	}
	return ids
}

// dispatch runs the Dispatcher once and returns the deliveries created.
func (f *fix) dispatch() int {
	f.t.Helper()
	n, err := f.disp.RunOnce(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// runOnce is one round of the Worker's loop, synchronous: it claims the
// deliveries due now (up to concurrency, at most perWatch per watch),
// attempts them concurrently, records every outcome and returns how many
// it attempted.
func (w *Worker) runOnce(ctx context.Context) (attempted int, err error) {
	jobs, err := w.cfg.Queue.Claim(ctx, w.cfg.now(), store.ClaimRequest{Limit: concurrency, Lease: w.lease, PerWatch: perWatch})
	if err != nil {
		return 0, fmt.Errorf("worker: claim due deliveries: %w", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		wg.Go(func() {
			if _, err := w.attempter.Attempt(ctx, j); !errors.Is(err, ErrInterrupted) {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return len(jobs), errors.Join(errs...)
}

// attempt runs the Worker once and returns the attempts made.
func (f *fix) attempt() int {
	f.t.Helper()
	n, err := f.work.runOnce(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// drain runs the Worker until nothing more is due now (runOnce takes at
// most PerWatch of one watch) and returns the attempts made.
func (f *fix) drain() int {
	f.t.Helper()
	total := 0
	for {
		n := f.attempt()
		if n == 0 {
			return total
		}
		total += n
	}
}

// records lists the watch's deliveries, newest first.
func (f *fix) records(watchID string) []delivery.Record {
	f.t.Helper()
	rs, err := f.st.Deliveries(f.ctx, f.account, watchID, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	return rs
}

// patch sets the watch's active flag now.
func (f *fix) patch(id string, active bool) {
	f.t.Helper()
	if _, err := f.st.UpdateWatch(f.ctx, f.account, id, watch.Patch{Active: &active}, f.clock.Now()); err != nil {
		f.t.Fatal(err)
	}
}

// getWatch reads a watch.
func (f *fix) getWatch(id string) watch.Watch {
	f.t.Helper()
	w, err := f.st.Watch(f.ctx, f.account, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return w
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("bad JSON %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("bad JSON %s: %v", b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

const (
	acnA   = storetest.ACNAlpha
	acnB   = "600000002"
	watchA = `{"identifiers": ["` + acnA + `"]}`
)
