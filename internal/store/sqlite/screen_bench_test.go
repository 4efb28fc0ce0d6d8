package sqlite

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// BenchmarkScreen50kFiltered screens the realistic 50,000-identifier mix
// (BenchmarkScreen50k) with filters: those the company index evaluates in
// memory, and a q, which SQL evaluates.
func BenchmarkScreen50kFiltered(b *testing.B) {
	s := readStore(b)
	ids := identifierMix(b, s, ident.MaxIdentifiers, 1)
	q, err := query.Parse("creditors")
	if err != nil {
		b.Fatal(err)
	}
	var filters []variant[notice.Filter]
	for i, f := range []notice.Filter{
		{},
		{IncludeDeregistration: true, NoticePurpose: []string{"appointment"}, State: []string{"NSW", "VIC"}},
		{IncludeDeregistration: true, From: daysBefore(365)},
		{AppointmentType: []string{"Court Liquidation", "Creditors' Voluntary Liquidation"}, To: daysBefore(30)},
		{IncludeDeregistration: true, Q: q},
	} {
		filters = append(filters, variant[notice.Filter]{fmt.Sprintf("filters %d:%s", i, describe(f)), f})
	}
	warm(b, s)
	runLatency(b, filters, func(f notice.Filter) error {
		_, err := s.Screen(context.Background(), ids, f)
		return err
	})
}

// BenchmarkCompanyIndexLoad loads the company index from scratch (as a
// server's start does) and reports the load time and the heap the index
// keeps (runtime.MemStats, after a collection).
func BenchmarkCompanyIndexLoad(b *testing.B) {
	s := readStore(b)
	var retained float64
	var took time.Duration
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var ix companyIndex
		start := time.Now()
		snap, err := ix.current(context.Background(), s.read)
		if err != nil {
			b.Fatal(err)
		}
		took = time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&after)
		retained = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
		if i == 0 {
			b.Logf("%d register ACNs, %d names, %d ACN and %d ABN postings, %d notice slots, %d values: %.1f MB",
				len(snap.acns), len(snap.names.acns), len(snap.byACN.keys), len(snap.byABN.keys), len(snap.notes), len(snap.values), retained)
		}
		runtime.KeepAlive(snap)
	}
	b.ReportMetric(retained, "MB")
	b.ReportMetric(took.Seconds(), "load-s")
}
