package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildBinary builds noticesd into a temporary directory for tests that
// need real processes; flags go to go build (e.g. -ldflags).
func buildBinary(t *testing.T, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "noticesd")
	args := append([]string{"build", "-tags", "sqlite_fts5", "-o", bin}, flags...)
	cmd := exec.Command("go", append(args, ".")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serveProcess is a running `noticesd serve` and the lines of its stderr.
type serveProcess struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan struct{} // closed when the process has exited
	err   error         // its exit status, once done is closed
}

func startServe(t *testing.T, bin, dataDir string) *serveProcess {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "NOTICES_DATA_DIR="+dataDir, "NOTICES_SOURCE=", "NOTICES_LOG_LEVEL=info",
		"NOTICES_SECRET_KEY="+testSecretKey)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{cmd: cmd, lines: make(chan string, 100), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		io.Copy(io.Discard, stderr)
		close(p.lines)
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
	})
	return p
}

// until reads stderr lines until one contains want (true) or the process
// ends or the time is up (false); it returns everything read.
func (p *serveProcess) until(want string, limit time.Duration) (bool, string) {
	var all strings.Builder
	deadline := time.After(limit)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return false, all.String()
			}
			all.WriteString(line + "\n")
			if strings.Contains(line, want) {
				return true, all.String()
			}
		case <-deadline:
			return false, all.String()
		}
	}
}

// testSecretKey is a fixed NOTICES_SECRET_KEY for the processes of tests.
const testSecretKey = "dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0dGVzdHRlc3Q="

// TestSecondServeOnOneDataDirRefused runs two real `serve` processes on one
// data directory: the second must refuse to start, naming the lock, while
// the first keeps serving; after the first stops, a new one starts.
func TestSecondServeOnOneDataDirRefused(t *testing.T) {
	bin := buildBinary(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	first := startServe(t, bin, dataDir)
	if ok, out := first.until(`"msg":"serving"`, 60*time.Second); !ok {
		t.Fatalf("the first serve did not start:\n%s", out)
	}
	second := startServe(t, bin, dataDir)
	started, out := second.until(`"msg":"serving"`, 30*time.Second)
	if started {
		t.Fatalf("a second serve started on the same data directory:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-second.done:
		if second.err == nil {
			t.Fatalf("the second serve exited 0; want a failure\n%s", out)
		}
	case <-ctx.Done():
		t.Fatalf("the second serve neither served nor exited\n%s", out)
	}
	if !strings.Contains(out, "another noticesd serve") || !strings.Contains(out, dataDir) {
		t.Errorf("the second serve's message does not say why:\n%s", out)
	}
	// The first is still alive; once it stops, the directory is free.
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the first serve did not stop on SIGTERM")
	}
	third := startServe(t, bin, dataDir)
	if ok, out := third.until(`"msg":"serving"`, 60*time.Second); !ok {
		t.Fatalf("a serve after the first stopped did not start:\n%s", out)
	}
}
