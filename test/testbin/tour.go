package testbin

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exportVar is one NAME=value (or NAME='value') of the demo's export lines.
var exportVar = regexp.MustCompile(`(\w+)=('[^']*'|\S+)`)

// Tour runs `noticesd demo` with env on a free port, as `make run` does
// (a small sample on first use), and then the README's short tour and the
// examples of docs/reference.md against it, exactly as written: the two
// export lines the demo prints, then every shell block of the tour and of
// the reference, in that order, in bash with set -euo pipefail in a
// directory of its own. Every curl in the blocks must run and answer 2xx.
// Then the sh examples of the API reference the server serves (/docs,
// from /openapi.json) after the same export lines (RunAPIExamples).
// Then it checks what the README says of the answers: the screen finds
// $ACN and $ABN, leaves $QUIET unmatched and 123456780 unresolved; $QUIET
// is in the register with notice_count 0; the new watch has no deliveries
// yet.
func Tour(tb testing.TB, bin string, env []string) {
	tb.Helper()
	tourBlocks(tb) // what the tour needs, checked before the demo starts

	TourAt(tb, StartDemo(tb, bin, env, "--notices", "3000", "--companies", "12000").Exports)
}

// TourAt runs the README's short tour and the reference's examples, as
// Tour does, against a server already running: exports are the two export
// lines `noticesd demo` prints (KEY, ACCT and BASE; ACN, ABN, QUIET and
// NOTICE), made by the caller for a server it started otherwise (test/deployrun's
// compose stack).
func TourAt(tb testing.TB, exports []string) {
	tb.Helper()
	blocks, calls := tourBlocks(tb)
	client := &http.Client{Timeout: 30 * time.Second}
	vars := exportVars(exports)
	base := vars["BASE"]

	out, ran := RunShell(tb, strings.Join(exports, "\n")+"\n"+strings.Join(blocks, "\n"))
	if ran != calls {
		tb.Fatalf("the examples ran %d curl commands, the README's tour and the reference have %d", ran, calls)
	}
	// The examples of the API reference the server serves (/docs renders
	// /openapi.json), pasted after the same export lines.
	examples := APIExamples(tb, client, base)
	if len(examples) < 18 {
		tb.Fatalf("the served OpenAPI document has %d sh examples; this test expects at least 18, one per operation", len(examples))
	}
	RunAPIExamples(tb, exports, examples)

	if !strings.Contains(out, `{"data":[]}`) {
		tb.Errorf(`the README says a new watch's deliveries are {"data":[]}; the tour printed:\n%s`, out)
	}

	// What the README says of the answers, with the values the demo printed.
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

// tourBlocks returns the shell blocks of the README's tour and of the API
// reference, and how many curl commands they hold, after checking that
// the tools they run are on PATH and that they are all there.
func tourBlocks(tb testing.TB) (blocks []string, calls int) {
	tb.Helper()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			tb.Fatalf("the README's tour and the reference's examples run %s, and there is none on PATH: install it (apt-get install %s)", tool, tool)
		}
	}
	tour := ShellBlocks(tb, "README.md", "## A short tour")
	reference := ShellBlocks(tb, "docs/reference.md", "")
	blocks = append(slices.Clone(tour), reference...)
	calls = CurlCalls(blocks)
	if len(tour) < 2 || len(reference) < 11 || calls < 40 {
		tb.Fatalf("README.md's tour has %d shell blocks and docs/reference.md %d, with %d curl commands in all; this test expects at least 2, 11 and 40",
			len(tour), len(reference), calls)
	}
	return blocks, calls
}
