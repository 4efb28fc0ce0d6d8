package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/store/sqlite"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/testservers"
)

// scaleBench serves the API in scale mode's watch backend (the Redis
// store over the live Redis, in a fresh namespace) with 50,000 register
// companies with ABNs, half of them with one notice recorded in the
// screen's identifier sets. The notices themselves are not needed by a
// screen without q, so the notice source is an empty SQLite store.
type scaleBench struct {
	httpBench
	rdb  redis.UniversalClient
	rs   *redisstore.Store
	sq   *sqlite.Store
	ns   string
	acns []string
	ids  []string
}

func benchACN(i int) string {
	first8 := fmt.Sprintf("6%07d", i)
	return first8 + strconv.Itoa(ident.ACNCheckDigit(first8))
}

func newScaleBench(b *testing.B, n int) *scaleBench {
	b.Helper()
	ctx := context.Background()
	rdb, err := redisstore.Dial(config.Config{RedisURL: testservers.Redis(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rdb.Close() })
	ns := testservers.Namespace(b)
	sq, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "n.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sq.Close() })
	// As serve runs it (NOTICES_SCREEN_COPY on); loadScreenCopy starts
	// the copy's loader.
	rs, err := redisstore.New(rdb, ns, sq, redisstore.Options{ScreenCopy: true})
	if err != nil {
		b.Fatal(err)
	}
	sb := &scaleBench{rdb: rdb, ns: ns, rs: rs, sq: sq}
	l, err := rs.BeginRegister(ctx)
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]notice.RegisterRow, n)
	var ns2 []notice.Notice
	for i := range rows {
		a := benchACN(i)
		rows[i] = notice.RegisterRow{CompanyName: fmt.Sprint("COMPANY ", i, " PTY LTD"), ACN: a, ABN: "51" + a, CurrentNameIndicator: "Y"}
		sb.acns = append(sb.acns, a)
		if i%2 == 0 {
			sb.ids = append(sb.ids, a)
			id := fmt.Sprint("SB-", i)
			ns2 = append(ns2, notice.Notice{ID: notice.IDFor(id), SourceID: id, Seq: int64(i + 1), ACN: &rows[i].ACN,
				PublishedAt: "2026-11-20T01:00:00Z", PublishedDate: "2026-11-20", NoticeType: "Appointment of liquidator",
				NoticePurpose: "Appointment", State: "VIC", Status: "Published", CompanyName: rows[i].CompanyName})
		} else {
			sb.ids = append(sb.ids, "51"+a)
		}
	}
	if err := l.Add(ctx, rows); err != nil {
		b.Fatal(err)
	}
	if err := l.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	if err := storetest.PublishStored(ctx, publog.New(rdb, ns, publog.Options{}), ns2); err != nil {
		b.Fatal(err)
	}
	acc, err := rs.CreateAccount(ctx, "bench", "enterprise")
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	cfg.MaxBodyBytes = 64 << 20
	srv := New(cfg, Deps{Notices: sq, Accounts: rs, Watches: rs})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.App().Shutdown() })
	sb.httpBench = httpBench{base: "http://" + ln.Addr().String(), key: acc.AccountKey,
		cl: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	return sb
}

// BenchmarkHTTPMatch50kScale: POST /v1/match with 50,000 identifiers
// (half ACNs with a notice, half ABNs of companies without) through the
// API on the Redis backend with the in-memory screen copy (as serve runs
// it), client measured, beside the raw figures of the same run:
//   - floor: the register lookups sent as one go-redis pipeline, what a
//     screen without the register copy costs at least (the notices come
//     from the in-memory copy either way; Redis holds none);
//   - store: the store's Screen call answered from the copy; redis-store:
//     the same call on a store without the register copy (the register
//     read from Redis);
//   - copy-roundtrip: the one round trip a screen with the copy makes
//     (register generation, change log head, change log past it);
//   - map: a bare Go map (of every register ACN and ABN) looked up with
//     the 50,000 identifiers.
func BenchmarkHTTPMatch50kScale(b *testing.B) {
	ctx := context.Background()
	sb := newScaleBench(b, 50000)
	body, _ := json.Marshal(map[string]any{"identifiers": sb.ids})
	v, err := sb.rdb.Get(ctx, keyspace.Prefix(sb.ns)+"reg:v").Result()
	if err != nil {
		b.Fatal(err)
	}
	var acns, abns []string
	for _, id := range sb.ids {
		if len(id) == 9 {
			acns = append(acns, id)
		} else {
			abns = append(abns, id)
		}
	}
	hmget := func(p redis.Pipeliner, key string, fields []string) {
		for i := 0; i < len(fields); i += 10000 {
			p.HMGet(ctx, key, fields[i:min(i+10000, len(fields))]...)
		}
	}
	warmRedis := loadScreenCopy(b, sb.rs.ScreenCopy(), func() { sb.do(b, http.MethodPost, "/v1/match", body) })
	rounds := max(b.N, 20)
	b.ResetTimer()
	httpP50 := p50(rounds, func() { sb.do(b, http.MethodPost, "/v1/match", body) })
	raw := p50(rounds, func() {
		_, err := sb.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			reg := keyspace.Prefix(sb.ns) + "reg:" + v + ":"
			hmget(p, reg+"name", acns)
			hmget(p, reg+"acnabn", acns)
			hmget(p, reg+"abn", abns)
			hmget(p, reg+"name", abns)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	})
	screenIDs := make([]ident.ID, len(sb.ids))
	for i, v := range sb.ids {
		screenIDs[i], _ = ident.Normalise(v)
	}
	filter := notice.Filter{IncludeDeregistration: true}
	storeP50 := p50(rounds, func() {
		if _, err := sb.rs.Screen(ctx, screenIDs, filter); err != nil {
			b.Fatal(err)
		}
	})
	plain, err := redisstore.New(sb.rdb, sb.ns, sb.sq, redisstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	redisP50 := p50(rounds, func() {
		if _, err := plain.Screen(ctx, screenIDs, filter); err != nil {
			b.Fatal(err)
		}
	})
	roundTrip := p50(rounds, func() {
		_, err := sb.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Get(ctx, keyspace.Prefix(sb.ns)+"reg:v")
			p.Get(ctx, sb.ns+":nlog:n")
			p.XRangeN(ctx, sb.ns+":nlog", "1000000-0", "+", 1000)
			return nil
		})
		if err != nil && err != redis.Nil {
			b.Fatal(err)
		}
	})
	reg := make(map[string]bool, 2*len(sb.acns))
	for _, a := range sb.acns {
		reg[a], reg["51"+a] = true, true
	}
	var hits int
	mapP50 := p50(rounds, func() {
		hits = 0
		for _, id := range sb.ids {
			if reg[id] {
				hits++
			}
		}
	})
	if hits != len(sb.ids) {
		b.Fatalf("map found %d of %d", hits, len(sb.ids))
	}
	if fromCopy, fromRedis := sb.rs.ScreenCopy().Counts(); fromRedis != warmRedis || fromCopy == 0 {
		b.Fatalf("screens from the copy %d, from Redis %d: the copy was not used", fromCopy, fromRedis)
	}
	report(b, httpP50, raw)
	b.ReportMetric(ms(storeP50), "store-p50-ms")
	b.ReportMetric(ms(redisP50), "redis-store-p50-ms")
	b.ReportMetric(ms(roundTrip), "copy-roundtrip-p50-ms")
	b.ReportMetric(float64(mapP50.Microseconds())/1000, "map-p50-ms")
	b.ReportMetric(float64(len(sb.ids)), "ids")
}

// BenchmarkHTTPCreateWatch50kScale: POST /v1/watches with 50,000
// identifiers through the API on the Redis backend with the screen copy
// loaded (as serve runs it), client measured; the watch is deleted after
// each round, outside the timing. Two kinds of
// book, alternately, at least 10 rounds each:
//   - p50-ms: the register's 50,000 companies (a loan book: every ACN
//     resolves, its ABN is a match key too, and the half with notices are
//     backfilled into the watch's log);
//   - unknown-p50-ms: a new block of 50,000 ACNs that neither the register
//     nor any notice holds (the cheap case: 50,000 keys, nothing to
//     backfill).
func BenchmarkHTTPCreateWatch50kScale(b *testing.B) {
	sb := newScaleBench(b, 50000)
	// serve loads the screen copy at start; here its loader starts and
	// small screens wait for it.
	loadScreenCopy(b, sb.rs.ScreenCopy(), func() {
		sb.send(b, http.MethodPost, "/v1/match", []byte(`{"identifiers":["`+sb.acns[0]+`"]}`), http.StatusOK)
	})
	rounds := max(b.N, 10)
	var known, unknown []time.Duration
	for r := 0; r < 2*rounds; r++ {
		ids := sb.acns
		if r%2 == 1 {
			ids = make([]string, 50000)
			for j := range ids {
				ids[j] = benchACN(1_000_000 + r*50000 + j)
			}
		}
		body, _ := json.Marshal(map[string]any{"identifiers": ids})
		start := time.Now()
		raw := sb.send(b, http.MethodPost, "/v1/watches", body, http.StatusCreated)
		d := time.Since(start)
		if r%2 == 0 {
			known = append(known, d)
		} else {
			unknown = append(unknown, d)
		}
		var w struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			b.Fatal(err)
		}
		sb.send(b, http.MethodDelete, "/v1/watches/"+w.ID, nil, http.StatusNoContent)
	}
	for _, d := range [][]time.Duration{known, unknown} {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	}
	b.ReportMetric(ms(known[len(known)/2]), "p50-ms")
	b.ReportMetric(ms(known[len(known)*99/100]), "p99-ms")
	b.ReportMetric(ms(unknown[len(unknown)/2]), "unknown-p50-ms")
}

// send makes one request, checks its status and returns the body.
func (sb *scaleBench) send(b *testing.B, method, path string, body []byte, want int) []byte {
	req, err := http.NewRequest(method, sb.base+path, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set(HeaderAPIKey, sb.key)
	resp, err := sb.cl.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != want {
		b.Fatalf("%s %s: HTTP %d %s", method, path, resp.StatusCode, out)
	}
	return out
}

// loadScreenCopy starts c's loader, as serve does, and sends screen
// (untimed) until one is answered from the copy; it returns how many
// screens read Redis meanwhile, which the timed screens must not add to.
func loadScreenCopy(b *testing.B, c *redisstore.ScreenCopy, screen func()) (fromRedis int64) {
	b.Helper()
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Shutdown(context.Background()) })
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		screen()
		if fromCopy, fromRedis := c.Counts(); fromCopy > 0 {
			return fromRedis
		}
		if time.Now().After(deadline) {
			b.Fatal("the screen copy did not load within 10 minutes")
		}
	}
}
