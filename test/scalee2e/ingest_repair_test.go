package scalee2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

// tripwire is a TCP proxy in front of Redis that forwards everything until
// a client sends a command naming trigger; then it signals tripped and
// forwards nothing more (the command never reaches Redis), so the test can
// SIGKILL the client at exactly that step.
type tripwire struct {
	ln      net.Listener
	target  string
	trigger []byte
	once    sync.Once
	tripped chan struct{}
}

func newTripwire(t *testing.T, target, trigger string) *tripwire {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tw := &tripwire{ln: ln, target: target, trigger: []byte(trigger), tripped: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go tw.serve(c)
		}
	}()
	return tw
}

func (tw *tripwire) serve(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", tw.target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() { io.Copy(c, up); c.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if bytes.Contains(buf[:n], tw.trigger) {
				tw.once.Do(func() { close(tw.tripped) })
				<-make(chan struct{}) // hold the connection: the client is killed
			}
			if _, werr := up.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestIngestKilledBeforeItsPublish: `noticesd ingest` is SIGKILLed after
// writing and refreshing a batch in Elasticsearch and before publishing it
// (a proxy in front of Redis holds the publish script's call and the test
// kills the process then). The company view (a search) shows the notices,
// and neither the screen nor the watch's matches do: they are not
// published. The next `noticesd ingest` waits out the dead writer's lease
// (NOTICES_WRITER_LEASE), takes over and publishes them before its own
// batch: the screen, the company view and the watch's matches then agree,
// each notice matched once and owed one delivery.
func TestIngestKilledBeforeItsPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs serve and ingest processes")
	}
	bin := testbin.Build(t)
	esURL, redisURL, ns := testservers.Elasticsearch(t), testservers.Redis(t), testservers.Namespace(t)
	dir := t.TempDir()
	ru, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	// The publish script is the only command of an ingest that names the
	// log's trimmed key (publog's publishScript: KEYS writer, epoch,
	// published, log, trimmed, ...).
	tw := newTripwire(t, ru.Host, "{"+ns+"}:log:trimmed")
	proxied := *ru
	proxied.Host = tw.ln.Addr().String()
	env := func(redis string) []string {
		return []string{
			"NOTICES_BACKEND=scale",
			"NOTICES_ELASTICSEARCH_URL=" + esURL,
			"NOTICES_REDIS_URL=" + redis,
			"NOTICES_NAMESPACE=" + ns,
			"NOTICES_SECRET_KEY=" + config.DevelopmentSecretKey,
			"NOTICES_LOG_LEVEL=warn",
			"NOTICES_DATA_DIR=" + dir,
			"NOTICES_WRITER_LEASE=2s",
		}
	}
	acns := make([]string, 30)
	for i := range acns {
		acns[i] = acn(5000 + i)
	}
	first := filepath.Join(dir, "first.jsonl")
	if err := os.WriteFile(first, noticeLines("KILLED", acns), 0o644); err != nil {
		t.Fatal(err)
	}
	var acct struct {
		ReadKey    string `json:"read_key"`
		AccountKey string `json:"account_key"`
	}
	if err := json.Unmarshal(testbin.Run(t, bin, env(redisURL), "accounts", "create", "--name", "repair", "--plan", "standard"), &acct); err != nil || acct.ReadKey == "" {
		t.Fatalf("accounts create: %v", err)
	}
	serve := start(t, bin, "serve", env(redisURL), "serve")
	c := &client{t: t, key: acct.ReadKey, bases: []string{serve.base}}
	owner := &client{t: t, key: acct.AccountKey, bases: []string{serve.base}}
	var w struct {
		ID string `json:"id"`
	}
	owner.call("POST", "/v1/watches", map[string]any{"identifiers": acns, "name": "killed ingest"}, 201, &w)
	// A webhook (no worker runs: its deliveries stay pending, recorded by
	// the arrival matching that the matches reads below run).
	owner.call("POST", "/v1/watches/"+w.ID+"/webhook", map[string]any{"url": "https://hooks.example.com/repair"}, 201, nil)
	deliveries := func() map[string]int {
		var v struct {
			Data []struct {
				NoticeID string `json:"notice_id"`
			} `json:"data"`
		}
		owner.call("GET", "/v1/watches/"+w.ID+"/deliveries?limit=100", nil, 200, &v)
		out := map[string]int{}
		for _, d := range v.Data {
			out[d.NoticeID]++
		}
		return out
	}

	cmd := exec.Command(bin, "ingest", "notices", "--quiet", first)
	cmd.Env = append(os.Environ(), env(proxied.String())...)
	var stderr testbin.LockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tw.tripped:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the ingest never reached its publish; stderr:\n%s", stderr.String())
	}
	cmd.Process.Kill()
	cmd.Wait()

	companyNotices := func() int {
		var v struct {
			NoticeCount int `json:"notice_count"`
		}
		c.call("GET", "/v1/companies/"+acns[0], nil, 200, &v)
		return v.NoticeCount
	}
	screened := func() int {
		var v struct {
			Counts struct {
				Matched int `json:"matched"`
			} `json:"counts"`
		}
		c.call("POST", "/v1/match", map[string]any{"identifiers": acns}, 200, &v)
		return v.Counts.Matched
	}
	matched := func() map[string]int {
		seen := map[string]int{}
		since := int64(0)
		for {
			var page struct {
				Data []struct {
					SourceID string `json:"source_id"`
				} `json:"data"`
				NextSince int64 `json:"next_since"`
				HasMore   bool  `json:"has_more"`
			}
			owner.call("GET", fmt.Sprintf("/v1/watches/%s/matches?since=%d&limit=100", w.ID, since), nil, 200, &page)
			for _, n := range page.Data {
				seen[n.SourceID]++
			}
			since = page.NextSince
			if !page.HasMore {
				return seen
			}
		}
	}
	if n := companyNotices(); n != 1 {
		t.Fatalf("the company view shows %d notices of %s after the killed ingest, want 1 (written and refreshed before the kill)", n, acns[0])
	}
	if m := screened(); m != 0 {
		t.Fatalf("the screen matched %d companies before the takeover; the kill was meant to come before the publish (the test's premise)", m)
	}
	if m := matched(); len(m) != 0 {
		t.Fatalf("the watch matched %d notices before the takeover, want none (unpublished)", len(m))
	}
	if d := deliveries(); len(d) != 0 {
		t.Fatalf("the watch has %d deliveries before the takeover, want none (unpublished)", len(d))
	}

	// The next ingest (of anything) takes over first.
	second := filepath.Join(dir, "second.jsonl")
	if err := os.WriteFile(second, noticeLines("LATER", []string{acn(6000)}), 0o644); err != nil {
		t.Fatal(err)
	}
	out := testbin.Run(t, bin, env(redisURL), "ingest", "notices", second)
	t.Logf("the next ingest: %s", bytes.TrimSpace(out))
	testbin.WaitFor(t, 15*time.Second, fmt.Sprintf("the screen to match all %d companies of the killed batch", len(acns)),
		func() bool { return screened() == len(acns) })
	if n := companyNotices(); n != 1 {
		t.Errorf("the company view shows %d notices of %s after the takeover, want 1", n, acns[0])
	}
	m := matched()
	if len(m) != len(acns) {
		t.Errorf("the watch matched %d notices after the takeover, want %d", len(m), len(acns))
	}
	for id, k := range m {
		if k != 1 {
			t.Errorf("the watch matched %s %d times, want once", id, k)
		}
	}
	d := deliveries()
	if len(d) != len(acns) {
		t.Errorf("the watch has deliveries of %d notices after the takeover, want %d (one per matched notice)", len(d), len(acns))
	}
	for id, k := range d {
		if k != 1 {
			t.Errorf("notice %s has %d deliveries, want one", id, k)
		}
	}
}
