package testbin

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v75/github"
)

// Receiver is a webhook endpoint for the end-to-end tests: TLS on loopback
// with a certificate of its own (WriteCA gives it to the workers as
// NOTICES_WEBHOOK_CA_FILE), every signature checked over the raw body as
// docs/webhooks.md tells receivers to (a mismatch is answered 401 and
// counted), and deliveries recorded by X-Notices-Delivery.
type Receiver struct {
	// Server is the TLS server; its URL plus a path is the webhook URL.
	Server *httptest.Server

	mu       sync.Mutex
	secret   string
	delay    time.Duration
	badSig   int
	posts    int
	byNotice map[string][]string // notice id -> distinct delivery ids
	order    []string            // notice ids in the order they first arrived
}

// NewReceiver starts a Receiver, closed when tb ends.
func NewReceiver(tb testing.TB) *Receiver {
	r := &Receiver{byNotice: map[string][]string{}}
	r.Server = httptest.NewTLSServer(r)
	tb.Cleanup(r.Server.Close)
	return r
}

// WriteCA writes the server's certificate as PEM to path, with perm.
func (r *Receiver) WriteCA(tb testing.TB, path string, perm os.FileMode) {
	tb.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Server.Certificate().Raw}), perm); err != nil {
		tb.Fatal(err)
	}
}

// SetSecret sets the webhook secret signatures are checked with.
func (r *Receiver) SetSecret(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = secret
}

// SetDelay makes each well-signed delivery wait d before it is answered
// (deliveries in flight when a test kills a worker).
func (r *Receiver) SetDelay(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delay = d
}

// ServeHTTP implements http.Handler.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	r.mu.Lock()
	secret, delay := r.secret, r.delay
	r.mu.Unlock()
	if err := github.ValidateSignature(req.Header.Get("X-Notices-Signature"), body, []byte(secret)); err != nil {
		r.mu.Lock()
		r.badSig++
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var p struct {
		WatchID string `json:"watch_id"`
		Notice  struct {
			ID string `json:"id"`
		} `json:"notice"`
	}
	if err := json.Unmarshal(body, &p); err != nil || p.Notice.ID == "" || p.WatchID == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-req.Context().Done():
			return
		}
	}
	id := req.Header.Get("X-Notices-Delivery")
	r.mu.Lock()
	r.posts++
	if _, seen := r.byNotice[p.Notice.ID]; !seen {
		r.order = append(r.order, p.Notice.ID)
	}
	if !slices.Contains(r.byNotice[p.Notice.ID], id) {
		r.byNotice[p.Notice.ID] = append(r.byNotice[p.Notice.ID], id)
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// Delivered counts the notices of ids that arrived, and lists those that
// arrived under more than one delivery id.
func (r *Receiver) Delivered(ids []string) (n int, dup []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if d := r.byNotice[id]; len(d) > 0 {
			n++
			if len(d) > 1 {
				dup = append(dup, id)
			}
		}
	}
	return n, dup
}

// Notices returns the ids of the notices delivered so far, in the order
// they first arrived.
func (r *Receiver) Notices() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}

// Counts returns how many well-signed posts arrived (repeats included)
// and how many were refused for their signature.
func (r *Receiver) Counts() (posts, badSignatures int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts, r.badSig
}
