package scheduler

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/secretbox"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/store/sqlite"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/internal/webhook"
)

// unit is the retry unit of these tests: the code allows a sub-second unit
// (asynq keeps due times in whole seconds; the handler waits out the rest).
const unit = 400 * time.Millisecond

// harness is scale mode's delivery on real Redis and asynq, with notices
// kept by a SQLite notice source (as the redisstore tests do), and a real
// TLS receiver.
type harness struct {
	t      testing.TB
	rdb    redis.UniversalClient
	ns     string
	rs     *redisstore.Store
	notes  *sqlite.Store
	writer redisstore.Ingest
	acc    account.Created
	tmpl   notice.Notice
	recv   *receiver
	caFile string
	logger *slog.Logger // the schedulers' logger; nil discards
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	rdb, err := redisstore.Dial(config.Config{RedisURL: testservers.Redis(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	ns := testservers.Namespace(t)
	sq, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "notices.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	box, err := secretbox.New(bytes.Repeat([]byte{9}, 32), nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := redisstore.New(rdb, ns, sq, redisstore.Options{Secrets: box, NoMatchOnRead: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropNamespace(rdb, ns) })
	acc, err := rs.CreateAccount(context.Background(), "Hooked", "enterprise")
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, rdb: rdb, ns: ns, rs: rs, notes: sq, writer: redisstore.Ingest{Notices: storetest.Publishing{Unpublished: sq, Log: publog.New(rdb, ns, publog.Options{})}, Redis: rs},
		acc: acc, tmpl: storetest.Notices(t)[0]}
	h.recv = newReceiver(t)
	h.caFile = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.recv.srv.Certificate().Raw})
	if err := os.WriteFile(h.caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// dropNamespace removes every key of a namespace and its asynq queue.
func dropNamespace(rdb redis.UniversalClient, ns string) {
	ctx := context.Background()
	for _, pat := range []string{ns + ":*", keyspace.Prefix(ns) + "*", "{" + ns + ":a:*", "asynq:{" + QueueName(ns) + "}*"} {
		iter := rdb.Scan(ctx, 0, pat, 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Unlink(ctx, iter.Val())
		}
	}
	rdb.SRem(ctx, "asynq:queues", QueueName(ns))
}

// sender is the production sender, trusting the receiver's CA and allowed
// to reach loopback (NOTICES_WEBHOOK_ALLOW_PRIVATE).
func (h *harness) sender() *webhook.Sender {
	s, err := webhook.NewSender(webhook.SenderConfig{Timeout: 5 * time.Second, AllowPrivate: true, CAFile: h.caFile})
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// start runs one worker (a Scheduler: arrival matching and delivery) until
// the test ends.
func (h *harness) start(name string) *Scheduler {
	h.t.Helper()
	s, err := New(Config{Redis: h.rdb, Namespace: h.ns, Ledger: h.rs, Sender: h.sender(), RetryUnit: unit,
		Concurrency: 16, SweepEvery: time.Second, Logger: h.logger})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			h.t.Error(err)
		}
	})
	return s
}

func acn(n int) string {
	first8 := fmt.Sprintf("7%07d", n)
	return first8 + strconv.Itoa(ident.ACNCheckDigit(first8))
}

// watch creates a watch of company and registers the receiver's URL with
// secret.
func (h *harness) watch(company int, secret string) watch.Watch {
	h.t.Helper()
	ctx := context.Background()
	id, _ := ident.Normalise(acn(company))
	w, err := h.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: []ident.ID{id}}, h.acc.AccountID, time.Now()),
		account.DefaultPlans()["enterprise"])
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.rs.SetWebhook(ctx, h.acc.AccountID, w.ID, h.recv.srv.URL+"/hook", secret, time.Now()); err != nil {
		h.t.Fatal(err)
	}
	return w
}

// ingest stores a notice of company published at published; it arrives.
func (h *harness) ingest(source string, company int, published time.Time) notice.Notice {
	h.t.Helper()
	n := h.tmpl
	n.SourceID, n.ID = source, notice.IDFor(source)
	a := acn(company)
	n.ACN, n.ABN = &a, nil
	n.Seq, n.CollectedAt = 0, ""
	n.PublishedAt = notice.Timestamp(published)
	n.PublishedDate = notice.PublishedDate(published)
	if _, err := h.writer.UpsertNotices(context.Background(), []notice.Notice{n}); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// records returns the watch's delivery records by notice id.
func (h *harness) records(w watch.Watch) map[string]delivery.Record {
	h.t.Helper()
	list, err := h.rs.Deliveries(context.Background(), h.acc.AccountID, w.ID, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]delivery.Record{}
	for _, r := range list {
		out[r.NoticeID] = r
	}
	return out
}

// eventually polls cond until it holds or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hit is one request the receiver got.
type hit struct {
	delivery  string
	signature string
	body      []byte
	at        time.Time
}

// receiver is a TLS webhook endpoint that records every request and
// answers with status(delivery id, attempt number at this receiver).
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	hits   []hit
	status func(id string, n int) int
	delay  time.Duration
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{status: func(string, int) int { return http.StatusOK }}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		at := time.Now()
		r.mu.Lock()
		id := req.Header.Get("X-Notices-Delivery")
		n := 1
		for _, h := range r.hits {
			if h.delivery == id {
				n++
			}
		}
		r.hits = append(r.hits, hit{delivery: id, signature: req.Header.Get("X-Notices-Signature"), body: body, at: at})
		status, delay := r.status, r.delay
		r.mu.Unlock()
		time.Sleep(delay)
		w.WriteHeader(status(id, n))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) setStatus(f func(id string, n int) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = f
}

// of returns the requests of one delivery id, in order.
func (r *receiver) of(id string) []hit {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hit
	for _, h := range r.hits {
		if h.delivery == id {
			out = append(out, h)
		}
	}
	return out
}

// ids counts requests per delivery id.
func (r *receiver) ids() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, h := range r.hits {
		out[h.delivery]++
	}
	return out
}
