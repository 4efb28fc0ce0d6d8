// Package browser drives the analyst console (/console) in a real browser:
// Debian's chromium under chromedp, against `noticesd demo` (what make run
// runs) on the sample, on both backends. It signs in, searches, opens a
// notice and a company, reads the month chart, screens a 1,000-identifier
// CSV and downloads the answer, lists watches; every number on screen is
// checked against the API, every page is checked with axe-core (no
// serious or critical violation), and no request may leave the server's
// origin. Screenshots go to the artifacts directory
// ($NOTICES_TEST_ARTIFACTS/console, else a directory the test names).
package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

func TestMain(m *testing.M) { testservers.Main(m) }

// consoleLine is the line of the demo's output that gives the console's URL.
var consoleLine = regexp.MustCompile(`(?m)^Console: (\S+)`)

// demoArgs is the sample the console is driven against (the README tour's size).
var demoArgs = []string{"--notices", "3000", "--companies", "12000"}

// TestConsoleEmbedded drives the console against the embedded backend.
func TestConsoleEmbedded(t *testing.T) {
	chrome, axe := needBrowser(t)
	bin := testbin.Build(t)
	d := testbin.StartDemo(t, bin, []string{"NOTICES_DATA_DIR=" + filepath.Join(t.TempDir(), "data"), "NOTICES_LOG_LEVEL=warn"}, demoArgs...)
	drive(t, chrome, axe, d, "embedded")
}

// TestConsoleScale drives the console against the scale backend
// (Elasticsearch and Redis under a namespace of the test's own).
func TestConsoleScale(t *testing.T) {
	chrome, axe := needBrowser(t)
	bin := testbin.Build(t)
	d := testbin.StartDemo(t, bin, []string{
		"NOTICES_BACKEND=scale",
		"NOTICES_ELASTICSEARCH_URL=" + testservers.Elasticsearch(t),
		"NOTICES_REDIS_URL=" + testservers.Redis(t),
		"NOTICES_NAMESPACE=" + testservers.Namespace(t),
		"NOTICES_SECRET_KEY=" + config.DevelopmentSecretKey,
		"NOTICES_DATA_DIR=" + filepath.Join(t.TempDir(), "data"),
		"NOTICES_LOG_LEVEL=warn",
	}, demoArgs...)
	drive(t, chrome, axe, d, "scale")
}

// needBrowser finds Chromium (NOTICES_TEST_CHROMIUM, else chromium on
// PATH) and axe-core (npm ci in this directory from package-lock.json when
// node_modules lacks it). Without either the test fails under CI=true and
// says loudly what did not run otherwise.
func needBrowser(t *testing.T) (chrome string, axe []byte) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %s", msg)
		}
		t.Skipf("NOT TESTED: the console was NOT driven in a browser: %s (CI=true fails here)", msg)
	}
	chrome = os.Getenv("NOTICES_TEST_CHROMIUM")
	if chrome == "" {
		for _, name := range []string{"chromium", "chromium-browser"} {
			if p, err := exec.LookPath(name); err == nil {
				chrome = p
				break
			}
		}
	}
	if chrome == "" {
		missing("no chromium on PATH: install Debian's (apt-get install chromium; scripts/test.sh does) or set NOTICES_TEST_CHROMIUM")
	}
	axePath := filepath.Join("node_modules", "axe-core", "axe.min.js")
	if _, err := os.Stat(axePath); err != nil {
		if _, err := exec.LookPath("npm"); err != nil {
			missing("axe-core is not installed and there is no npm to install it (apt-get install npm)")
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
		if out, err := cmd.CombinedOutput(); err != nil {
			missing("npm ci (axe-core from package-lock.json) failed: %v\n%s", err, out)
		}
	}
	axe, err := os.ReadFile(axePath)
	if err != nil {
		missing("axe-core: %v", err)
	}
	return chrome, axe
}

// artifacts is the directory the screenshots of backend go to.
func artifacts(t *testing.T, backend string) string {
	t.Helper()
	root := os.Getenv("NOTICES_TEST_ARTIFACTS")
	if root == "" {
		root = filepath.Join(os.TempDir(), "noticesd-test-artifacts")
	}
	dir := filepath.Join(root, "console", backend)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(dir, "failed.png")) // a failed earlier run's
	return dir
}

// session is one browser tab on the console with what the test watches.
type session struct {
	t       *testing.T
	ctx     context.Context
	base    string
	axe     []byte
	shots   string
	dls     string
	backend string
	axeRuns int
	console string // the console's URL, as the demo printed it

	mu       sync.Mutex
	requests []string          // every URL the page requested
	problems []string          // script exceptions, security (CSP) and script error messages
	names    map[string]string // download GUID -> suggested file name
	done     map[string]bool   // download GUIDs completed
}

func drive(t *testing.T, chrome string, axe []byte, d *testbin.Demo, backend string) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900),
		chromedp.Flag("lang", "en-AU"))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	s := &session{t: t, base: d.Base, axe: axe, shots: artifacts(t, backend), dls: t.TempDir(), backend: backend, done: map[string]bool{}, names: map[string]string{}}
	bctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(s.onEvent))
	defer cancel()
	// The first Run starts the browser; it lives as long as bctx (no timeout on it).
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[string](`navigator.userAgent`)); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: Chromium (%s) did not start: %v", chrome, err)
		}
		t.Skipf("NOT TESTED: Chromium (%s) did not start: %v (CI=true fails here)", chrome, err)
	}
	ctx, cancel := context.WithTimeout(bctx, 5*time.Minute)
	defer cancel()
	s.ctx = ctx
	if err := chromedp.ListenBrowser(bctx, s.onEvent); err != nil {
		t.Fatal(err)
	}
	s.enable()
	t.Logf("screenshots of the %s backend in %s", backend, s.shots)
	a := &apiClient{t: t, base: d.Base, key: d.Vars["KEY"]}
	// make run prints the console's URL; the browser opens that.
	m := consoleLine.FindStringSubmatch(d.Stdout.String())
	if m == nil || m[1] != d.Base+"/console" {
		t.Fatalf("noticesd demo printed no line 'Console: %s/console'; it printed:\n%s", d.Base, d.Stdout)
	}
	s.console = m[1]

	s.signIn(d.Vars["KEY"], "read")
	s.search(a)
	s.company(a)
	s.stats(a)
	s.watches(a, d) // signs in again with the account key, which may also search and screen
	s.screen(a, d)
	s.exportSearch(a)

	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		t.Error("no request of the page was seen: the request check did not run")
	}
	for _, u := range s.requests {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "data" && pu.Scheme != "blob" && pu.Host != strings.TrimPrefix(d.Base, "http://")) {
			t.Errorf("the console requested %s: only its own origin %s may be asked", u, d.Base)
		}
		if strings.Contains(u, d.Vars["KEY"]) || strings.Contains(u, d.Vars["ACCT"]) {
			t.Errorf("a key appeared in a URL the console requested: %s", u)
		}
	}
	if s.axeRuns < 8 {
		t.Errorf("axe-core ran on %d pages, want every page the test visits (at least 8)", s.axeRuns)
	}
	for _, p := range s.problems {
		t.Errorf("the page reported: %s", p)
	}
}

// onEvent records the page's requests, script exceptions, security (CSP)
// and script error messages, and finished downloads. It runs on the
// browser's reading goroutine: it only records.
func (s *session) onEvent(ev any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		s.requests = append(s.requests, e.Request.URL)
	case *runtime.EventExceptionThrown:
		x := e.ExceptionDetails
		desc := ""
		if x.Exception != nil {
			desc = x.Exception.Description
		}
		s.problems = append(s.problems, fmt.Sprintf("exception %s %s at %s:%d", x.Text, desc, x.URL, x.LineNumber+1))
	case *cdplog.EventEntryAdded:
		if e.Entry.Source == cdplog.EntrySourceSecurity || (e.Entry.Source == cdplog.EntrySourceJavascript && e.Entry.Level == cdplog.EntryLevelError) {
			s.problems = append(s.problems, fmt.Sprintf("%s %s: %s", e.Entry.Source, e.Entry.Level, e.Entry.Text))
		}
	case *browser.EventDownloadWillBegin:
		s.names[e.GUID] = e.SuggestedFilename
	case *browser.EventDownloadProgress:
		if e.State == browser.DownloadProgressStateCompleted {
			s.done[e.GUID] = true
		}
	}
}

func (s *session) enable() {
	s.t.Helper()
	yes := true
	if _, err := chromedp.Call(s.ctx, network.Enable, network.EnableParams{}); err != nil {
		s.t.Fatal(err)
	}
	if _, err := chromedp.Call(s.ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		s.t.Fatal(err)
	}
	if _, err := chromedp.Call(s.ctx, runtime.Enable, cdp.Empty{}); err != nil {
		s.t.Fatal(err)
	}
	if _, err := chromedp.CallBrowser(s.ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: s.dls, EventsEnabled: &yes}); err != nil {
		s.t.Fatal(err)
	}
}

// fail ends the test with what the page showed and a screenshot (failed.png).
func (s *session) fail(what string, err error) {
	s.t.Helper()
	if shot, e := chromedp.Run(s.ctx, chromedp.CaptureScreenshot()); e == nil {
		_ = os.WriteFile(filepath.Join(s.shots, "failed.png"), shot, 0o644)
	}
	body, _ := chromedp.Run(s.ctx, chromedp.Evaluate[string](`document.getElementById('main').innerText`))
	s.t.Fatalf("%s (%s): %v\nthe page showed:\n%s", what, s.backend, err, body)
}

func (s *session) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	if err := chromedp.Do(s.ctx, steps...); err != nil {
		s.fail(what, err)
	}
}

// wait polls a JavaScript expression until it is truthy.
func (s *session) wait(what, expr string) {
	s.t.Helper()
	if _, err := chromedp.Run(s.ctx, chromedp.Poll[bool]("!!("+expr+")", chromedp.WithPollingTimeout(45*time.Second))); err != nil {
		s.fail("wait for "+what, err)
	}
}

// shown waits until the console has finished showing the address it is at
// (main's data-rendered is location.hash) and cond holds there.
func (s *session) shown(what, cond string) {
	s.t.Helper()
	s.wait(what, `document.getElementById('main').dataset.rendered === location.hash && (`+cond+`)`)
}

// eval evaluates a JavaScript expression into v (through JSON).
func (s *session) eval(expr string, v any) {
	s.t.Helper()
	r, err := chromedp.Run(s.ctx, chromedp.Evaluate[any](expr))
	if err != nil {
		s.fail("evaluate "+expr, err)
	}
	b, _ := json.Marshal(r)
	if err := json.Unmarshal(b, v); err != nil {
		s.t.Fatalf("evaluate %s: %v (%s)", expr, err, b)
	}
}

func (s *session) go_(hash string) {
	s.t.Helper()
	var ignored string
	s.eval(`location.hash = `+jsString(hash), &ignored)
}

func jsString(v string) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// shot writes a screenshot of the page as NAME.png in the artifacts directory.
func (s *session) shot(name string) {
	s.t.Helper()
	png, err := chromedp.Run(s.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		s.fail("screenshot "+name, err)
	}
	if err := os.WriteFile(filepath.Join(s.shots, name+".png"), png, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// axeViolation is one rule axe-core reports broken.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// accessible runs axe-core on the page as it is: no serious or critical violation.
func (s *session) accessible(page string) {
	s.t.Helper()
	var loaded bool
	s.eval(`typeof window.axe === 'object'`, &loaded)
	if !loaded {
		if _, err := chromedp.Run(s.ctx, chromedp.Evaluate[bool](string(s.axe)+"\n;true")); err != nil {
			s.fail("inject axe-core", err)
		}
	}
	vs, err := chromedp.Run(s.ctx, chromedp.Evaluate[[]axeViolation](`axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
		.filter(v => v.impact === 'serious' || v.impact === 'critical')
		.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))})))`, chromedp.EvalAwaitPromise))
	if err != nil {
		s.fail("axe on "+page, err)
	}
	s.axeRuns++
	for _, v := range vs {
		s.t.Errorf("axe-core on %s (%s): %s %s: %s at %v", page, s.backend, v.Impact, v.ID, v.Help, v.Nodes)
	}
}

// download clicks sel and returns the name and the bytes of the file the browser saved.
func (s *session) download(sel string) (name string, body []byte) {
	s.t.Helper()
	s.mu.Lock()
	before := map[string]bool{}
	for g := range s.names {
		before[g] = true
	}
	s.mu.Unlock()
	s.run("click "+sel, chromedp.Click(chromedp.CSS(sel)))
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		guid := ""
		for g := range s.names {
			if !before[g] && s.done[g] {
				guid, name = g, s.names[g]
			}
		}
		s.mu.Unlock()
		if guid != "" {
			b, err := os.ReadFile(filepath.Join(s.dls, guid))
			if err != nil {
				s.t.Fatal(err)
			}
			return name, b
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("clicking %s downloaded nothing within 45 s (%s)", sel, s.backend)
	return "", nil
}

func (s *session) signIn(key, kind string) {
	s.t.Helper()
	s.run("open /console", chromedp.Navigate(s.console), chromedp.WaitVisible(chromedp.ID("key")))
	s.shot("signin")
	s.accessible("the sign-in page")
	s.run("sign in", chromedp.SendKeys(chromedp.ID("key"), key), chromedp.Click(chromedp.CSS(`form.signin button[type="submit"]`)))
	s.shown("the signed-in search page", `!document.getElementById('nav').hidden && !!document.getElementById('total')`)
	var stored, href, shown string
	s.eval(`sessionStorage.getItem('noticesd.key')`, &stored)
	s.eval(`location.href`, &href)
	s.eval(`document.getElementById('keykind').textContent`, &shown)
	if stored != key {
		s.t.Errorf("sessionStorage holds %q after sign-in, want the key", stored)
	}
	if strings.Contains(href, key) {
		s.t.Errorf("the key is in the page's URL %s", href)
	}
	if want := map[string]string{"read": "Read key", "account": "Account key"}[kind]; shown != want {
		s.t.Errorf("the header says %q for the %s key, want %q", shown, kind, want)
	}
}

// search: words "liquidator", then the NSW state filter from the facet;
// the total shown and the facet's count are the API's.
func (s *session) search(a *apiClient) {
	s.t.Helper()
	s.run("search liquidator", chromedp.SetValue(chromedp.ID("q"), "liquidator"), chromedp.Click(chromedp.ID("go")))
	s.shown("results for liquidator", `location.hash.includes('q=liquidator') && !!document.getElementById('total') && !!document.getElementById('f-state-NSW')`)
	var facet string
	s.eval(`document.querySelector('label[for="f-state-NSW"] .count').dataset.count`, &facet)
	s.run("tick NSW", chromedp.Click(chromedp.ID("f-state-NSW")))
	s.shown("results in NSW", `location.hash.includes('state=NSW') && !!document.getElementById('total') && document.getElementById('f-state-NSW')?.checked`)
	var total string
	s.eval(`document.getElementById('total').dataset.total`, &total)
	var page struct {
		Total int `json:"total"`
		Data  []struct {
			ID        string  `json:"id"`
			SourceURL *string `json:"source_url"`
			ACN       *string `json:"acn"`
		} `json:"data"`
	}
	a.getJSON("/v1/notices?q=liquidator&state=NSW", &page)
	if total != fmt.Sprint(page.Total) || page.Total == 0 {
		s.t.Errorf("the console shows %s notices for liquidator in NSW; the API says %d (and the sample must have some)", total, page.Total)
	}
	if facet != fmt.Sprint(page.Total) {
		s.t.Errorf("the NSW facet says %s for liquidator; the API's search total is %d", facet, page.Total)
	}
	var rows int
	s.eval(`document.querySelectorAll('table.results tbody tr').length`, &rows)
	if rows != min(20, page.Total) {
		s.t.Errorf("%d result rows on the first page, want %d", rows, min(20, page.Total))
	}
	var firstID string
	s.eval(`document.querySelector('table.results tbody tr').dataset.id`, &firstID)
	if firstID != page.Data[0].ID {
		s.t.Errorf("the first row is %s; the API's first notice is %s", firstID, page.Data[0].ID)
	}
	s.shot("search")
	s.accessible("the search results")

	// A notice's detail with its source link.
	s.run("open the first notice", chromedp.Click(chromedp.CSS(`table.results tbody tr button`)))
	s.wait("the notice dialog", `!!document.querySelector('dialog[open]')`)
	var source string
	s.eval(`(document.getElementById('source') || {}).href || ''`, &source)
	if page.Data[0].SourceURL != nil && source != *page.Data[0].SourceURL {
		s.t.Errorf("the notice's source link is %q; the API's source_url is %q", source, *page.Data[0].SourceURL)
	}
	s.shot("notice")
	s.accessible("a notice's detail")
	s.run("close the notice", chromedp.Click(chromedp.CSS(`dialog[open] .dlghead button`)))
	s.wait("the dialog to close", `!document.querySelector('dialog')`)

	// Paged and sorted as the API pages and sorts.
	firstRow := func(what, query string) {
		s.t.Helper()
		var want struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		a.getJSON("/v1/notices?"+query, &want)
		var got string
		s.eval(`document.querySelector('table.results tbody tr').dataset.id`, &got)
		if len(want.Data) == 0 || got != want.Data[0].ID {
			s.t.Errorf("%s: the first row is %s; the API's first notice is %v", what, got, want.Data)
		}
	}
	s.run("next page", chromedp.Click(chromedp.ID("next")))
	s.shown("page 2", `location.hash.includes('page=2') && !!document.getElementById('total')`)
	firstRow("page 2", "q=liquidator&state=NSW&page=2")
	s.run("sort oldest first", chromedp.SetValue(chromedp.ID("sort"), "published_asc"), chromedp.Click(chromedp.ID("go")))
	s.shown("oldest first", `location.hash.includes('sort=published_asc') && !location.hash.includes('page=') && !!document.getElementById('total')`)
	firstRow("oldest first", "q=liquidator&state=NSW&sort=published_asc")
}

// company: opens the first result's company; the notice count and the
// timeline are the API's.
func (s *session) company(a *apiClient) {
	s.t.Helper()
	var href string
	s.eval(`document.querySelector('table.results tbody tr a[href^="#/company/"]').getAttribute('href')`, &href)
	id := strings.TrimPrefix(href, "#/company/")
	s.run("open the company", chromedp.Click(chromedp.CSS(`table.results tbody tr a[href^="#/company/"]`)))
	s.shown("the company page", `!!document.getElementById('company-name')`)
	var c struct {
		Name        string `json:"name"`
		NoticeCount int    `json:"notice_count"`
		Register    *struct {
			FormerNames []string `json:"former_names"`
		} `json:"register"`
	}
	a.getJSON("/v1/companies/"+id, &c)
	var name, count string
	var events, former int
	s.eval(`document.getElementById('company-name').textContent`, &name)
	s.eval(`document.getElementById('notice-count').dataset.count`, &count)
	s.eval(`document.querySelectorAll('.timeline .event').length`, &events)
	s.eval(`document.querySelectorAll('#former-names li').length`, &former)
	if name != c.Name || count != fmt.Sprint(c.NoticeCount) || events != c.NoticeCount || c.NoticeCount == 0 {
		s.t.Errorf("company %s: the console shows %q with %s notices and %d on the timeline; the API says %q with %d", id, name, count, events, c.Name, c.NoticeCount)
	}
	if c.Register != nil && former != len(c.Register.FormerNames) {
		s.t.Errorf("company %s: %d former names shown, the register has %d", id, former, len(c.Register.FormerNames))
	}
	s.shot("company")
	s.accessible("the company page")
}

// stats: a range from 18 months back to 5 months ahead; one bar per month
// of the range, the counts the API's, the future months shown as zero.
func (s *session) stats(a *apiClient) {
	s.t.Helper()
	now := time.Now().UTC()
	first := time.Date(now.Year(), now.Month()-18, 1, 0, 0, 0, 0, time.UTC)
	last := time.Date(now.Year(), now.Month()+6, 0, 0, 0, 0, 0, time.UTC) // the end of the 5th month ahead
	var want []string
	for m := first; !m.After(last); m = m.AddDate(0, 1, 0) {
		want = append(want, m.Format("2006-01"))
	}
	from, to := first.Format("2006-01-02"), last.Format("2006-01-02")
	s.go_("#/stats?from=" + from + "&to=" + to)
	s.shown("the month chart", `!!document.querySelector('svg.months') && location.hash.startsWith('#/stats')`)
	var bars []struct {
		Key   string `json:"key"`
		Count string `json:"count"`
	}
	s.eval(`[...document.querySelectorAll('svg.months g.bar')].map(g => ({key: g.dataset.key, count: g.dataset.count}))`, &bars)
	var st struct {
		Data []struct {
			Key   string `json:"key"`
			Count int    `json:"count"`
		} `json:"data"`
	}
	a.getJSON("/v1/stats?group_by=month&from="+from+"&to="+to, &st)
	if len(bars) != len(want) || len(st.Data) != len(want) {
		s.t.Fatalf("%s to %s: the chart has %d bars and the API %d months; the range has %d", from, to, len(bars), len(st.Data), len(want))
	}
	zeros := 0
	for i, b := range bars {
		if b.Key != want[i] || b.Count != fmt.Sprint(st.Data[i].Count) {
			s.t.Errorf("bar %d is %s=%s; the API says %s=%d", i, b.Key, b.Count, st.Data[i].Key, st.Data[i].Count)
		}
		if b.Count == "0" {
			zeros++
		}
	}
	if zeros < 5 {
		s.t.Errorf("%d zero months shown; the 5 months ahead have no notices and must be shown as 0", zeros)
	}
	var states, purposes int
	s.eval(`document.querySelectorAll('ol.hbars')[0].querySelectorAll('li.bar').length`, &states)
	s.eval(`document.querySelectorAll('ol.hbars')[1].querySelectorAll('li.bar').length`, &purposes)
	var byState, byPurpose struct {
		Data []json.RawMessage `json:"data"`
	}
	a.getJSON("/v1/stats?group_by=state&from="+from+"&to="+to, &byState)
	a.getJSON("/v1/stats?group_by=notice_purpose&from="+from+"&to="+to, &byPurpose)
	if states != len(byState.Data) || purposes != len(byPurpose.Data) || states == 0 {
		s.t.Errorf("%d state bars and %d purpose bars; the API has %d and %d", states, purposes, len(byState.Data), len(byPurpose.Data))
	}
	// A taller window for this screenshot: the month chart and the bars by state and purpose.
	s.run("a taller window", chromedp.EmulateViewport(1280, 1320))
	s.shot("stats")
	s.run("the window back", chromedp.EmulateViewport(1280, 900))
	s.accessible("the charts")
}

// screen: uploads a 1,000-identifier CSV (an acn column), sees the counts
// the API gives for the same list, downloads the result: the bytes the API
// answers.
func (s *session) screen(a *apiClient, d *testbin.Demo) {
	s.t.Helper()
	var page struct {
		Data []struct {
			ACN *string `json:"acn"`
		} `json:"data"`
	}
	a.getJSON("/v1/notices?limit=100&include_deregistration=true", &page)
	ids := []string{d.Vars["ACN"], strings.ReplaceAll(d.Vars["ABN"], " ", ""), d.Vars["QUIET"]}
	for _, n := range page.Data {
		if n.ACN != nil {
			ids = append(ids, *n.ACN)
		}
	}
	seen := map[string]bool{}
	var list []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			list = append(list, id)
		}
	}
	for i := 0; len(list) < 1000; i++ { // well-formed ACNs the sample does not hold
		id := fmt.Sprintf("9%08d", 7919*i%100000000)
		if !seen[id] {
			seen[id] = true
			list = append(list, id)
		}
	}
	csv := "acn,loan_ref\n"
	for i, id := range list {
		csv += fmt.Sprintf("%s,L%04d\n", id, i)
	}
	file := filepath.Join(s.t.TempDir(), "loanbook.csv")
	if err := os.WriteFile(file, []byte(csv), 0o644); err != nil {
		s.t.Fatal(err)
	}
	var counts struct {
		Counts struct {
			Submitted, Matched, Unmatched, Unresolved int
		} `json:"counts"`
	}
	body, _ := json.Marshal(map[string]any{"identifiers": list})
	a.postJSON("/v1/match", body, &counts)
	s.go_("#/screen")
	s.run("upload the loan book", chromedp.WaitVisible(chromedp.ID("file")), chromedp.SetUploadFiles(chromedp.ID("file"), []string{file}))
	s.wait("the file to load", `document.getElementById('file-info').textContent.includes('1,001 lines')`)
	s.shot("screen-upload")
	s.accessible("the screen form")
	s.run("screen", chromedp.Click(chromedp.ID("screen")))
	s.wait("the screen result", `document.getElementById('n-matched') || document.querySelector('form .alert')`)
	var alert string
	s.eval(`(document.querySelector('form .alert') || {}).textContent || ''`, &alert)
	if alert != "" {
		t := s.t
		t.Fatalf("screening the CSV file failed in the console (%s): %s", s.backend, alert)
	}
	var got map[string]string
	s.eval(`({matched: document.getElementById('n-matched').textContent, unmatched: document.getElementById('n-unmatched').textContent,
		unresolved: document.getElementById('n-unresolved').textContent, submitted: document.getElementById('n-submitted').textContent})`, &got)
	c := counts.Counts
	want := map[string]string{"matched": thousands(c.Matched), "unmatched": thousands(c.Unmatched), "unresolved": thousands(c.Unresolved), "submitted": thousands(c.Submitted)}
	for k, v := range want {
		if got[k] != v {
			s.t.Errorf("screen of 1,000: the console shows %s %s; the API's JSON answer counts %s", k, got[k], v)
		}
	}
	if c.Submitted != 1000 || c.Matched == 0 || c.Unresolved == 0 {
		s.t.Errorf("the screened list should have 1,000 identifiers with matched and unresolved ones: %+v", c)
	}
	s.shot("screen")
	s.accessible("the screen result")
	name, file2 := s.download("#download")
	want2 := a.post("/v1/match", "text/csv", "text/csv", []byte(csv))
	if name != "loanbook-result.csv" || !bytes.Equal(file2, want2) {
		s.t.Errorf("the download %q (%d bytes) is not the API's CSV answer to the same file (%d bytes)", name, len(file2), len(want2))
	}
	if lines := bytes.Count(file2, []byte("\n")); lines != 1001 {
		s.t.Errorf("the result CSV has %d lines; want a header and 1,000 rows", lines)
	}
}

// exportSearch: Export CSV on a search saves the API's CSV export of it.
func (s *session) exportSearch(a *apiClient) {
	s.t.Helper()
	s.go_("#/search?q=liquidator&state=VIC")
	s.shown("results in VIC", `location.hash.includes('state=VIC') && !!document.getElementById('export')`)
	name, got := s.download("#export")
	want := a.get("/v1/notices?q=liquidator&state=VIC", "text/csv")
	if !strings.HasSuffix(name, ".csv") || !bytes.Equal(got, want) {
		s.t.Errorf("Export CSV saved %q (%d bytes); the API's export is %d bytes", name, len(got), len(want))
	}
}

// watches: with the read key the section says the account key is needed;
// with the account key a watch made through the API is listed, with its
// matches (the API's) and its delivery records.
func (s *session) watches(a *apiClient, d *testbin.Demo) {
	s.t.Helper()
	s.go_("#/watches")
	s.shown("the account-key message", `document.getElementById('main').textContent.includes('account_required')`)
	acct := &apiClient{t: s.t, base: a.base, key: d.Vars["ACCT"]}
	var w struct {
		ID string `json:"id"`
	}
	body, _ := json.Marshal(map[string]any{"name": "Loan book (console test)", "identifiers": []string{d.Vars["ACN"]}})
	acct.postJSON("/v1/watches", body, &w)
	var m struct {
		Data []json.RawMessage `json:"data"`
	}
	acct.getJSON("/v1/watches/"+w.ID+"/matches?since=0&limit=100", &m)
	s.run("sign out", chromedp.Click(chromedp.ID("signout")))
	s.signIn(d.Vars["ACCT"], "account")
	s.go_("#/watches")
	s.shown("the watch list", `!!document.querySelector('a[href="#/watches/`+w.ID+`"]')`)
	s.accessible("the watch list")
	s.run("open the watch", chromedp.Click(chromedp.CSS(`a[href="#/watches/`+w.ID+`"]`)))
	s.shown("the watch's matches", `!!document.getElementById('m-title') && document.querySelectorAll('section table.results tbody tr').length > 0`)
	var rows int
	s.eval(`document.querySelector('section table.results').querySelectorAll('tbody tr').length`, &rows)
	if rows != len(m.Data) || rows == 0 {
		s.t.Errorf("the watch shows %d matches; the API has %d (the demo's $ACN has notices)", rows, len(m.Data))
	}
	var deliveries string
	s.eval(`document.getElementById('d-title').parentElement.textContent`, &deliveries)
	if !strings.Contains(deliveries, "No webhook registered") {
		s.t.Errorf("the watch has no webhook; its deliveries section says %q", deliveries)
	}
	s.shot("watch")
	s.accessible("a watch")
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// apiClient calls the API directly, for the numbers the console must show.
type apiClient struct {
	t         *testing.T
	base, key string
}

func (a *apiClient) do(method, path, contentType, accept string, body []byte) []byte {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, bytes.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("X-API-Key", a.key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode/100 != 2 {
		err = errors.New(resp.Status)
	}
	if err != nil {
		a.t.Fatalf("%s %s: %v\n%s", method, path, err, out)
	}
	return out
}

func (a *apiClient) get(path, accept string) []byte {
	return a.do(http.MethodGet, path, "", accept, nil)
}

func (a *apiClient) post(path, contentType, accept string, body []byte) []byte {
	return a.do(http.MethodPost, path, contentType, accept, body)
}

func (a *apiClient) getJSON(path string, v any) {
	a.t.Helper()
	if err := json.Unmarshal(a.get(path, ""), v); err != nil {
		a.t.Fatalf("GET %s: %v", path, err)
	}
}

func (a *apiClient) postJSON(path string, body []byte, v any) {
	a.t.Helper()
	if err := json.Unmarshal(a.post(path, "application/json", "", body), v); err != nil {
		a.t.Fatalf("POST %s: %v", path, err)
	}
}
