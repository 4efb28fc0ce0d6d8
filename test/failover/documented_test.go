//go:build linux

package failover

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/test/testbin"
)

// TestSentinelAsDocumented runs docs/operating.md's "Redis with Sentinel"
// commands as written: the primary's, the replica's and each of three
// Sentinels' blocks, each with its own host, port and directory in the
// variables the document names, then the block asking the Sentinels for
// the primary. It then writes a key through a failover client, kills the
// primary with SIGKILL and wants the documented query to name the replica
// and the key to be read back from it.
func TestSentinelAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five redis-server processes and waits for a failover")
	}
	for _, tool := range []string{"redis-server", "redis-cli", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := "LIVE SUITE NOT RUN: " + t.Name() + " needs " + tool + " on PATH (apt-get install redis-server redis-tools)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	blocks := testbin.ShellBlocks(t, "docs/operating.md", "### Redis with Sentinel")
	if len(blocks) != 5 || !strings.Contains(blocks[0], "--appendonly yes") || !strings.Contains(blocks[1], "--replicaof") ||
		!strings.Contains(blocks[2], "sentinel monitor noticesd") || !strings.Contains(blocks[3], "get-master-addr-by-name") ||
		!strings.Contains(blocks[4], "NOTICES_REDIS_SENTINELS") || !strings.Contains(blocks[4], "NOTICES_REDIS_MASTER") {
		t.Fatalf("docs/operating.md's Redis with Sentinel section has %d shell blocks; this test expects 5: primary, replica, Sentinel, the primary query, the settings:\n%s",
			len(blocks), strings.Join(blocks, "\n----\n"))
	}
	dir := t.TempDir()
	port := func() string {
		_, p, _ := net.SplitHostPort(testbin.FreeAddr(t))
		return p
	}
	primaryPort, replicaPort := port(), port()
	var pidfiles []string
	// A watchdog kills every daemonised process when the test binary
	// exits, however it exits; the clean-up does it at the end of the test.
	watchdog := func() {
		list := strings.Join(pidfiles, " ")
		w := exec.Command("bash", "-c", `while kill -0 "$0" 2>/dev/null; do sleep 1; done; for f in $1; do [ -s "$f" ] && kill -9 "$(cat "$f")"; done`, strconv.Itoa(os.Getpid()), list)
		w.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = w.Wait() }()
		t.Cleanup(func() {
			for _, f := range pidfiles {
				if b, err := os.ReadFile(f); err == nil {
					if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			_ = w.Process.Kill()
		})
	}
	run := func(block string, vars map[string]string) string {
		t.Helper()
		var exports []string
		for k, v := range vars {
			exports = append(exports, "export "+k+"="+v)
		}
		out, _ := testbin.RunShell(t, strings.Join(exports, "\n")+"\n"+block)
		return out
	}
	mkdir := func(name string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	primaryDir, replicaDir := mkdir("primary"), mkdir("replica")
	pidfiles = append(pidfiles, filepath.Join(primaryDir, "redis.pid"), filepath.Join(replicaDir, "redis.pid"))
	var sentinels []map[string]string
	for i := 1; i <= 3; i++ {
		d := mkdir(fmt.Sprintf("sentinel%d", i))
		pidfiles = append(pidfiles, filepath.Join(d, "sentinel.pid"))
		sentinels = append(sentinels, map[string]string{
			"SENTINEL_HOST": "127.0.0.1", "SENTINEL_PORT": port(), "SENTINEL_DIR": d,
			"PRIMARY_HOST": "127.0.0.1", "PRIMARY_PORT": primaryPort,
		})
	}
	watchdog()

	run(blocks[0], map[string]string{"REDIS_HOST": "127.0.0.1", "REDIS_PORT": primaryPort, "REDIS_DIR": primaryDir})
	run(blocks[1], map[string]string{"REDIS_HOST": "127.0.0.1", "REDIS_PORT": replicaPort, "REDIS_DIR": replicaDir,
		"PRIMARY_HOST": "127.0.0.1", "PRIMARY_PORT": primaryPort})
	var addrs []string
	for _, s := range sentinels {
		run(blocks[2], s)
		addrs = append(addrs, "127.0.0.1:"+s["SENTINEL_PORT"])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	testbin.WaitFor(t, 60*time.Second, "each Sentinel to see the replica in sync and the two other Sentinels", func() bool {
		for _, a := range addrs {
			sc := redis.NewSentinelClient(&redis.Options{Addr: a, MaxRetries: -1})
			replicas, err1 := sc.Replicas(ctx, "noticesd").Result()
			others, err2 := sc.Sentinels(ctx, "noticesd").Result()
			sc.Close()
			if err1 != nil || err2 != nil || len(replicas) != 1 || replicas[0]["master-link-status"] != "ok" || len(others) != 2 {
				return false
			}
		}
		return true
	})
	named := func() string {
		out := run(blocks[3], sentinels[0])
		return strings.Join(strings.Fields(out), ":")
	}
	if got := named(); got != "127.0.0.1:"+primaryPort {
		t.Fatalf("the documented query names %q, want the primary 127.0.0.1:%s", got, primaryPort)
	}

	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "noticesd", SentinelAddrs: addrs})
	defer rdb.Close()
	if err := rdb.Set(ctx, "documented", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d replicas, %v", n, err)
	}
	b, err := os.ReadFile(pidfiles[0])
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	kill := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 the primary: %v", err)
	}
	testbin.WaitFor(t, 60*time.Second, "the documented query to name the replica", func() bool {
		return named() == "127.0.0.1:"+replicaPort
	})
	promoted := time.Since(kill)
	var v string
	testbin.WaitFor(t, 30*time.Second, "the key read through the failover client", func() bool {
		v, err = rdb.Get(ctx, "documented").Result()
		return err == nil
	})
	if v != "kept" {
		t.Fatalf("after the failover the key is %q, want kept", v)
	}
	t.Logf("with the documented settings (down-after-milliseconds 5000) the replica was named primary %s after kill -9", promoted.Round(100*time.Millisecond))
}
