package docs

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var update = flag.Bool("update", false, "rewrite the line counts in docs/README.md")

// newcomerLimit is what a newcomer reads to run, use and deploy the
// service: the pages of docs/README.md's first section, together.
const newcomerLimit = 1500

// quickstartLimit bounds docs/quickstart-operator.md.
const quickstartLimit = 150

// pageRow is one row of a reading-path table: | [name](path) | lines | ... |
var pageRow = regexp.MustCompile(`^\| \[([^\]]+)\]\(([^)#]+)\) \| (\d[\d,]*) \|`)

// totalLine states the newcomer path's length: **N lines** in all.
var totalLine = regexp.MustCompile(`\*\*(\d[\d,]*) lines\*\* in all`)

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func number(s string) int {
	n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	return n
}

// comma writes n with thousands separators, as the page does.
func comma(n int) string {
	s := strconv.Itoa(n)
	if len(s) <= 3 {
		return s
	}
	return comma(n/1000) + "," + s[len(s)-3:]
}

// TestReadingPath checks docs/README.md: every page it lists with its line
// count as the file has it now, every page of docs/ listed once, the
// newcomer's path (the section before the first "## " heading after it,
// "## Operate") within newcomerLimit lines and its stated total right, and
// the operator quickstart within quickstartLimit lines. go test -update
// rewrites the counts and the total.
func TestReadingPath(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Split(string(raw), "\n")
	listed := map[string]bool{}
	newcomer, section, total := 0, "", -1
	for i, l := range text {
		if strings.HasPrefix(l, "## ") {
			section = strings.TrimPrefix(l, "## ")
		}
		if m := totalLine.FindStringSubmatch(l); m != nil {
			total = i
		}
		m := pageRow.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		path := filepath.Clean(m[2])
		if listed[path] {
			t.Errorf("README.md lists %s twice", path)
		}
		listed[path] = true
		got := lines(t, path)
		if number(m[3]) != got {
			if *update {
				text[i] = strings.Replace(l, "| "+m[3]+" |", "| "+comma(got)+" |", 1)
			} else {
				t.Errorf("README.md says %s has %s lines; it has %d (go test ./docs -update rewrites the counts)", path, m[3], got)
			}
		}
		if strings.HasPrefix(section, "The newcomer's path") {
			newcomer += got
		}
	}
	if newcomer == 0 || total < 0 {
		t.Fatalf("README.md has no newcomer's path (a section \"## The newcomer's path\" with page rows) or no \"**N lines** in all\" line")
	}
	if newcomer > newcomerLimit {
		t.Errorf("the newcomer's path is %d lines, over %d: trim its pages or move reference material out of it", newcomer, newcomerLimit)
	}
	if m := totalLine.FindStringSubmatch(text[total]); number(m[1]) != newcomer {
		if *update {
			text[total] = strings.Replace(text[total], "**"+m[1]+" lines**", "**"+comma(newcomer)+" lines**", 1)
		} else {
			t.Errorf("README.md says the newcomer's path is %s lines in all; its pages have %d", m[1], newcomer)
		}
	}
	if *update {
		if err := os.WriteFile("README.md", []byte(strings.Join(text, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if p != "README.md" && !listed[p] {
			t.Errorf("docs/%s is not on docs/README.md's reading path", p)
		}
	}
	if n := lines(t, "quickstart-operator.md"); n > quickstartLimit {
		t.Errorf("quickstart-operator.md has %d lines, over %d", n, quickstartLimit)
	}
}

// TestQuickstartBlocksAreShell checks that every fenced block of
// quickstart-operator.md is a sh block: test/deployrun's
// TestQuickstartOperator runs all of those, so a command in any other block
// would be one no test runs.
func TestQuickstartBlocksAreShell(t *testing.T) {
	raw, err := os.ReadFile("quickstart-operator.md")
	if err != nil {
		t.Fatal(err)
	}
	in, blocks := false, 0
	for i, l := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(l, "```") {
			continue
		}
		if !in && l != "```sh" {
			t.Errorf("quickstart-operator.md:%d: a fenced block %q; only ```sh blocks (run by test/deployrun) are allowed", i+1, l)
		}
		if !in {
			blocks++
		}
		in = !in
	}
	if blocks == 0 {
		t.Fatal("quickstart-operator.md has no sh block")
	}
}

// link is a Markdown link's target: ](target)
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// slug is GitHub's anchor for a heading: lower case, punctuation dropped,
// spaces as hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are a Markdown file's heading anchors, a repeated heading's
// copies numbered -1, -2, ... as GitHub numbers them.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	out := map[string]bool{}
	fence := false
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(l, "#") {
			continue
		}
		s := slug(strings.TrimSpace(strings.TrimLeft(l, "#")))
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestLinks checks every relative link of README.md and docs/*.md outside
// code blocks: the file exists and, with a #fragment, has that heading.
func TestLinks(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../README.md")
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		fence := false
		for i, l := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(l, "```") {
				fence = !fence
			}
			if fence {
				continue
			}
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s:%d: link to %s: no such file", page, i+1, target)
						continue
					}
				}
				if frag != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[frag] {
					t.Errorf("%s:%d: link to %s: %s has no heading with that anchor", page, i+1, target, path)
				}
			}
		}
	}
}
