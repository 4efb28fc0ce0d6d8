//go:build linux

package failover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/test/testbin"
)

// proc is one running noticesd process (serve or worker).
type proc struct {
	name   string
	cmd    *exec.Cmd
	stderr *testbin.LockedBuffer
	base   string        // serve: http://127.0.0.1:PORT; worker: its /metrics listener
	done   chan struct{} // closed when the process has exited
	err    error
}

// start runs `noticesd args...` with env, killed with the test binary
// (parent-death signal) and at the end of the test; a serve is waited for
// until /ready answers 200, a worker until its /metrics answers.
func start(t *testing.T, bin, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, stderr: &testbin.LockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	addr := testbin.FreeAddr(t)
	p.base = "http://" + addr
	probe := p.base + "/ready"
	if args[0] == "serve" {
		p.cmd.Env = append(p.cmd.Env, "NOTICES_ADDR="+addr)
	} else {
		p.cmd.Env = append(p.cmd.Env, "NOTICES_WORKER_METRICS_ADDR="+addr)
		probe = p.base + "/metrics"
	}
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s stderr (last 3 KB):\n%s", p.name, tail(p.stderr.String(), 3072))
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if res, err := http.Get(probe); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return p
			}
		}
		if !p.alive() {
			t.Fatalf("%s exited (%v) before it was ready; stderr:\n%s", name, p.err, p.stderr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer %s within 60 s; stderr:\n%s", name, probe, p.stderr)
		}
	}
}

// alive reports whether the process is still running.
func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// outcome is one answered (or unanswered) request of the burst.
type outcome struct {
	at     time.Time
	what   string // "POST /v1/watches", ...
	status int    // 0: no answer
	code   string // the error code of an error answer
	err    error  // no answer: the transport error
}

// tally records every request of the burst, for the 5xx rules and the
// 503 window.
type tally struct {
	mu  sync.Mutex
	all []outcome
}

func (ty *tally) add(o outcome) {
	ty.mu.Lock()
	ty.all = append(ty.all, o)
	ty.mu.Unlock()
}

// report checks that no request got a 5xx other than 503
// backend_unavailable or no answer at all, and returns the window from
// the first to the last 503 after kill, with counts per kind.
func (ty *tally) report(t *testing.T, kill time.Time) (window time.Duration, first, last time.Time, summary string) {
	t.Helper()
	ty.mu.Lock()
	defer ty.mu.Unlock()
	counts := map[string]int{}
	var bad []string
	for _, o := range ty.all {
		key := fmt.Sprintf("%s %d %s", o.what, o.status, o.code)
		counts[key]++
		switch {
		case o.status == 0:
			bad = append(bad, fmt.Sprintf("%s at +%s: no answer: %v", o.what, o.at.Sub(kill).Round(time.Millisecond), o.err))
		case o.status == http.StatusServiceUnavailable && o.code == "backend_unavailable":
			if first.IsZero() || o.at.Before(first) {
				first = o.at
			}
			if o.at.After(last) {
				last = o.at
			}
		case o.status >= 500:
			bad = append(bad, fmt.Sprintf("%s at +%s: %d %s", o.what, o.at.Sub(kill).Round(time.Millisecond), o.status, o.code))
		}
	}
	if len(bad) > 0 {
		if len(bad) > 20 {
			bad = append(bad[:20], fmt.Sprintf("... and %d more", len(bad)-20))
		}
		t.Errorf("answers other than 2xx/4xx/503 backend_unavailable during the burst:\n%s", strings.Join(bad, "\n"))
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-40s %d\n", k, counts[k])
	}
	if !first.IsZero() {
		window = last.Sub(first)
	}
	return window, first, last, b.String()
}

// api sends requests with one key to the serve processes in turn.
type api struct {
	t     *testing.T
	key   string
	bases []string
	mu    sync.Mutex
	next  int
	http  *http.Client
	tally *tally // nil: not recorded
}

func newAPI(t *testing.T, key string, bases []string, ty *tally) *api {
	return &api{t: t, key: key, bases: bases, http: &http.Client{Timeout: 30 * time.Second}, tally: ty}
}

// do sends one request and returns the status (0 when there was no
// answer), the error code of an error answer and the body.
func (a *api) do(method, path string, body any) (int, string, []byte) {
	a.mu.Lock()
	base := a.bases[a.next%len(a.bases)]
	a.next++
	a.mu.Unlock()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	req.Header.Set("X-API-Key", a.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	what := method + " " + route(path)
	res, err := a.http.Do(req)
	if err != nil {
		if a.tally != nil {
			a.tally.add(outcome{at: time.Now(), what: what, err: err})
		}
		return 0, "", nil
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if res.StatusCode >= 400 {
		_ = json.Unmarshal(data, &e)
	}
	if a.tally != nil {
		a.tally.add(outcome{at: time.Now(), what: what, status: res.StatusCode, code: e.Error.Code})
	}
	return res.StatusCode, e.Error.Code, data
}

// call is do with an expected status, decoding the answer into out.
func (a *api) call(method, path string, body any, want int, out any) {
	a.t.Helper()
	status, _, data := a.do(method, path, body)
	if status != want {
		a.t.Fatalf("%s %s = %d %s; want %d", method, path, status, data, want)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			a.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// route is a path with its ids and query left out, for counting.
func route(path string) string {
	path, _, _ = strings.Cut(path, "?")
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "wch_") {
			parts[i] = ":id"
		}
	}
	return strings.Join(parts, "/")
}

// acn returns a valid ACN made from n (8 digits and the check digit).
func acn(n int) string {
	first8 := fmt.Sprintf("%08d", n)
	return fmt.Sprintf("%s%d", first8, ident.ACNCheckDigit(first8))
}

// acns returns count valid ACNs from n on.
func acns(n, count int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = acn(n + i)
	}
	return out
}

// noticeLines writes JSON Lines notices for the given ACNs, published now.
func noticeLines(prefix string, acns []string) []byte {
	var b bytes.Buffer
	now := time.Now().UTC()
	for i, a := range acns {
		line, _ := json.Marshal(map[string]any{
			"source_id": fmt.Sprintf("%s%05d", prefix, i), "published_at": now.Add(-time.Duration(i) * time.Second).Format(time.RFC3339),
			"acn": a, "company_name": "FAILOVER TEST PTY LTD", "notice_type": "Appointment of liquidator",
			"notice_code": "APP", "notice_purpose": "Appointment", "state": "VIC", "status": "In Liquidation",
			"text": "redis failover " + prefix,
		})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
