package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/test/testbin"
)

// readKeyLine is the demo's line with the read key.
var readKeyLine = regexp.MustCompile(`(?m)^\s+read key:\s+(\S+)$`)

// TestSecondDemoRefused runs `noticesd demo` (what `make run` runs) and
// then a second one beside it: on the same data directory, on the same
// address, and on both (a second `make run`). Each second demo must exit
// non-zero before printing keys or "Serving on", naming the first demo's
// process, and the first demo's keys must still work afterwards; a second
// demo on the address alone must not even create its data directory.
func TestSecondDemoRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := testbin.Build(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	addr := testbin.FreeAddr(t)
	env := func(dir, addr string) []string {
		return append(os.Environ(), "NOTICES_DATA_DIR="+dir, "NOTICES_ADDR="+addr, "NOTICES_SOURCE=",
			"NOTICES_SECRET_KEY="+testSecretKey)
	}
	first := exec.Command(bin, "demo", "--notices", "300", "--companies", "1000")
	first.Env = env(dataDir, addr)
	stdout, stderr := &testbin.LockedBuffer{}, &testbin.LockedBuffer{}
	first.Stdout, first.Stderr = stdout, stderr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = first.Process.Kill()
		_ = first.Wait()
	})
	testbin.WaitFor(t, 2*time.Minute, "the first demo to serve", func() bool {
		return strings.Contains(stdout.String(), "Serving on")
	})
	m := readKeyLine.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("the first demo printed no read key:\n%s", stdout)
	}
	key := m[1]
	keyWorks := func(t *testing.T) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/notices?limit=1", nil)
		req.Header.Set("X-API-Key", key)
		var resp *http.Response
		testbin.WaitFor(t, 30*time.Second, "the first demo to answer", func() bool {
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			resp = r
			return true
		})
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the first demo's read key now answers HTTP %d, want 200", resp.StatusCode)
		}
	}
	keyWorks(t)
	pid := "process " + strconv.Itoa(first.Process.Pid) + " (noticesd demo"

	for _, tt := range []struct {
		name, dataDir, addr string
		want                []string // in the second demo's stderr
		noDataDir           bool
	}{
		{"same data directory", dataDir, testbin.FreeAddr(t), []string{"another noticesd serve", dataDir, pid}, false},
		{"same address", filepath.Join(t.TempDir(), "other"), addr, []string{"listen on " + addr + ": address already in use: " + pid, " listens there;"}, true},
		{"second make run", dataDir, addr, []string{"listen on " + addr, pid}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			second := exec.CommandContext(ctx, bin, "demo", "--notices", "300", "--companies", "1000")
			second.Env = env(tt.dataDir, tt.addr)
			var out, errOut strings.Builder
			second.Stdout, second.Stderr = &out, &errOut
			err := second.Run()
			if ctx.Err() != nil {
				t.Fatalf("the second demo did not exit:\nstdout:\n%s\nstderr:\n%s", &out, &errOut)
			}
			if code := second.ProcessState.ExitCode(); err == nil || code != exitFailure {
				t.Errorf("the second demo exited %d, want %d", code, exitFailure)
			}
			for _, w := range append(tt.want, "Nothing was created or rotated") {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("the second demo's stderr does not say %q:\n%s", w, &errOut)
				}
			}
			if s := out.String(); strings.Contains(s, "Serving on") || strings.Contains(s, "key:") {
				t.Errorf("the second demo printed keys or 'Serving on' before refusing:\n%s", s)
			}
			if _, err := os.Stat(tt.dataDir); tt.noDataDir && !os.IsNotExist(err) {
				t.Errorf("the second demo created its data directory %s (%v)", tt.dataDir, err)
			}
			keyWorks(t)
		})
	}
}
