// Command testsummary reads `go test -json` events (or `go tool test2json`'s)
// on stdin and prints what a plain `go test` prints: a line per package
// ("ok", "FAIL"), build errors, and the whole output of every failing test,
// in full, each package's lines together when it ends (packages run side by
// side). Passing tests stay quiet, as without -v. It appends every skipped
// test, by package and name with its reason, to the file named by -skips
// (one tab-separated line each), so that scripts/test.sh can list them all
// at the end of make test. Its exit status is 0 whatever the tests did: the
// caller takes go test's.
//
//	go test -json ./... | go run ./scripts/testsummary -skips /tmp/skips -stage "go test"
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of test2json output.
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Output     string
	Elapsed    float64
}

type key struct{ pkg, test string }

type summary struct {
	out    io.Writer
	skips  io.Writer
	stage  string
	buf    map[key][]string    // output of each running test
	pkgOut map[string][]string // output of the package itself (TestMain, go test's lines)
	failed map[string][]string // output of the package's failed tests, printed when it ends
}

func main() {
	skips := flag.String("skips", "", "append skipped tests to this file (package<TAB>test<TAB>reason<TAB>stage)")
	stage := flag.String("stage", "", "the make test stage, written beside each skip")
	flag.Parse()
	s := &summary{out: os.Stdout, stage: *stage, buf: map[key][]string{}, pkgOut: map[string][]string{}, failed: map[string][]string{}}
	if *skips != "" {
		f, err := os.OpenFile(*skips, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(1)
		}
		defer f.Close()
		s.skips = f
	}
	s.run(os.Stdin)
}

func (s *summary) run(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event (go test's own messages): as it came.
			fmt.Fprintln(s.out, string(line))
			continue
		}
		s.event(e)
	}
	// Input ended with tests still running (the go command was killed): show them.
	for k, lines := range s.buf {
		fmt.Fprintf(s.out, "--- %s %s: no result (its output follows)\n", k.pkg, k.test)
		s.write(lines)
	}
}

func (s *summary) event(e event) {
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.out, e.Output)
		return
	case "start", "run", "pause", "cont", "bench", "build-fail":
		return
	}
	if e.Test == "" {
		s.pkgEvent(e)
		return
	}
	k := key{e.Package, e.Test}
	switch e.Action {
	case "output":
		s.buf[k] = append(s.buf[k], e.Output)
	case "pass":
		delete(s.buf, k)
	case "skip":
		if s.skips != nil {
			fmt.Fprintf(s.skips, "%s\t%s\t%s\t%s\n", e.Package, e.Test, reason(s.buf[k]), s.stage)
		}
		delete(s.buf, k)
	case "fail":
		s.failed[e.Package] = append(s.failed[e.Package], s.buf[k]...)
		delete(s.buf, k)
	}
}

// pkgEvent handles output and results that belong to a package, not a test.
func (s *summary) pkgEvent(e event) {
	switch e.Action {
	case "output":
		s.pkgOut[e.Package] = append(s.pkgOut[e.Package], e.Output)
	case "pass":
		// go test's own "ok" line is in the output; TestMain's reports
		// (testservers' "LIVE SUITE NOT RUN" list) are printed with it.
		s.write(s.failed[e.Package]) // none, unless a test failed and its package still passed
		delete(s.failed, e.Package)
		for _, l := range s.pkgOut[e.Package] {
			if l == "PASS\n" || strings.HasPrefix(l, "=== ") {
				continue
			}
			fmt.Fprint(s.out, l)
		}
		if !hasResult(s.pkgOut[e.Package]) {
			fmt.Fprintf(s.out, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
		delete(s.pkgOut, e.Package)
	case "skip": // no test files
		delete(s.pkgOut, e.Package)
	case "fail":
		s.write(s.failed[e.Package])
		delete(s.failed, e.Package)
		// Tests that never reported a result (a panic, a -timeout) hold
		// the output that explains the failure.
		for k, lines := range s.buf {
			if k.pkg == e.Package {
				fmt.Fprintf(s.out, "--- %s: no result (its output follows)\n", k.test)
				s.write(lines)
				delete(s.buf, k)
			}
		}
		s.write(s.pkgOut[e.Package])
		if !hasResult(s.pkgOut[e.Package]) {
			fmt.Fprintf(s.out, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
		delete(s.pkgOut, e.Package)
	}
}

func hasResult(lines []string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, "ok  \t") || strings.HasPrefix(l, "FAIL\t") {
			return true
		}
	}
	return false
}

func (s *summary) write(lines []string) {
	for _, l := range lines {
		if strings.HasPrefix(l, "=== RUN") || strings.HasPrefix(l, "=== PAUSE") || strings.HasPrefix(l, "=== CONT") || strings.HasPrefix(l, "=== NAME") {
			continue
		}
		fmt.Fprint(s.out, l)
	}
}

// reason is the skip message: the test's own output lines (its t.Log and
// t.Skip text) without test2json's framing, on one line, at most 300 bytes.
func reason(lines []string) string {
	var parts []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		parts = append(parts, strings.Join(strings.Fields(l), " "))
	}
	r := strings.Join(parts, " ")
	if r == "" {
		return "(no reason given)"
	}
	if len(r) > 300 {
		r = r[:300] + "..."
	}
	return r
}
