package testbin

import (
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Demo is a running `noticesd demo` (what `make run` runs).
type Demo struct {
	// Base is http://ADDR of the server.
	Base string
	// Exports are the two export lines the demo printed (KEY, ACCT and
	// BASE; ACN, ABN, QUIET and NOTICE).
	Exports []string
	// Vars are the values of Exports by name, unquoted.
	Vars map[string]string
	// Stdout is everything the demo printed so far.
	Stdout *LockedBuffer
}

// StartDemo runs `noticesd demo args...` with env on a free port and waits
// until it serves (/ready answers and it printed "Serving on"); the process
// is killed when tb ends.
func StartDemo(tb testing.TB, bin string, env []string, args ...string) *Demo {
	tb.Helper()
	addr := FreeAddr(tb)
	stdout, stderr := &LockedBuffer{}, &LockedBuffer{}
	cmd := exec.Command(bin, append([]string{"demo"}, args...)...)
	cmd.Env = append(append(os.Environ(), env...), "NOTICES_ADDR="+addr)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	base := "http://" + addr
	client := &http.Client{Timeout: 30 * time.Second}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if resp, err := client.Get(base + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(stdout.String(), "Serving on") {
				break
			}
		}
		if cmd.ProcessState != nil || time.Now().After(deadline) {
			tb.Fatalf("noticesd demo did not become ready on %s; stdout:\n%s\nstderr:\n%s", addr, stdout, stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	d := &Demo{Base: base, Vars: map[string]string{}, Stdout: stdout}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "export ") {
			d.Exports = append(d.Exports, l)
		}
	}
	if len(d.Exports) != 2 {
		tb.Fatalf("noticesd demo printed %d export lines, want the README's two; stdout:\n%s", len(d.Exports), stdout)
	}
	d.Vars = exportVars(d.Exports)
	return d
}

// exportVars are the NAME=value pairs of export lines, values unquoted.
func exportVars(exports []string) map[string]string {
	vars := map[string]string{}
	for _, e := range exports {
		for _, m := range exportVar.FindAllStringSubmatch(e, -1) {
			vars[m[1]] = strings.Trim(m[2], "'")
		}
	}
	return vars
}
