// Package testbin gives tests that run the built noticesd binary as a
// separate process (test/e2e, test/load) the steps they share: building it,
// running a command and reading a process's memory and descriptors.
package testbin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Build builds cmd/noticesd (with the sqlite_fts5 tag) into a temporary
// directory of tb and returns its path. When NOTICES_TEST_BINARY names a
// file, it returns that instead: scripts/test.sh builds the binary once, the
// same way, just before the suite, so that the dozen tests that run it do
// not link it a dozen times. Tests must not change or remove it.
func Build(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("NOTICES_TEST_BINARY"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			tb.Fatalf("NOTICES_TEST_BINARY: %v", err)
		}
		return bin
	}
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(tb.TempDir(), "noticesd")
	cmd := exec.Command("go", "build", "-tags", "sqlite_fts5", "-o", bin, "./cmd/noticesd")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// Run runs the binary with args and env added to the environment, and
// returns its standard output; a failure fails tb with its stderr.
func Run(tb testing.TB, bin string, env []string, args ...string) []byte {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("noticesd %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// Start runs the binary with args and env added to the environment, its
// stderr to the test's, and returns its pid and stop, which interrupts it
// and waits for it to end (killing it after 30 s); stop runs when tb ends
// too, and may run more than once.
func Start(tb testing.TB, bin string, env []string, args ...string) (pid int, stop func()) {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	tb.Cleanup(stop)
	return cmd.Process.Pid, stop
}

// RSS is the resident set of process pid in bytes (VmRSS of
// /proc/PID/status).
func RSS(tb testing.TB, pid int) int64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatalf("read RSS: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				tb.Fatalf("parse %q: %v", line, err)
			}
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS in /proc status")
	return 0
}

// FDs is how many file descriptors process pid has open.
func FDs(tb testing.TB, pid int) int {
	tb.Helper()
	ents, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		tb.Fatalf("list fds: %v", err)
	}
	return len(ents)
}
