package testbin

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// shellCurl stands in for curl in a documents' script: the real curl (-q:
// no ~/.curlrc), whose body goes to standard output as the reader would see
// it, and whose status is checked, so a 4xx or 5xx fails the script
// (set -e) naming the command. Each call leaves a line "doc-curl <status>"
// on standard error to count.
const shellCurl = `curl() {
  local out code
  out=$(command curl -q -sS --max-time 30 -w '\n%{http_code}' "$@") || { echo "doc: curl failed (no connection or no answer within 30 s): curl $*" >&2; return 1; }
  code=${out##*$'\n'}
  printf '%s\n' "${out%$'\n'*}"
  echo "doc-curl $code" >&2
  case $code in
    2??) ;;
    *) echo "doc: HTTP $code from: curl $*" >&2; return 1 ;;
  esac
}
`

// curlCall finds each curl command in a block: at the start of a line, of
// a command substitution or of a pipeline's command.
var curlCall = regexp.MustCompile(`(?m)(^|\$\(|\| )curl `)

// CurlCalls counts the curl commands written in blocks.
func CurlCalls(blocks []string) int {
	n := 0
	for _, b := range blocks {
		n += len(curlCall.FindAllString(b, -1))
	}
	return n
}

// ShellBlocks returns the sh code blocks of the repository's file path
// (relative to its root), without the export lines whose values are
// placeholders ("...", which `make run` prints). With a section heading
// ("## A short tour"), only the blocks between it and the next heading of
// its level or above.
func ShellBlocks(tb testing.TB, path, section string) []string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	text, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", path))
	if err != nil {
		tb.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	if section != "" {
		level := strings.IndexByte(section, ' ')
		start := -1
		for i, l := range lines {
			if l == section {
				start = i
				break
			}
		}
		if start < 0 {
			tb.Fatalf("%s has no %q section", path, section)
		}
		end, fenced := len(lines), false
		for i := start + 1; i < len(lines); i++ {
			l := strings.TrimSpace(lines[i])
			if strings.HasPrefix(l, "```") {
				fenced = !fenced
			}
			if h := strings.IndexByte(lines[i], ' '); !fenced && h > 0 && h <= level && strings.Trim(lines[i][:h], "#") == "" {
				end = i
				break
			}
		}
		lines = lines[start+1 : end]
	}
	var blocks []string
	var block []string
	in, indent := false, ""
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case !in && t == "```sh":
			// A block in a list item is indented: its lines lose the
			// fence's indentation.
			in, block, indent = true, nil, l[:strings.Index(l, "```")]
		case in && t == "```":
			in = false
			blocks = append(blocks, strings.Join(block, "\n"))
		case in:
			if strings.HasPrefix(t, "export ") && strings.Contains(t, "...") {
				continue
			}
			block = append(block, strings.TrimPrefix(l, indent))
		}
	}
	return blocks
}

// RunShell runs script in bash with set -euo pipefail and curl checked
// (shellCurl), in a directory of its own, and returns what it wrote to
// standard output and how many curl commands it ran. A failure, or a
// script still running after 3 minutes, fails tb with its output.
func RunShell(tb testing.TB, script string) (stdout string, curls int) {
	tb.Helper()
	full := "set -euo pipefail\n" + shellCurl + script
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", full)
	sh.Dir = tb.TempDir()
	var out, errOut bytes.Buffer
	sh.Stdout, sh.Stderr = &out, &errOut
	if err := sh.Run(); err != nil {
		tb.Fatalf("the documents' commands failed (%v):\n%s\nstdout:\n%s\nscript:\n%s", err, errOut.String(), out.String(), full)
	}
	return out.String(), strings.Count(errOut.String(), "doc-curl ")
}
