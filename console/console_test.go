package console

import (
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxGzip is the budget of the whole console, gzip-compressed: 300 KB.
const maxGzip = 300 * 1000

// TestGzipBudget: every embedded file, gzip-compressed at the best level
// one by one, adds up to under 300 KB.
func TestGzipBudget(t *testing.T) {
	total, raw := 0, 0
	for _, name := range Names() {
		a, _ := Lookup(name)
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		if _, err := w.Write(a.Body); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%-12s %7d bytes, %6d gzip", name, len(a.Body), b.Len())
		total += b.Len()
		raw += len(a.Body)
	}
	t.Logf("all %d files: %d bytes, %d gzip (budget %d)", len(Names()), raw, total, maxGzip)
	if total >= maxGzip || total == 0 {
		t.Errorf("the console is %d bytes gzip-compressed; the budget is under %d", total, maxGzip)
	}
}

var (
	importFrom = regexp.MustCompile(`(?m)^import .* from '\./([a-z]+\.js)';$`)
	assetRef   = regexp.MustCompile(`/console/([a-z]+\.[a-z]+)`)
)

// TestSelfContained: the console names no other host, has no inline
// script or style (the CSP forbids them), and every module it imports and
// every file its page names is embedded.
func TestSelfContained(t *testing.T) {
	for _, name := range Names() {
		a, _ := Lookup(name)
		// The SVG namespace is a name, not a request.
		body := strings.ReplaceAll(string(a.Body), "http://www.w3.org/2000/svg", "")
		for _, bad := range []string{"http://", "https://", "//cdn", "@import", "innerHTML", "eval(", "new Function"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s contains %q: the console may load nothing from elsewhere and build no markup from strings", name, bad)
			}
		}
		for _, m := range importFrom.FindAllStringSubmatch(body, -1) {
			if _, ok := Lookup(m[1]); !ok {
				t.Errorf("%s imports %s, which is not embedded", name, m[1])
			}
		}
	}
	index, ok := Lookup(Index)
	if !ok {
		t.Fatal("no index.html")
	}
	page := string(index.Body)
	if strings.Contains(page, "<style") || strings.Contains(page, "style=") || strings.Contains(page, " on") && regexp.MustCompile(` on[a-z]+=`).MatchString(page) {
		t.Error("index.html has inline style or event handlers; the CSP forbids them")
	}
	if n, src := strings.Count(page, "<script"), strings.Count(page, `<script type="module" src="/console/`); n != src {
		t.Errorf("index.html has %d scripts, %d of them files of the console: inline scripts are forbidden by the CSP", n, src)
	}
	refs := assetRef.FindAllStringSubmatch(page, -1)
	if len(refs) < 3 {
		t.Errorf("index.html names %d console files; want its script, style and icon", len(refs))
	}
	for _, m := range refs {
		if _, ok := Lookup(m[1]); !ok {
			t.Errorf("index.html names /console/%s, which is not embedded", m[1])
		}
	}
	if !strings.Contains(CSP, "default-src 'self'") || !strings.Contains(CSP, "connect-src 'self'") || strings.Contains(CSP, "unsafe") {
		t.Errorf("CSP %q must keep everything to the origin and allow no inline code", CSP)
	}
}

// docImage is a Markdown image of docs/console.md.
var docImage = regexp.MustCompile(`!\[[^\]]*\]\(([^)]+)\)`)

// TestDocScreenshots: every screenshot docs/console.md shows is committed
// and under 200 KB (they come from test/browser's artifacts).
func TestDocScreenshots(t *testing.T) {
	doc, err := os.ReadFile("../docs/console.md")
	if err != nil {
		t.Fatal(err)
	}
	images := docImage.FindAllStringSubmatch(string(doc), -1)
	if len(images) < 6 {
		t.Errorf("docs/console.md shows %d screenshots; want the six screens (search, notice, company, stats, screen, watch)", len(images))
	}
	for _, m := range images {
		fi, err := os.Stat(filepath.Join("../docs", m[1]))
		if err != nil {
			t.Errorf("docs/console.md shows %s: %v", m[1], err)
			continue
		}
		if fi.Size() >= 200_000 {
			t.Errorf("docs/%s is %d bytes; keep each screenshot under 200 KB", m[1], fi.Size())
		}
	}
}

// TestCSVParse runs testdata/csv_check.mjs under node: the console's CSV
// reader (assets/csv.js) on quoted fields, doubled quotes, line ends inside
// quotes, CRLF and empty cells, and its count of an uploaded list's data
// rows (a header and 903 rows is 903, not "904 lines").
func TestCSVParse(t *testing.T) {
	runNode(t, "testdata/csv_check.mjs", "csv ok", "the console's CSV reader")
}

// TestSourceLink runs testdata/link_check.mjs under node: a notice's
// source_url is a link only when it is an http(s) URL (assets/dom.js
// sourceLink); javascript:, data: and relative URLs are plain text.
func TestSourceLink(t *testing.T) {
	runNode(t, "testdata/link_check.mjs", "links ok", "the console's source links")
}

// TestRegisterCodes runs testdata/register_check.mjs under node: the
// company register's codes (EXAD, APTY, LMSH...) in plain English with the
// code beside (assets/register.js).
func TestRegisterCodes(t *testing.T) {
	runNode(t, "testdata/register_check.mjs", "register ok", "the console's register codes")
}

// TestSearchBox runs testdata/searchbox_check.mjs under node: 9 or 11
// digits (spaces allowed) in the search box open the company, other words
// search (and look up company names when they use no operator); a month
// bar's date range; the Sydney date that marks the partial month; a
// notice's highlight (HTML fragments) read as text with marked words.
func TestSearchBox(t *testing.T) {
	runNode(t, "testdata/searchbox_check.mjs", "searchbox ok", "the console's search box")
}

// runNode runs script under node and requires ok in its output; what
// names the code it checks in the failure and skip messages.
func runNode(t *testing.T, script, ok, what string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: node is not installed: %s was NOT tested", what)
		}
		t.Skipf("NOT TESTED: node is not installed, so %s did not run (CI=true fails here)", what)
	}
	out, err := exec.Command(node, script).CombinedOutput()
	if err != nil || !strings.Contains(string(out), ok) {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
}
