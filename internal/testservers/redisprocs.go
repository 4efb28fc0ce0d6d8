//go:build unix

package testservers

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisProcs are the redis-server processes of one test's topology (a
// Sentinel topology, a Redis Cluster), each in a directory of its own
// under the test's temporary directory, killed when the test ends.
type redisProcs struct {
	dir     string
	mu      sync.Mutex
	servers map[string]*redisProc // by host:port
	// tls, when set, makes every process listen on TLS only (port 0,
	// tls-port) and is the TLS of this package's clients of them; user and
	// password are the ACL user those clients log in as ("": default).
	tls            *tls.Config
	user, password string
}

// client is a client of the process at addr, without retries.
func (top *redisProcs) client(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, TLSConfig: top.tls, Username: top.user, Password: top.password})
}

func newRedisProcs(t testing.TB) redisProcs {
	return redisProcs{dir: t.TempDir(), servers: map[string]*redisProc{}}
}

// redisProc is one redis-server process of a topology.
type redisProc struct {
	name string
	addr string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// start runs one redis-server with conf lines added to the common ones
// (appendonly yes but for a Sentinel), on the address free gives (its
// tls-port with top.tls).
func (top *redisProcs) start(t testing.TB, bin, name string, conf []string, mode string, free func() (string, error)) *redisProc {
	t.Helper()
	dir := filepath.Join(top.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for attempt := 0; attempt < 3; attempt++ {
		addr, err := free()
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(addr)
		listen := "port " + port
		if top.tls != nil {
			listen = "port 0\ntls-port " + port
		}
		lines := []string{
			"bind 127.0.0.1",
			listen,
			"dir " + dir,
			"logfile " + filepath.Join(dir, "redis.log"),
			"daemonize no",
			"save \"\"",
		}
		if mode != "--sentinel" {
			lines = append(lines, "appendonly yes")
		}
		lines = append(lines, conf...)
		file := filepath.Join(dir, "redis.conf")
		// A Sentinel rewrites its configuration file, so it must be writable.
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{file}
		if mode == "--sentinel" {
			args = append(args, "--sentinel")
		}
		p := &redisProc{name: name, addr: addr, log: filepath.Join(dir, "redis.log"), done: make(chan struct{})}
		p.cmd = exec.Command(bin, args...)
		p.cmd.Dir = dir
		p.cmd.SysProcAttr = childAttr()
		out, err := os.Create(filepath.Join(dir, "console.log"))
		if err != nil {
			t.Fatal(err)
		}
		p.cmd.Stdout, p.cmd.Stderr = out, out
		if err := p.cmd.Start(); err != nil {
			out.Close()
			t.Fatalf("start %s: %v", name, err)
		}
		go func() { _ = p.cmd.Wait(); out.Close(); close(p.done) }()
		top.mu.Lock()
		top.servers[addr] = p
		top.mu.Unlock()
		if err := waitPing(top.client(addr), p, 15*time.Second); err == nil {
			return p
		} else {
			logText, _ := os.ReadFile(p.log)
			p.stop()
			if strings.Contains(string(logText), "Address already in use") {
				continue // the port was taken meanwhile
			}
			t.Fatalf("%s (redis-server on %s) did not answer PING: %v\n%s", name, addr, err, trimmed(string(logText), 20))
		}
	}
	t.Fatalf("%s: no free port after 3 attempts", name)
	return nil
}

// logs returns the last lines of every process's log, for a failure.
func (top *redisProcs) logs() string {
	top.mu.Lock()
	defer top.mu.Unlock()
	var b strings.Builder
	for _, p := range top.servers {
		text, _ := os.ReadFile(p.log)
		fmt.Fprintf(&b, "--- %s (%s):\n%s\n", p.name, p.addr, trimmed(string(text), 15))
	}
	return b.String()
}

// stopAll kills every process of the topology (their data is thrown away
// with the test's directory).
func (top *redisProcs) stopAll() {
	top.mu.Lock()
	procs := make([]*redisProc, 0, len(top.servers))
	for _, p := range top.servers {
		procs = append(procs, p)
	}
	top.mu.Unlock()
	for _, p := range procs {
		p.stop()
	}
}

// stop kills the process's group and waits for it.
func (p *redisProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Process.Kill()
	<-p.done
}
