package scheduler

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/internal/webhook"
)

// Benchmarks of scale-mode delivery (docs/benchmarks.md): deliveries per
// second to a local TLS receiver with one and two workers (in-process
// Schedulers, each with its own Sender: at most webhook.DefaultPerHost
// requests in flight per worker to the receiver), beside a bare Go HTTPS
// POST loop with as many requests in flight as the two workers; and the
// time from arrival (the notice stored) to the first attempt at the
// receiver. Notices are read from a SQLite notice source here (Elasticsearch
// in production). Run with -benchtime=Nx: one iteration is one delivery.

// countingReceiver answers 200 at once and notes when each delivery first
// arrived.
type countingReceiver struct {
	srv    *httptest.Server
	caFile string
	n      atomic.Int64
	mu     sync.Mutex
	first  map[string]time.Time
}

func newCountingReceiver(b testing.TB) *countingReceiver {
	r := &countingReceiver{first: map[string]time.Time{}}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		if id := req.Header.Get("X-Notices-Delivery"); id != "" {
			r.mu.Lock()
			if _, ok := r.first[id]; !ok {
				r.first[id] = time.Now()
			}
			r.mu.Unlock()
		}
		r.n.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(r.srv.Close)
	r.caFile = filepath.Join(b.TempDir(), "ca.pem")
	if err := os.WriteFile(r.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw}), 0o600); err != nil {
		b.Fatal(err)
	}
	return r
}

// benchWatch creates a watch whose webhook is r.
func benchWatch(b *testing.B, h *harness, r *countingReceiver) watch.Watch {
	ctx := context.Background()
	id, _ := ident.Normalise(acn(99))
	w, err := h.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: []ident.ID{id}}, h.acc.AccountID, time.Now()),
		account.DefaultPlans()["enterprise"])
	if err != nil {
		b.Fatal(err)
	}
	if _, err := h.rs.SetWebhook(ctx, h.acc.AccountID, w.ID, r.srv.URL+"/hook", "whsec_bench", time.Now()); err != nil {
		b.Fatal(err)
	}
	return w
}

// benchWorkers starts k workers (Schedulers, each with its own Sender and
// its own arrival matching, as k worker processes run) on h, delivering to
// r.
func benchWorkers(b *testing.B, h *harness, r *countingReceiver, k int) {
	for range k {
		s, err := webhook.NewSender(webhook.SenderConfig{Timeout: 10 * time.Second, AllowPrivate: true, CAFile: r.caFile})
		if err != nil {
			b.Fatal(err)
		}
		sc, err := New(Config{Redis: h.rdb, Namespace: h.ns, Ledger: h.rs, Sender: s, RetryUnit: time.Second,
			Concurrency: DefaultConcurrency})
		if err != nil {
			b.Fatal(err)
		}
		if err := sc.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = sc.Shutdown(ctx)
		})
	}
}

// notices returns n notices of company 99 published an hour ago.
func (h *harness) benchNotices(prefix string, n int) []notice.Notice {
	out := make([]notice.Notice, n)
	pub := time.Now().Add(-time.Hour)
	for i := range out {
		x := h.tmpl
		x.SourceID = prefix + strconv.Itoa(i)
		x.ID = notice.IDFor(x.SourceID)
		a := acn(99)
		x.ACN, x.ABN = &a, nil
		x.Seq, x.CollectedAt = 0, ""
		x.PublishedAt, x.PublishedDate = notice.Timestamp(pub), notice.PublishedDate(pub)
		out[i] = x
	}
	return out
}

func BenchmarkDeliveries(b *testing.B) {
	b.Run("bare-https-post-8-in-flight", func(b *testing.B) {
		r := newCountingReceiver(b)
		pool := x509.NewCertPool()
		pool.AddCert(r.srv.Certificate())
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 8}}
		h := newHarness(b)
		body, _ := webhook.Payload("wch_bench", time.Now(), h.benchNotices("BARE-", 1)[0])
		var next atomic.Int64
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for next.Add(1) <= int64(b.N) {
					req, _ := http.NewRequest(http.MethodPost, r.srv.URL+"/hook", bytes.NewReader(body))
					req.Header.Set("X-Notices-Signature", webhook.Sign("whsec_bench", body))
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
	})
	for _, k := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers-%d", k), func(b *testing.B) {
			// The notices are stored first; the timer covers the workers'
			// whole pipeline: match, create, schedule, attempt.
			h := newHarness(b)
			r := newCountingReceiver(b)
			benchWatch(b, h, r)
			ns := h.benchNotices("THR-", b.N)
			for i := 0; i < len(ns); i += 1000 {
				if _, err := h.writer.UpsertNotices(context.Background(), ns[i:min(i+1000, len(ns))]); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			start := time.Now()
			benchWorkers(b, h, r, k)
			eventually(b, 10*time.Minute, "every delivery received", func() bool { return r.n.Load() >= int64(b.N) })
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
		})
	}
}

// BenchmarkArrivalToFirstAttempt stores notices one at a time, 20 ms
// apart, with two workers running, and reports the percentiles of the time
// from storing each notice to its first attempt reaching the receiver.
func BenchmarkArrivalToFirstAttempt(b *testing.B) {
	h := newHarness(b)
	r := newCountingReceiver(b)
	w := benchWatch(b, h, r)
	benchWorkers(b, h, r, 2)
	ns := h.benchNotices("LAT-", b.N)
	stored := make(map[string]time.Time, len(ns))
	b.ResetTimer()
	for i := range ns {
		stored[webhook.DeliveryID(w.ID, ns[i].ID)] = time.Now()
		if _, err := h.writer.UpsertNotices(context.Background(), ns[i:i+1]); err != nil {
			b.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	eventually(b, time.Minute, "every delivery received", func() bool { return r.n.Load() >= int64(b.N) })
	b.StopTimer()
	var lat []time.Duration
	r.mu.Lock()
	for id, at := range r.first {
		lat = append(lat, at.Sub(stored[id]))
	}
	r.mu.Unlock()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.5), "p50_ms")
	b.ReportMetric(pct(0.95), "p95_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
}
