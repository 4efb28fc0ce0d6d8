package redisstore

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
)

// Benchmarks against the live Redis (NOTICES_TEST_REDIS_URL). Each reports
// per-operation p50/p99 in ms beside the raw engine doing the same lookups
// in one go-redis pipeline where that applies. Run:
//
//	go test -tags sqlite_fts5 -run '^$' -bench . -benchtime 20x ./internal/store/redisstore

func report(b *testing.B, durs []time.Duration) {
	slices.Sort(durs)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(durs[len(durs)/2]), "p50-ms")
	b.ReportMetric(ms(durs[len(durs)*99/100]), "p99-ms")
}

// cpuTime is the CPU time (user and system) this process has used: on a
// shared machine the CPU an operation costs varies far less with the load
// than its wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU records the process CPU time per operation since start (the
// garbage collector's included; a Redis server's not).
func reportCPU(b *testing.B, start time.Duration, ops int) float64 {
	ms := float64((cpuTime() - start).Microseconds()) / 1000 / float64(ops)
	b.ReportMetric(ms, "cpu-ms/op")
	return ms
}

// screenData loads a register of n companies (ACN and ABN each) and
// notices for every other company, and returns the identifiers to screen:
// half ACNs, half ABNs.
func screenData(b *testing.B, f fixture, n int) []ident.ID {
	ctx := context.Background()
	both := composite{notices: f.notices, rs: f.rs}
	l, err := both.BeginRegister(ctx)
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]notice.RegisterRow, 0, n)
	for i := 0; i < n; i++ {
		a := acn(i)
		rows = append(rows, notice.RegisterRow{CompanyName: fmt.Sprint("COMPANY ", i, " PTY LTD"), ACN: a, ABN: "51" + a, CurrentNameIndicator: "Y"})
	}
	if err := l.Add(ctx, rows); err != nil {
		b.Fatal(err)
	}
	if err := l.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	tmpl := storetest.Notices(b)[0]
	var ns []notice.Notice
	for i := 0; i < n; i += 2 {
		ns = append(ns, genNotice(b, tmpl, fmt.Sprint("B-", i), i))
	}
	// Through the scale write path: into the SQLite store (the embedded
	// figure's data) and recorded in Redis.
	for len(ns) > 0 {
		chunk := ns[:min(len(ns), 5000)]
		ns = ns[len(chunk):]
		if _, err := both.UpsertNotices(ctx, chunk); err != nil {
			b.Fatal(err)
		}
	}
	ids := make([]ident.ID, n)
	for i := range ids {
		if i%2 == 0 {
			ids[i] = ident.ID{Kind: ident.ACN, Value: acn(i)}
		} else {
			ids[i] = ident.ID{Kind: ident.ABN, Value: "51" + acn(i)}
		}
	}
	return ids
}

// BenchmarkScreen50k: POST /v1/match's store call with 50,000 identifiers
// answered from the in-memory copy ("copy", with its CPU per screen as a
// multiple of the embedded store's, x-embedded-cpu) and with the register
// read from Redis ("store": the notices come from the copy either way),
// beside the embedded store's screen of the same data ("embedded") and
// the raw figures: a bare Go map lookup of the 50,000 ("map"), and the
// same Redis register lookups as a go-redis pipeline written by hand
// ("raw-pipeline").
func BenchmarkScreen50k(b *testing.B) {
	ctx := context.Background()
	f := newFixture(b, Options{})
	ids := screenData(b, f, 50000)
	filter := notice.Filter{IncludeDeregistration: true}
	var embeddedCPU float64 // the embedded screen's CPU ms per screen
	b.Run("embedded", func(b *testing.B) {
		// The embedded store's screen of the same register and notices
		// (its company index loaded by the first, untimed, screen): the
		// figure the copy's CPU per screen is compared with.
		if _, err := f.notices.Screen(ctx, ids, filter); err != nil {
			b.Fatal(err)
		}
		embeddedCPU = timeScreens(b, f.notices, ids, filter)
	})
	b.Run("copy", func(b *testing.B) {
		// The store call answered from the in-memory copy (loaded by the
		// first, untimed, screen).
		r := f.sameNamespace(b, copyOptions)
		if _, err := (copyScreens{r}).Screen(ctx, ids, filter); err != nil {
			b.Fatal(err)
		}
		cpu := timeScreens(b, r, ids, filter)
		if embeddedCPU > 0 {
			b.ReportMetric(cpu/embeddedCPU, "x-embedded-cpu")
		}
		if _, fromRedis := r.ScreenCopy().Counts(); fromRedis != 0 {
			b.Fatalf("%d screens read Redis", fromRedis)
		}
	})
	b.Run("map", func(b *testing.B) {
		// Raw figure of the copy: a bare Go map of every register ACN and
		// ABN looked up with the 50,000 identifiers.
		m := make(map[string]bool, 2*len(ids))
		for i := range ids {
			m[acn(i)], m["51"+acn(i)] = true, true
		}
		var durs []time.Duration
		for b.Loop() {
			start := time.Now()
			hits := 0
			for _, id := range ids {
				if m[id.Value] {
					hits++
				}
			}
			durs = append(durs, time.Since(start))
			if hits != len(ids) {
				b.Fatalf("found %d of %d", hits, len(ids))
			}
		}
		report(b, durs)
	})
	b.Run("store", func(b *testing.B) { timeScreens(b, f.rs, ids, filter) })
	b.Run("raw-pipeline", func(b *testing.B) {
		// The same Redis commands as the store's screen without a register
		// copy, hand-written: the register lookups (the notices come from
		// the in-memory copy either way).
		reg, err := f.rs.currentRegister(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var acns, abns []string
		for _, id := range ids {
			if id.Kind == ident.ACN {
				acns = append(acns, id.Value)
			} else {
				abns = append(abns, id.Value)
			}
		}
		var durs []time.Duration
		for b.Loop() {
			start := time.Now()
			f.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				reg.queueCompanies(ctx, p, acns)
				reg.queueACNsOf(ctx, p, abns)
				return nil
			})
			durs = append(durs, time.Since(start))
		}
		report(b, durs)
	})
}

// screener is a store with the bulk screen: the Redis store or the
// embedded one.
type screener interface {
	Screen(ctx context.Context, ids []ident.ID, f notice.Filter) (watch.ScreenResult, error)
}

// timeScreens screens ids on s each round and reports the p50, p99 and
// CPU per screen; screenData's answer has 25,000 matches.
func timeScreens(b *testing.B, s screener, ids []ident.ID, filter notice.Filter) (cpuMs float64) {
	var durs []time.Duration
	cpu := cpuTime()
	for b.Loop() {
		start := time.Now()
		res, err := s.Screen(context.Background(), ids, filter)
		if err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
		if res.Counts.Matched != 25000 {
			b.Fatalf("matched %d, want 25000", res.Counts.Matched)
		}
	}
	cpuMs = reportCPU(b, cpu, len(durs))
	report(b, durs)
	return cpuMs
}

// BenchmarkCreateWatch50k: CreateWatch with 50,000 identifiers on a plan
// without practical limits. "fresh-companies": each watch a new block of
// 50,000 ACNs (the first block in the register), so its match keys are
// new to the reverse index; "same-companies": every watch the same 50,000
// register companies, so the n-th watch shares every key with n-1 others
// (the reverse index's append path).
func BenchmarkCreateWatch50k(b *testing.B) {
	ctx := context.Background()
	f := newFixture(b, Options{})
	registered := screenData(b, f, 50000)
	acc, err := f.rs.CreateAccount(ctx, "Bench", "enterprise")
	if err != nil {
		b.Fatal(err)
	}
	plan := account.Plan{Name: "bench", Companies: 1 << 30, Watches: 1 << 30}
	run := func(b *testing.B, ids func(i int) []ident.ID) {
		var durs []time.Duration
		i := 0
		for b.Loop() {
			w := watch.New(watch.CreateRequest{Identifiers: ids(i), Name: "book"}, acc.AccountID, time.Now())
			i++
			start := time.Now()
			if _, err := f.rs.CreateWatch(ctx, w, plan); err != nil {
				b.Fatal(err)
			}
			durs = append(durs, time.Since(start))
		}
		report(b, durs)
	}
	b.Run("fresh-companies", func(b *testing.B) {
		run(b, func(i int) []ident.ID {
			if i == 0 {
				return registered
			}
			ids := make([]ident.ID, 50000)
			for j := range ids {
				ids[j] = ident.ID{Kind: ident.ACN, Value: acn(1_000_000 + i*50000 + j)}
			}
			return ids
		})
	})
	b.Run("same-companies", func(b *testing.B) {
		run(b, func(int) []ident.ID { return registered })
	})
}

// BenchmarkMatchOneNotice: matching one arrived notice carrying an ACN
// and an ABN (the ABN resolved through the register, then the
// reverse-index lookups, filters) against 10,000 watches holding
// 5,000,000 identifiers in all (500 each, distinct), written through the
// store's own index code; and the raw figure: the same lookups as one
// go-redis pipeline (a floor: the store needs the register's answer
// before it knows every key to look up).
func BenchmarkMatchOneNotice(b *testing.B) {
	ctx := context.Background()
	f := newFixture(b, Options{})
	const watches, per = 10000, 500
	tmpl := storetest.Notices(b)[0]
	notices := make([]notice.Notice, 1000)
	rows := make([]notice.RegisterRow, len(notices))
	for i := range notices {
		notices[i] = genNotice(b, tmpl, fmt.Sprint("M-", i), (i*4999)%(watches*per))
		notices[i].Seq = int64(i + 1)
		abn := "51" + *notices[i].ACN
		notices[i].ABN = &abn
		rows[i] = notice.RegisterRow{CompanyName: "M PTY LTD", ACN: *notices[i].ACN, ABN: abn, CurrentNameIndicator: "Y"}
	}
	// The register (the notices' companies with their ABNs) before the
	// watches: a register commit re-expands the watches already written.
	commitRegister(b, composite{notices: f.notices, rs: f.rs}, rows...)
	reg, err := f.rs.currentRegister(ctx)
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, per)
	start := time.Now()
	for w := 0; w < watches; w++ {
		id := fmt.Sprintf("wat_bench%06d", w)
		for i := range keys {
			keys[i] = acn(w*per + i)
		}
		doc, _ := encodeWatch(watch.Watch{ID: id, AccountID: "acc_bench", Active: true, Identifiers: keys[:1]})
		f.rdb.HSet(ctx, f.rs.key(wacctKey), id, "acc_bench")
		if err := f.rdb.HSet(ctx, f.rs.akey("acc_bench", watchKey, id), "account", "acc_bench", "doc", doc, "cseq", "0", "eseq", "0").Err(); err != nil {
			b.Fatal(err)
		}
		if err := f.rs.indexKeys(ctx, id, keys, nil); err != nil {
			b.Fatal(err)
		}
	}
	mem, _ := f.rdb.MemoryUsage(ctx, f.rs.key(rixKey, rixBucket(acn(0)))).Result()
	b.Logf("built %d watches / %d identifiers in %v; one index bucket takes %d bytes (x %d buckets: about %d MB)",
		watches, watches*per, time.Since(start).Round(time.Second), mem, rixBuckets, mem*rixBuckets>>20)
	b.Run("store", func(b *testing.B) {
		var durs []time.Duration
		i := 0
		for b.Loop() {
			n := notices[i%len(notices)]
			i++
			start := time.Now()
			cands, err := f.rs.candidates(ctx, []notice.Notice{n})
			if err != nil {
				b.Fatal(err)
			}
			durs = append(durs, time.Since(start))
			if len(cands[0]) != 1 {
				b.Fatalf("notice of %s has candidates %v, want one watch", *n.ACN, cands[0])
			}
		}
		report(b, durs)
	})
	b.Run("raw-pipeline", func(b *testing.B) {
		var durs []time.Duration
		i := 0
		for b.Loop() {
			n := notices[i%len(notices)]
			i++
			start := time.Now()
			f.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.SMembers(ctx, f.rs.key(filterOnlyKey))
				reg.queueACNsOf(ctx, p, []string{*n.ABN})
				for _, k := range []string{*n.ACN, *n.ABN} {
					p.HGet(ctx, f.rs.key(rixKey, rixBucket(k)), k)
					p.SMembers(ctx, f.rs.key(rixsKey, k))
				}
				return nil
			})
			durs = append(durs, time.Since(start))
		}
		report(b, durs)
	})
}
