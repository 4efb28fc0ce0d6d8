package sqlite

// Benchmarks of watches and the bulk screen on the read benchmarks'
// database (bench_test.go). Identifier lists are drawn from that database:
// the realistic mix of 70% register companies without notices, 20%
// companies with notices and 10% identifiers unknown to both, a third of
// the known ones given as ABNs.

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/watch"
)

var (
	mixOnce sync.Once
	mixPool struct{ quiet, busy []string } // register ACNs without / with notices
	mixErr  error
)

// identifierPool reads, once, register companies without notices and
// companies with notices, with their ABNs where the register has one.
func identifierPool(b *testing.B, s *Store) {
	b.Helper()
	mixOnce.Do(func() {
		read := func(q string) ([]string, error) {
			rows, err := s.read.Query(q)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var acn, abn string
				if err := rows.Scan(&acn, &abn); err != nil {
					return nil, err
				}
				// Every third as its ABN, where it has one.
				if abn != "" && len(out)%3 == 0 {
					acn = abn
				}
				out = append(out, acn)
			}
			return out, rows.Err()
		}
		mixPool.quiet, mixErr = read(`SELECT r.acn, r.abn FROM register r
			WHERE r.rowid % 7 = 0 AND r.current_name_indicator = 'Y'
			  AND NOT EXISTS (SELECT 1 FROM notices n WHERE n.acn = r.acn)
			  AND (r.abn = '' OR NOT EXISTS (SELECT 1 FROM notices n WHERE n.abn = r.abn))
			LIMIT 200000`)
		if mixErr != nil {
			return
		}
		mixPool.busy, mixErr = read(`SELECT DISTINCT n.acn, coalesce((SELECT r.abn FROM register r WHERE r.acn = n.acn LIMIT 1), '')
			FROM notices n WHERE n.acn IS NOT NULL AND n.seq % 3 = 0 LIMIT 100000`)
	})
	if mixErr != nil {
		b.Fatal(mixErr)
	}
	if len(mixPool.quiet) == 0 || len(mixPool.busy) == 0 {
		b.Fatalf("the bench database has %d register companies without notices and %d with; it needs both", len(mixPool.quiet), len(mixPool.busy))
	}
}

// identifierMix returns count distinct identifiers in the realistic mix.
func identifierMix(b *testing.B, s *Store, count int, seed int64) []ident.ID {
	b.Helper()
	identifierPool(b, s)
	r := rand.New(rand.NewSource(seed))
	seen := map[string]bool{}
	out := make([]ident.ID, 0, count)
	for tries := 0; len(out) < count && tries < 10*count; tries++ {
		var v string
		switch k := r.Intn(10); {
		case k < 7:
			v = mixPool.quiet[r.Intn(len(mixPool.quiet))]
		case k < 9:
			v = mixPool.busy[r.Intn(len(mixPool.busy))]
		default:
			// Unknown: a wrong check digit.
			first8 := fmt.Sprintf("%08d", r.Intn(100000000))
			v = first8 + strconv.Itoa((ident.ACNCheckDigit(first8)+1)%10)
		}
		if !seen[v] {
			seen[v] = true
			id, _ := ident.Normalise(v)
			out = append(out, id)
		}
	}
	return out
}

func BenchmarkScreen50k(b *testing.B) {
	s := readStore(b)
	var lists []variant[[]ident.ID]
	for seed := int64(1); seed <= 4; seed++ {
		lists = append(lists, variant[[]ident.ID]{fmt.Sprintf("mix %d", seed), identifierMix(b, s, ident.MaxIdentifiers, seed)})
	}
	warm(b, s)
	runLatency(b, lists, func(ids []ident.ID) error {
		res, err := s.Screen(context.Background(), ids, notice.Filter{IncludeDeregistration: true})
		if err == nil && (res.Counts.Matched == 0 || res.Counts.Unmatched == 0 || res.Counts.Unresolved == 0) {
			err = fmt.Errorf("screen lists are not the mix: %+v", res.Counts)
		}
		return err
	})
}

// warm loads the company index, as a server does at start.
func warm(b *testing.B, s *Store) {
	b.Helper()
	start := time.Now()
	if err := s.WarmCompanyIndex(context.Background()); err != nil {
		b.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		fmt.Fprintf(os.Stderr, "company index loaded in %s\n", d.Round(time.Millisecond))
	}
}

// benchAccount creates an enterprise account for watch benchmarks.
func benchAccount(b *testing.B, s *Store) string {
	b.Helper()
	a, err := s.CreateAccount(context.Background(), "bench", "enterprise")
	if err != nil {
		b.Fatal(err)
	}
	return a.AccountID
}

func benchWatch(ids []ident.ID, f watch.Filters, accountID string) watch.Watch {
	return watch.New(watch.CreateRequest{Identifiers: ids, Filters: f}, accountID, time.Now())
}

func BenchmarkCreateWatch50k(b *testing.B) {
	s := readStore(b)
	ctx := context.Background()
	acc := benchAccount(b, s)
	ids := identifierMix(b, s, ident.MaxIdentifiers, 5)
	plan := account.DefaultPlans()["enterprise"]
	warm(b, s)
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		w, err := s.CreateWatch(ctx, benchWatch(ids, watch.Filters{}, acc), plan)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		b.StopTimer()
		if err := s.DeleteWatch(ctx, acc, w.ID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkMatchesPoll polls watches of 50,000, 1,000 and 10 identifiers
// and a filter-only watch, each from the start of history and from a
// cursor 1,000 notices before the newest (a poller's steady state).
func BenchmarkMatchesPoll(b *testing.B) {
	s := readStore(b)
	ctx := context.Background()
	acc := benchAccount(b, s)
	plan := account.DefaultPlans()["enterprise"]
	var latest int64
	if err := s.read.QueryRow("SELECT max(seq) FROM notices").Scan(&latest); err != nil {
		b.Fatal(err)
	}
	type poll struct {
		watch string
		since int64
	}
	var polls []variant[poll]
	for i, c := range []struct {
		name string
		w    watch.Watch
	}{
		{"50k ids", benchWatch(identifierMix(b, s, ident.MaxIdentifiers, 6), watch.Filters{}, acc)},
		{"50k ids, appointments", benchWatch(identifierMix(b, s, ident.MaxIdentifiers, 6), watch.Filters{NoticePurpose: []string{"Appointment"}}, acc)},
		{"1k ids", benchWatch(identifierMix(b, s, 1000, 7), watch.Filters{}, acc)},
		{"10 ids", benchWatch(identifierMix(b, s, 10, 8), watch.Filters{}, acc)},
		{"filter-only", benchWatch(nil, watch.Filters{AppointmentType: []string{"Court Liquidation"}}, acc)},
	} {
		c.w.CreatedAt = c.w.CreatedAt.Add(time.Duration(i) * time.Millisecond)
		created, err := s.CreateWatch(ctx, c.w, plan)
		if err != nil {
			b.Fatal(err)
		}
		defer s.DeleteWatch(ctx, acc, created.ID)
		polls = append(polls,
			variant[poll]{c.name + " since 0", poll{created.ID, 0}},
			variant[poll]{c.name + " since latest-1000", poll{created.ID, latest - 1000}})
	}
	runLatency(b, polls, func(p poll) error {
		_, err := s.Matches(ctx, acc, p.watch, p.since, 100)
		return err
	})
}
