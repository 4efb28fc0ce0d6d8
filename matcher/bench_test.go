package matcher

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// benchSize is the shape of the benchmark's watch population.
type benchSize struct {
	watches     int // in all
	identifiers int // in all, over the watches with identifiers
	huge        int // watches of hugeSize identifiers
	hugeSize    int
	filterOnly  int // watches with filters and no identifiers, most with q
	companies   int // distinct ACNs identifiers are drawn from
}

func benchShape() benchSize {
	if os.Getenv("NOTICES_BENCH_SMALL") == "1" {
		return benchSize{watches: 1_000, identifiers: 500_000, huge: 2, hugeSize: 50_000, filterOnly: 20, companies: 300_000}
	}
	return benchSize{watches: 10_000, identifiers: 5_000_000, huge: 10, hugeSize: 50_000, filterOnly: 100, companies: 2_000_000}
}

// benchACN returns the i-th company's ACN; benchABN its ABN.
func benchACN(i int) string { return fmt.Sprintf("%09d", 100_000_000+i*3) }
func benchABN(i int) string { return "5" + strconv.Itoa(i%10) + benchACN(i) }

// benchEntries streams the watches: a few huge ones, filter-only ones
// (with q, some also with a state), and many of a few hundred identifiers,
// a tenth given as ABNs with their resolved ACN added, as a caller would.
func benchEntries(sz benchSize) iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		rng := rand.New(rand.NewPCG(7, 11))
		qs := []string{"liquidator", `"voluntary administration"`, "receiver OR manager", "deed NOT company", "smith*", `"jane citizen"`}
		normal := sz.watches - sz.huge - sz.filterOnly
		left := sz.identifiers - sz.huge*sz.hugeSize // for the normal watches
		for w := range sz.watches {
			e := Entry{WatchID: fmt.Sprintf("wch_bench%06d", w), Active: w%50 != 0, Filter: notice.Filter{IncludeDeregistration: w%4 != 0}}
			n := 0
			switch {
			case w < sz.huge:
				n = sz.hugeSize
			case w < sz.huge+sz.filterOnly:
				q, err := query.Parse(qs[w%len(qs)])
				if err != nil {
					panic(err)
				}
				e.Filter.Q = q
				if w%3 == 0 {
					e.Filter.State = []string{"NSW", "VIC"}
				}
			default:
				// From a quarter to one and three quarters of the mean
				// still to place, so the total comes out right.
				mean := left / normal
				n = min(left, mean/4+rng.IntN(mean*3/2+1))
				if normal == 1 {
					n = left
				}
				left -= n
				normal--
			}
			e.Identifiers = make([]string, 0, n)
			for len(e.Identifiers) < n {
				c := rng.IntN(sz.companies)
				if rng.IntN(10) == 0 {
					e.Identifiers = append(e.Identifiers, benchABN(c), benchACN(c))
				} else {
					e.Identifiers = append(e.Identifiers, benchACN(c))
				}
			}
			if !yield(e) {
				return
			}
		}
	}
}

// benchNotices returns arriving notices: most for companies in the pool
// (watched by a few watches, some by a huge one), some for unknown
// companies, some carrying only an ABN the register resolves.
func benchNotices(sz benchSize) []*notice.Notice {
	rng := rand.New(rand.NewPCG(3, 5))
	text := strings.Repeat("Notice is given that the members resolved to wind up the company voluntarily and appointed a liquidator. ", 8)
	states := []string{"NSW", "VIC", "QLD", "WA"}
	out := make([]*notice.Notice, 1000)
	for i := range out {
		c := rng.IntN(sz.companies)
		n := &notice.Notice{
			ID: fmt.Sprintf("ntc_%d", i), PublishedDate: "2026-03-02", CompanyName: fmt.Sprintf("COMPANY %d PTY LTD", c),
			NoticeType: "Appointment of Liquidator", NoticeCode: "APLQ", NoticePurpose: "Appointment",
			AppointmentType: strp("Creditors' Voluntary Liquidation"), State: states[i%4], Status: "In Liquidation",
			Text: text, Practitioners: []notice.Practitioner{{Name: "Jane Citizen", Firm: "Citizen Partners"}},
		}
		acn, abn := benchACN(c), benchABN(c)
		switch i % 10 {
		case 0: // unknown company
			acn = fmt.Sprintf("%09d", 900_000_000+i)
			n.ACN = &acn
		case 1, 2: // ABN only
			n.ABN = &abn
		default:
			n.ACN, n.ABN = &acn, &abn
		}
		out[i] = n
	}
	return out
}

// BenchmarkMatchOneNotice matches one arriving notice against 10,000
// watches holding 5,000,000 identifiers (NOTICES_BENCH_SMALL=1: 1,000 and
// 500,000) and reports the p50 and p99 of a single Match and the heap the
// index holds.
func BenchmarkMatchOneNotice(b *testing.B) {
	sz := benchShape()
	notices := benchNotices(sz)
	resolve := func(abn string) []string { return []string{abn[2:]} } // every bench ABN is 2 digits + ACN

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	ix := new(Index)
	if err := ix.Replace(benchEntries(sz)); err != nil {
		b.Fatal(err)
	}
	build := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	postings := 0
	for _, bk := range ix.buckets {
		postings += len(bk)
	}
	b.Logf("%d watches, %d postings, built in %v", ix.Len(), postings, build.Round(time.Millisecond))

	// One more huge watch, added and removed by hand (a create and a delete).
	big := Entry{WatchID: "wch_bench_extra", Filter: notice.Filter{IncludeDeregistration: true}}
	for c := range sz.hugeSize {
		big.Identifiers = append(big.Identifiers, benchACN(c*7%sz.companies))
	}
	t0 := time.Now()
	if err := ix.Add(big); err != nil {
		b.Fatal(err)
	}
	addDur := time.Since(t0)
	t0 = time.Now()
	ix.Remove(big.WatchID)
	removeDur := time.Since(t0)

	var durs []time.Duration
	matched, i := 0, 0
	for b.Loop() {
		n := notices[i%len(notices)]
		i++
		t0 := time.Now()
		matched += len(ix.Match(n, resolve))
		durs = append(durs, time.Since(t0))
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(durs[len(durs)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(matched)/float64(len(durs)), "watches/notice")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "index-MB")
	b.ReportMetric(build.Seconds(), "build-s")
	b.ReportMetric(float64(addDur.Microseconds())/1000, "add-huge-ms")
	b.ReportMetric(float64(removeDur.Microseconds())/1000, "remove-huge-ms")
	runtime.KeepAlive(ix)
}
