package worker

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
)

// benchDeliveries is how many deliveries one throughput run sends.
const benchDeliveries = 5000

// BenchmarkDeliveryThroughput measures sustained deliveries per second
// from the durable queue to one local TLS receiver through the real
// Worker loop (claim, sign, send, record), with the default bounds: 16
// attempts in flight, 4 per watch and per endpoint. Only the delivery
// phase is timed; the queue is filled first.
func BenchmarkDeliveryThroughput(b *testing.B) {
	var total int
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := newFix(b)
		// Four watches on the one receiver, so the per-watch bound is not
		// the only limit; the Sender still allows 4 per endpoint.
		for w := 0; w < 4; w++ {
			f.hook(f.watch(watchA))
		}
		var acns []string
		for j := 0; j < benchDeliveries/4; j++ {
			acns = append(acns, acnA)
		}
		f.ingest(0, acns...)
		f.work.cfg.batch = DefaultBatch
		if n := f.dispatch(); n != benchDeliveries {
			b.Fatalf("queued %d, want %d", n, benchDeliveries)
		}
		var mu sync.Mutex
		got := 0
		f.rcv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got++
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		})
		work, err := New(Config{Queue: f.st, Sender: f.sender, RetryUnit: unit})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := work.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		for {
			mu.Lock()
			n := got
			mu.Unlock()
			if n >= benchDeliveries {
				break
			}
			if time.Since(start) > 2*time.Minute {
				b.Fatalf("only %d of %d delivered in 2 minutes", n, benchDeliveries)
			}
			time.Sleep(time.Millisecond)
		}
		elapsed += time.Since(start)
		b.StopTimer()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := work.Shutdown(ctx); err != nil {
			b.Fatal(err)
		}
		cancel()
		total += benchDeliveries
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "deliveries/s")
}

// BenchmarkArrivalToFirstAttempt measures the latency from a notice being
// stored (as ingest or the collector stores it) to the receiver getting
// its first attempt, with the real Dispatcher (default 250 ms poll) and
// Worker loops, arrivals spread over the poll interval. It reports the
// median and the 95th percentile.
func BenchmarkArrivalToFirstAttempt(b *testing.B) {
	const samples = 20
	var lat []time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := newFix(b)
		w := f.watch(watchA)
		f.hook(w)
		arrived := make(chan time.Time, samples)
		f.rcv.srv.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			arrived <- time.Now()
			rw.WriteHeader(http.StatusNoContent)
		})
		work, err := New(Config{Queue: f.st, Sender: f.sender, RetryUnit: unit})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if err := work.Start(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for s := 0; s < samples; s++ {
			// Spread arrivals over the poll interval, as real ones are.
			time.Sleep(time.Duration(s*37%250) * time.Millisecond)
			n := realNotice(fmt.Sprintf("LAT-%d-%d", i, s))
			stored := time.Now()
			if _, err := f.st.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
				b.Fatal(err)
			}
			select {
			case at := <-arrived:
				lat = append(lat, at.Sub(stored))
			case <-time.After(10 * time.Second):
				b.Fatal("a notice was not delivered within 10 s")
			}
		}
		b.StopTimer()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_ = work.Shutdown(sctx)
		cancel()
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}
