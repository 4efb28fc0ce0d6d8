package elastic

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/ident"
)

// BenchmarkESCompanyTogether times the two ways of sending a company
// view's searches together (companySearches: the register rows, the
// notices and for an ABN the rows of its ACN), alternately on the same
// companies of the sample: one _msearch (what Company sends) and each
// search as its own _search, all at once from their own goroutines. It
// reports both p50s and concurrent-x-msearch (above 1: the _msearch is
// faster).
//
//	go test -tags sqlite_fts5 -run '^$' -bench ESCompanyTogether -benchtime 400x ./internal/store/elastic
func BenchmarkESCompanyTogether(b *testing.B) {
	s := readBench(b)
	ctx := context.Background()
	var ids []ident.ID
	for _, acn := range readACNs {
		ids = append(ids, ident.ID{Value: acn, Kind: ident.ACN}, ident.ID{Value: ident.ABNFromACN(acn), Kind: ident.ABN})
	}
	msearch := func(id ident.ID) error {
		body, err := msearchBody(companySearches(s, id).searches)
		if err != nil {
			return err
		}
		return s.do(ctx, s.timeout, http.MethodPost, "/_msearch", body, nil)
	}
	concurrent := func(id ident.ID) error {
		items := companySearches(s, id).searches
		errs := make([]error, len(items))
		var wg sync.WaitGroup
		for i, it := range items {
			wg.Go(func() { errs[i] = s.searchRead(ctx, "/"+it.index+"/_search", it.body, new(searchAnswer)) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	for _, id := range ids { // untimed: connections, caches
		if err := msearch(id); err != nil {
			b.Fatal(err)
		}
		if err := concurrent(id); err != nil {
			b.Fatal(err)
		}
	}
	sends := [2]func(ident.ID) error{msearch, concurrent}
	var lats [2]lat
	b.ResetTimer()
	for i := 0; i < max(b.N, 200); i++ {
		id := ids[i%len(ids)]
		for k := range 2 {
			which := (i + k) % 2 // alternate which goes first
			t := time.Now()
			if err := sends[which](id); err != nil {
				b.Fatal(err)
			}
			lats[which] = append(lats[which], time.Since(t))
		}
	}
	b.StopTimer()
	mp, cp := lats[0].report(b, "msearch-"), lats[1].report(b, "concurrent-")
	if mp > 0 {
		b.ReportMetric(cp/mp, "concurrent-x-msearch")
	}
}
