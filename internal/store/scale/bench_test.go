package scale

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/testservers"
)

// BenchmarkRedisBytesPerNotice: what Redis keeps per notice in scale mode.
// A register of 50,000 rows and 10,000 notices are loaded through the
// scale write path (as `noticesd ingest` writes), then 50,000 more notices
// with the register unchanged; bytes-per-notice is the growth of Redis's
// used_memory over those 50,000, total-MiB its used_memory at the end (the
// whole Redis: run it on a Redis holding nothing else). Each measure is
// taken settled: arrival matching caught up (MatchArrivals until it finds
// nothing) and the publish log past its retention, at its minimum (10 s),
// trimmed by the publish of one amended notice (which counts in both
// measures), so what remains per notice is what Redis keeps for good.
//
//	go test -tags sqlite_fts5 -run '^$' -bench RedisBytesPerNotice -benchtime 1x ./internal/store/scale
func BenchmarkRedisBytesPerNotice(b *testing.B) {
	const registerRows, base, more = 50_000, 10_000, 50_000
	const settle = 10 * time.Second // NOTICES_PUBLISH_LOG_RETENTION's minimum
	ctx := context.Background()
	for b.Loop() {
		cfg := testConfig(b)
		cfg.PublishLogRetention = settle
		st, err := Open(ctx, cfg, redisstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		w := st.Writer()
		rows := make([]notice.RegisterRow, registerRows)
		for i := range rows {
			a := acn(i)
			rows[i] = notice.RegisterRow{CompanyName: fmt.Sprint("COMPANY ", i, " PTY LTD"), ACN: a, ABN: "51" + a, CurrentNameIndicator: "Y"}
		}
		l, err := w.BeginRegister(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Add(ctx, rows); err != nil {
			b.Fatal(err)
		}
		if err := l.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		ingest := func(from, n int) {
			for lo := from; lo < from+n; lo += 5000 {
				batch := make([]notice.Notice, 0, 5000)
				for i := lo; i < min(lo+5000, from+n); i++ {
					a := acn(i % registerRows)
					abn := ""
					if i%5 == 0 {
						abn = "51" + a
					}
					batch = append(batch, mk(fmt.Sprint("RB-", i), a, abn, "VIC", "LIQ"))
				}
				if _, err := w.UpsertNotices(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
		}
		// measure settles what the ingests left and returns used_memory.
		amend := 0
		measure := func() int64 {
			for {
				n, err := st.Redis.MatchArrivals(ctx, 5000)
				if err != nil {
					b.Fatal(err)
				}
				if n == 0 {
					break
				}
			}
			time.Sleep(settle + time.Second)
			n := mk("RB-0", acn(0), "51"+acn(0), "VIC", "LIQ")
			amend++
			n.CompanyName = fmt.Sprint("AMENDED ", amend)
			if _, err := w.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
				b.Fatal(err)
			}
			return testservers.UsedMemory(b, st.Client())
		}
		ingest(0, base)
		before := measure()
		ingest(base, more)
		after := measure()
		b.ReportMetric(float64(after-before)/more, "bytes-per-notice")
		b.ReportMetric(float64(after)/(1<<20), "total-MiB")
	}
}
