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

// TestIngestKilledBeforeItsRedisRecord: `noticesd ingest` is SIGKILLed after
// writing a batch to Elasticsearch and before recording it in Redis (the
// bulk screen's sets: a proxy in front of Redis holds the record script's
// call and the test kills the process then). The company view shows the
// notices and the screen does not; the next `noticesd ingest` records them
// before it loads anything, and the screen and the company view agree.
func TestIngestKilledBeforeItsRedisRecord(t *testing.T) {
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
	// The record script is the only command that names the change log's
	// counter (redisstore's recordScript: KEYS nidx, nsum, nlog, nlog:n).
	tw := newTripwire(t, ru.Host, ns+":nlog:n")
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
		ReadKey string `json:"read_key"`
	}
	if err := json.Unmarshal(testbin.Run(t, bin, env(redisURL), "accounts", "create", "--name", "repair", "--plan", "standard"), &acct); err != nil || acct.ReadKey == "" {
		t.Fatalf("accounts create: %v", err)
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
		t.Fatalf("the ingest never reached its Redis record step; stderr:\n%s", stderr.String())
	}
	cmd.Process.Kill()
	cmd.Wait()

	serve := start(t, bin, "serve", env(redisURL), "serve")
	c := &client{t: t, key: acct.ReadKey, bases: []string{serve.base}}
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
	if n := companyNotices(); n != 1 {
		t.Fatalf("the company view shows %d notices of %s after the killed ingest, want 1 (written to Elasticsearch before the kill)", n, acns[0])
	}
	if m := screened(); m != 0 {
		t.Fatalf("the screen matched %d companies before any repair; the kill was meant to come before the Redis record (the test's premise)", m)
	}

	// The next ingest (of anything) records them first.
	second := filepath.Join(dir, "second.jsonl")
	if err := os.WriteFile(second, noticeLines("LATER", []string{acn(6000)}), 0o644); err != nil {
		t.Fatal(err)
	}
	out := testbin.Run(t, bin, env(redisURL), "ingest", "notices", second)
	t.Logf("the next ingest: %s", bytes.TrimSpace(out))
	testbin.WaitFor(t, 15*time.Second, fmt.Sprintf("the screen to match all %d companies of the killed batch", len(acns)),
		func() bool { return screened() == len(acns) })
}
