package scalee2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

// TestBackupRestoreAsDocumented runs docs/operating.md's Elasticsearch
// backup and restore commands ("Backups") as written, on a namespace loaded
// with `noticesd ingest`: register the repository, snapshot the namespace,
// delete its indices one by one, restore. Afterwards each alias is on one
// index holding every document it held, and a re-ingest of the same notices
// finds every one of them (all updated, none new), so the restored indices
// and Redis's notice_seq records agree.
func TestBackupRestoreAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and takes a snapshot")
	}
	bin := testbin.Build(t)
	esURL, redisURL, ns := testservers.Elasticsearch(t), testservers.Redis(t), testservers.Namespace(t)
	dir := t.TempDir()
	env := []string{
		"NOTICES_BACKEND=scale",
		"NOTICES_ELASTICSEARCH_URL=" + esURL,
		"NOTICES_REDIS_URL=" + redisURL,
		"NOTICES_NAMESPACE=" + ns,
		"NOTICES_SECRET_KEY=" + config.DevelopmentSecretKey,
		"NOTICES_DATA_DIR=" + filepath.Join(dir, "data"),
	}
	const notices = 1500
	sample := filepath.Join(dir, "sample")
	testbin.Run(t, bin, env, "sample", "--notices", fmt.Sprint(notices), "--companies", "3000", "--out", sample)
	testbin.Run(t, bin, env, "ingest", "register", filepath.Join(sample, "company_register.tsv"))
	testbin.Run(t, bin, env, "ingest", "notices", filepath.Join(sample, "notices.jsonl.gz"))

	client := &http.Client{Timeout: 30 * time.Second}
	es := func(path string, v any) {
		t.Helper()
		resp, err := client.Get(esURL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d %s", path, resp.StatusCode, body)
		}
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
	count := func(alias string) int {
		t.Helper()
		var c struct {
			Count int `json:"count"`
		}
		es("/"+alias+"/_count", &c)
		return c.Count
	}
	aliases := func() map[string][]string {
		t.Helper()
		var rows []struct{ Alias, Index string }
		es("/_cat/aliases/"+ns+"-*?format=json&h=alias,index", &rows)
		m := map[string][]string{}
		for _, r := range rows {
			m[r.Alias] = append(m[r.Alias], r.Index)
		}
		return m
	}
	noticeDocs, registerDocs := count(ns+"-notices"), count(ns+"-register")
	if noticeDocs != notices || registerDocs == 0 {
		t.Fatalf("loaded %d notice documents (want %d) and %d register documents", noticeDocs, notices, registerDocs)
	}
	before := aliases()

	// The node's path.repo (scripts/services.sh and the Docker harness set one).
	var settings struct {
		Nodes map[string]struct {
			Settings struct {
				Path struct {
					Repo any `json:"repo"`
				} `json:"path"`
			} `json:"settings"`
		} `json:"nodes"`
	}
	es("/_nodes/settings?filter_path=nodes.*.settings.path.repo", &settings)
	var repo string
	for _, n := range settings.Nodes {
		switch r := n.Settings.Path.Repo.(type) {
		case string:
			repo = r
		case []any:
			if len(r) > 0 {
				repo, _ = r[0].(string)
			}
		}
	}
	if repo == "" {
		t.Fatalf("the Elasticsearch node at %s has no path.repo, so it cannot take snapshots: start it with path.repo set (scripts/services.sh does)", esURL)
	}

	// The documented commands, with this node, namespace and repository
	// directory in the lines the reader edits, and the snapshot just taken
	// where the restore says <snapshot>.
	blocks := testbin.ShellBlocks(t, "docs/operating.md", "### Backups")
	if len(blocks) != 3 {
		t.Fatalf(`docs/operating.md's "Backups" has %d shell blocks; this test runs its three (snapshot, delete, restore)`, len(blocks))
	}
	edit := func(block, pattern, with string) string {
		t.Helper()
		re := regexp.MustCompile(pattern)
		if n := len(re.FindAllString(block, -1)); n != 1 {
			t.Fatalf("docs/operating.md's backup commands: %d lines match %s, want 1:\n%s", n, pattern, block)
		}
		return re.ReplaceAllLiteralString(block, with)
	}
	snapshot := edit(blocks[0], `(?m)^ES=\S+ NS=\S+$`, "ES="+esURL+" NS="+ns)
	snapshot = edit(snapshot, `(?m)^REPO_DIR=\S+`, "REPO_DIR="+filepath.Join(repo, ns))
	restore := strings.ReplaceAll(blocks[2], "<snapshot>", "$SNAPSHOT")
	script := snapshot + "\n" +
		`SNAPSHOT=$(command curl -s "$ES/_cat/snapshots/backups?h=id" | grep "^$NS-" | tail -1)` + "\n" +
		blocks[1] + "\n" + restore + "\n"
	t.Cleanup(func() {
		for _, path := range []string{"/_snapshot/backups/" + ns + "-*", "/_snapshot/backups"} {
			req, _ := http.NewRequest(http.MethodDelete, esURL+path, nil)
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	})
	out, ran := testbin.RunShell(t, script)
	if want := testbin.CurlCalls(blocks); ran < want {
		t.Fatalf("the backup commands ran %d curl calls, fewer than the %d written", ran, want)
	}

	after := aliases()
	for alias, indices := range before {
		if got := after[alias]; len(got) != 1 || got[0] != indices[0] {
			t.Errorf("after the restore %s is on %v, want %v as before", alias, got, indices)
		}
	}
	if n, r := count(ns+"-notices"), count(ns+"-register"); n != noticeDocs || r != registerDocs {
		t.Errorf("after the restore: %d notice and %d register documents, want %d and %d", n, r, noticeDocs, registerDocs)
	}
	sum := string(testbin.Run(t, bin, env, "ingest", "notices", filepath.Join(sample, "notices.jsonl.gz")))
	if want := fmt.Sprintf("read %d inserted 0 updated %d rejected 0", notices, notices); !strings.Contains(sum, want) {
		t.Errorf("re-ingest after the restore: %q, want %q", sum, want)
	}
	if t.Failed() {
		t.Logf("the commands' output:\n%s", out)
	}
}
