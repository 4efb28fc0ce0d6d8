package testbin

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tourCurl stands in for curl in the tour's script: the real curl (-q: no
// ~/.curlrc), whose body goes to standard output as the reader would see
// it, and whose status is checked, so a 4xx or 5xx fails the script
// (set -e) naming the command. Each call leaves a line "tour-curl <status>"
// on standard error to count.
const tourCurl = `curl() {
  local out code
  out=$(command curl -q -sS --max-time 30 -w '\n%{http_code}' "$@") || { echo "tour: curl failed (no connection or no answer within 30 s): curl $*" >&2; return 1; }
  code=${out##*$'\n'}
  printf '%s\n' "${out%$'\n'*}"
  echo "tour-curl $code" >&2
  case $code in
    2??) ;;
    *) echo "tour: HTTP $code from: curl $*" >&2; return 1 ;;
  esac
}
`

// curlCall finds each curl command in a block: at the start of a line, of
// a command substitution or of a pipeline's command.
var curlCall = regexp.MustCompile(`(?m)(^|\$\(|\| )curl `)

// shellBlocks returns the sh code blocks of the repository's file path
// (relative to its root), of the section headed section only when section
// is not "", without the export lines whose values are placeholders
// ("...", which `make run` prints).
func shellBlocks(tb testing.TB, path, section string) []string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	text, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", path))
	if err != nil {
		tb.Fatal(err)
	}
	s := string(text)
	if section != "" {
		start := strings.Index(s, "\n"+section+"\n")
		if start < 0 {
			tb.Fatalf("%s has no %q section", path, section)
		}
		s = s[start+1:]
		if end := strings.Index(s[3:], "\n## "); end >= 0 {
			s = s[:end+3]
		}
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(s, -1) {
		var lines []string
		for _, line := range strings.Split(m[1], "\n") {
			if strings.HasPrefix(line, "export ") && strings.Contains(line, "...") {
				continue
			}
			lines = append(lines, line)
		}
		blocks = append(blocks, strings.Join(lines, "\n"))
	}
	return blocks
}

// Tour runs `noticesd demo` with env on a free port, as `make run` does
// (a small sample on first use), and then the README's short tour and the
// examples of docs/reference.md against it, exactly as written: the two
// export lines the demo prints, then every shell block of the tour and of
// the reference, in that order, in bash with set -euo pipefail in a
// directory of its own. Every curl in the blocks must run and answer 2xx.
// Then it checks what the README says of the answers: the screen finds
// $ACN and $ABN, leaves $QUIET unmatched and 123456780 unresolved; $QUIET
// is in the register with notice_count 0; the new watch has no deliveries
// yet.
func Tour(tb testing.TB, bin string, env []string) {
	tb.Helper()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			tb.Fatalf("the README's tour and the reference's examples run %s, and there is none on PATH: install it (apt-get install %s)", tool, tool)
		}
	}
	tour := shellBlocks(tb, "README.md", "## A short tour")
	reference := shellBlocks(tb, "docs/reference.md", "")
	blocks := append(slices.Clone(tour), reference...)
	calls := 0
	for _, b := range blocks {
		calls += len(curlCall.FindAllString(b, -1))
	}
	if len(tour) < 2 || len(reference) < 11 || calls < 40 {
		tb.Fatalf("README.md's tour has %d shell blocks and docs/reference.md %d, with %d curl commands in all; this test expects at least 2, 11 and 40",
			len(tour), len(reference), calls)
	}

	addr := FreeAddr(tb)
	stdout, stderr := &LockedBuffer{}, &LockedBuffer{}
	cmd := exec.Command(bin, "demo", "--notices", "3000", "--companies", "12000")
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
	var exports []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "export ") {
			exports = append(exports, l)
		}
	}
	if len(exports) != 2 {
		tb.Fatalf("noticesd demo printed %d export lines, want the README's two; stdout:\n%s", len(exports), stdout)
	}

	script := "set -euo pipefail\n" + tourCurl + strings.Join(exports, "\n") + "\n" + strings.Join(blocks, "\n")
	// A server that stops answering fails the test here, not at go test's
	// timeout: curl gives up after 30 s, the script after 3 minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", script)
	// The examples write their files (loanbook.txt, openapi.json) in a
	// directory of their own.
	sh.Dir = tb.TempDir()
	var out, errOut bytes.Buffer
	sh.Stdout, sh.Stderr = &out, &errOut
	if err := sh.Run(); err != nil {
		tb.Fatalf("the README's tour or the reference's examples failed (%v):\n%s\nstdout:\n%s\nscript:\n%s", err, errOut.String(), out.String(), script)
	}
	if ran := strings.Count(errOut.String(), "tour-curl "); ran != calls {
		tb.Fatalf("the examples ran %d curl commands, the README's tour and the reference have %d; stderr:\n%s", ran, calls, errOut.String())
	}
	if !strings.Contains(out.String(), `{"data":[]}`) {
		tb.Errorf(`the README says a new watch's deliveries are {"data":[]}; the tour printed:\n%s`, out.String())
	}

	// What the README says of the answers, with the values the demo printed.
	vars := map[string]string{}
	for _, e := range exports {
		for _, m := range regexp.MustCompile(`(\w+)=('[^']*'|\S+)`).FindAllStringSubmatch(e, -1) {
			vars[m[1]] = strings.Trim(m[2], "'")
		}
	}
	get := func(method, path, body string, v any) {
		tb.Helper()
		req, _ := http.NewRequest(method, vars["BASE"]+path, strings.NewReader(body))
		req.Header.Set("X-API-Key", vars["KEY"])
		resp, err := client.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil || resp.StatusCode != http.StatusOK {
			tb.Fatalf("%s %s: HTTP %d, %v", method, path, resp.StatusCode, err)
		}
	}
	var screen struct {
		Matched []struct {
			Identifier string `json:"identifier"`
		} `json:"matched"`
		Unmatched  []string `json:"unmatched"`
		Unresolved []string `json:"unresolved"`
	}
	ids, _ := json.Marshal([]string{vars["ACN"], vars["ABN"], vars["QUIET"], "123456780"})
	get(http.MethodPost, "/v1/match", `{"identifiers": `+string(ids)+`}`, &screen)
	var matched []string
	for _, m := range screen.Matched {
		matched = append(matched, m.Identifier)
	}
	if abn := strings.ReplaceAll(vars["ABN"], " ", ""); !slices.Equal(matched, []string{vars["ACN"], abn}) ||
		!slices.Equal(screen.Unmatched, []string{vars["QUIET"]}) || !slices.Equal(screen.Unresolved, []string{"123456780"}) {
		tb.Errorf("the README says $ACN and $ABN match, $QUIET is unmatched and 123456780 unresolved; got matched %q, unmatched %q, unresolved %q",
			matched, screen.Unmatched, screen.Unresolved)
	}
	var quiet struct {
		Register    *json.RawMessage `json:"register"`
		NoticeCount *int             `json:"notice_count"`
	}
	get(http.MethodGet, "/v1/companies/"+vars["QUIET"], "", &quiet)
	if quiet.Register == nil || quiet.NoticeCount == nil || *quiet.NoticeCount != 0 {
		count := "absent"
		if quiet.NoticeCount != nil {
			count = strconv.Itoa(*quiet.NoticeCount)
		}
		tb.Errorf("the README says $QUIET (%s) is in the register with notice_count 0; got register data %v, notice_count %s", vars["QUIET"], quiet.Register != nil, count)
	}
}
