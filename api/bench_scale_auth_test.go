package api

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// cmdCounter is a go-redis hook counting the commands a client sends,
// apart from script calls (EVALSHA, EVAL), which INFO commandstats counts
// on the server.
type cmdCounter struct{ other atomic.Int64 }

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *cmdCounter) count(cmd redis.Cmder) {
	if !isScriptCall(cmd.Name()) {
		c.other.Add(1)
	}
}

// isScriptCall: the commands that run a script (each counts once as a
// command sent; what the script runs inside is counted apart).
func isScriptCall(name string) bool {
	switch strings.ToLower(name) {
	case "evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// commandStats reads INFO commandstats: the calls of script commands and
// of every command (those run inside scripts included).
func commandStats(b *testing.B, rdb redis.UniversalClient) (scripts, all int64) {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		calls, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
		all += calls
		if isScriptCall(strings.TrimPrefix(name, "cmdstat_")) {
			scripts += calls
		}
	}
	return scripts, all
}

// countCommands sends every path of a read mix through the measured API
// (untimed, nothing else running) and reports the Redis commands per
// authenticated read, from INFO commandstats around it:
//   - redis-cmds/read: the commands the server received from clients
//     (each script call once, as the API sends it) per read: the script
//     calls commandstats counts, plus the other commands the measured
//     server's client sent (its hook);
//   - redis-cmds-all/read: every command commandstats counts, those run
//     inside scripts included (the Redis work per read).
//
// The INFO calls themselves are taken out.
func (sr *scaleRead) countCommands(b *testing.B, paths []string) {
	rdb := sr.st.Client()
	n := max(200, len(paths))
	s0, a0 := commandStats(b, rdb)
	o0 := sr.cmds.other.Load()
	for i := range n {
		sr.do(b, http.MethodGet, paths[i%len(paths)], nil)
	}
	s1, a1 := commandStats(b, rdb)
	other := sr.cmds.other.Load() - o0 - 1 // the second INFO, counted by the hook before it is sent
	all := a1 - a0 - 1                     // the first INFO (Redis counts the second after answering it)
	b.ReportMetric(float64(s1-s0+other)/float64(n), "redis-cmds/read")
	b.ReportMetric(float64(all)/float64(n), "redis-cmds-all/read")
}

// whileLimited is CompanyWhileLimited: the company-view mix of one key
// (a sample of it) timed idle and while another key, on a plan of one
// request a second, is hammered past its rate at limitedRate requests a
// second over limitedConns connections (every request of it 429 but one
// a second), in alternating blocks. The offered rate is fixed, so the
// figure is what the hammered key's requests cost the server, not how
// fast this client can send them. Reports the p50 while hammered, the idle p50 and their ratio
// (x-idle), and the hammered key's requests a second. With
// NOTICES_BENCH_COMPARE=1 the same against the server as it was before
// (serveScaleWith without the gate: two Redis calls a request, and the
// held key checked and limited in Redis again): before-x-idle.
func (sr *scaleRead) whileLimited(b *testing.B) {
	paths := sr.companies(b)
	if len(paths) > 200 {
		paths = paths[:200]
	}
	run := func(base string) (idle, loaded []time.Duration, rate float64) {
		hb := sr.httpBench
		hb.base = base
		for _, p := range paths { // warm
			hb.do(b, http.MethodGet, p, nil)
		}
		var sent atomic.Int64
		var hammered time.Duration
		for block := range 4 {
			var stop atomic.Bool
			var wg sync.WaitGroup
			t0 := time.Now()
			if block%2 == 1 {
				for range limitedConns {
					wg.Add(1)
					go func() {
						defer wg.Done()
						sent.Add(int64(sr.hammer(b, base, paths[0], &stop)))
					}()
				}
			}
			for _, p := range paths {
				t := time.Now()
				hb.do(b, http.MethodGet, p, nil)
				if block%2 == 1 {
					loaded = append(loaded, time.Since(t))
				} else {
					idle = append(idle, time.Since(t))
				}
			}
			stop.Store(true)
			wg.Wait()
			if block%2 == 1 {
				hammered += time.Since(t0)
			}
		}
		return idle, loaded, float64(sent.Load()) / hammered.Seconds()
	}
	b.ResetTimer()
	idle, loaded, rate := run(sr.base)
	b.StopTimer()
	b.ReportMetric(ms(median(loaded)), "p50-ms")
	b.ReportMetric(ms(median(idle)), "idle-p50-ms")
	b.ReportMetric(float64(median(loaded))/float64(median(idle)), "x-idle")
	b.ReportMetric(rate, "limited-req/s")
	if sr.before != "" {
		idle, loaded, rate := run(sr.before)
		b.ReportMetric(float64(median(loaded))/float64(median(idle)), "before-x-idle")
		b.ReportMetric(rate, "before-limited-req/s")
	}
}

// hop times url sent without a key through the bench client: 401, answered
// before any backend is asked, so the API's HTTP hop alone (the listener,
// fiber, the error's JSON). The raw p50 plus it is the floor of the
// API's p50 in that run (floor-x-raw): what no change behind the HTTP
// layer can go under.
func (sr *scaleRead) hop(b *testing.B, url string) time.Duration {
	t0 := time.Now()
	resp, err := sr.cl.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(t0)
	if resp.StatusCode != http.StatusUnauthorized {
		b.Fatalf("GET %s without a key: HTTP %d, want 401", url, resp.StatusCode)
	}
	return d
}

// limitedConns is how many connections hammer the limited key, at
// limitedRate requests a second in all.
const (
	limitedConns = 4
	limitedRate  = 2000
)

// hammer sends GET path with the limited key on one kept-alive
// connection until stop, and returns how many requests it sent; every
// answer must be 200 or 429.
func (sr *scaleRead) hammer(b *testing.B, base, path string, stop *atomic.Bool) int {
	cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer cl.CloseIdleConnections()
	n := 0
	every := time.Second * limitedConns / limitedRate
	next := time.Now()
	for !stop.Load() {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		next = next.Add(every)
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set(HeaderAPIKey, sr.limitedKey)
		resp, err := cl.Do(req)
		if err != nil {
			b.Error(err)
			return n
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
			b.Errorf("the limited key: HTTP %d", resp.StatusCode)
			return n
		}
		n++
	}
	return n
}
