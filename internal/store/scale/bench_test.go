package scale

import (
	"context"
	"fmt"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/testservers"
)

// BenchmarkRedisBytesPerNotice: what Redis keeps per notice in scale mode.
// A register of 50,000 rows and 10,000 notices are loaded through the
// scale write path (as `noticesd ingest` writes), then 50,000 more notices
// with the register unchanged; bytes-per-notice is the growth of Redis's
// used_memory over those 50,000, total-MiB its used_memory at the end (the
// whole Redis: run it on a Redis holding nothing else). The arrival keys
// left after the load are counted (a batch's arrival:src:* keys go when it
// is cleared).
//
//	go test -tags sqlite_fts5 -run '^$' -bench RedisBytesPerNotice -benchtime 1x ./internal/store/scale
func BenchmarkRedisBytesPerNotice(b *testing.B) {
	const registerRows, base, more = 50_000, 10_000, 50_000
	ctx := context.Background()
	for b.Loop() {
		st := openTB(b)
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
		ingest(0, base)
		before := testservers.UsedMemory(b, st.Client())
		ingest(base, more)
		after := testservers.UsedMemory(b, st.Client())
		b.ReportMetric(float64(after-before)/more, "bytes-per-notice")
		b.ReportMetric(float64(after)/(1<<20), "total-MiB")
	}
}
