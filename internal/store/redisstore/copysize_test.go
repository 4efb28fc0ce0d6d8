package redisstore

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

// BenchmarkScreenCopySize measures what a replica's in-memory screen copy
// holds at national scale, without Redis: a register of 4,000,000
// companies (9-digit ACNs, each with the ABN "51"+ACN, names of about 30
// bytes), then 1,000,000 notice summaries (encodeSummary of the fixture
// notices, each on a register company's ACN, one in five with its ABN
// too) and the register names of their 1,000,000 companies (what a
// replica holds once it has screened every company with notices; counted
// in notices-MiB). It reports the heap each part holds after a GC and how long
// building it from the entries took (the HSCAN round trips of a real load
// come on top); total-MiB is both parts' heap, sys-MiB what the runtime
// took from the system meanwhile (with the collector's headroom and the
// builders' peaks: nearest to the RSS the copy adds).
//
//	go test -tags sqlite_fts5 -run '^$' -bench ScreenCopySize -benchtime 1x ./internal/store/redisstore
func BenchmarkScreenCopySize(b *testing.B) {
	const companies, notices = 4_000_000, 1_000_000
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	sys := func() uint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.Sys
	}
	tmpl := storetest.Notices(b)
	for b.Loop() {
		base, baseSys := heap(), sys()
		start := time.Now()
		var rb regBuilder
		for i := 0; i < companies; i++ {
			a := fmt.Sprintf("%09d", 100_000_000+i*7)
			rb.entry(a, true)
			rb.abn("51"+a, a)
		}
		reg := rb.build("1")
		regBuild := time.Since(start)
		regHeap := heap() - base
		start = time.Now()
		nc := &summarySlab{}
		for i := 0; i < notices; i++ {
			n := tmpl[i%len(tmpl)]
			n.Seq = int64(i + 1)
			a := fmt.Sprintf("%09d", 100_000_000+(i*4%companies)*7)
			n.ACN, n.ABN = &a, nil
			if i%5 == 0 {
				abn := "51" + a
				n.ABN = &abn
			}
			nc.apply([]publog.Entry{{ID: "1-0", Summary: publog.EncodeSummary(&n)}})
		}
		// A replica that has screened every company with notices holds
		// their names (fillNames): the most it holds.
		cos, names, got := make([]int32, 0, 1024), make([]string, 0, 1024), make([]string, 1024)
		for i := 0; i < notices; i++ {
			co, ok := reg.company(fmt.Sprintf("%09d", 100_000_000+(i*4%companies)*7))
			if !ok {
				b.Fatal("a notice's company is not in the register copy")
			}
			cos, names = append(cos, co), append(names, fmt.Sprintf("COMPANY %07d HOLDINGS PTY LTD", i*4%companies))
			if len(cos) == cap(cos) || i == notices-1 {
				read := func(missing []int) ([]string, error) {
					if len(missing) != len(names) {
						b.Fatal("a company's name held before it was read")
					}
					return names, nil
				}
				if err := reg.names(cos, got[:len(cos)], read); err != nil {
					b.Fatal(err)
				}
				cos, names = cos[:0], names[:0]
			}
		}
		noticeBuild := time.Since(start)
		noticeHeap := heap() - base - regHeap
		if _, ok := reg.company(fmt.Sprintf("%09d", 100_000_000)); !ok || slabCount(nc) != notices {
			b.Fatal("copy incomplete")
		}
		b.ReportMetric(float64(regHeap)/(1<<20), "register-MiB")
		b.ReportMetric(float64(regHeap+noticeHeap)/(1<<20), "total-MiB")
		// What the Go runtime took from the system meanwhile: the copies
		// with the garbage collector's headroom and the builders' peaks,
		// the figure closest to the RSS the copy adds to a process.
		b.ReportMetric(float64(sys()-baseSys)/(1<<20), "sys-MiB")
		b.ReportMetric(float64(noticeHeap)/(1<<20), "notices-MiB")
		b.ReportMetric(regBuild.Seconds(), "register-build-s")
		b.ReportMetric(noticeBuild.Seconds(), "notices-build-s")
		runtime.KeepAlive(reg)
		runtime.KeepAlive(nc)
	}
}
