package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/test/testbin"
)

// besideNotices is how many notices TestIngestBesideServe loads: three
// transactions at the default 50,000 a batch (ingest.DefaultNoticeBatch).
const besideNotices = 120000

// TestIngestBesideServe loads notices with a separate `noticesd ingest`
// while `serve` runs on the same data directory and a client keeps creating
// and deleting watches. Each of the load's transactions holds SQLite's write
// lock for seconds; serve's writes must wait for it (SQLite's busy timeout)
// and succeed, and every notice must be searchable through serve afterwards.
func TestIngestBesideServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := testbin.Build(t)
	dir := t.TempDir()
	env := []string{
		"NOTICES_DATA_DIR=" + filepath.Join(dir, "data"),
		"NOTICES_SOURCE=none",
		"NOTICES_SECRET_KEY=" + config.DevelopmentSecretKey,
	}
	acct := createAccount(t, bin, env, "Beside", "enterprise")
	sample := filepath.Join(dir, "sample")
	testbin.Run(t, bin, env, "sample", "--notices", fmt.Sprint(besideNotices), "--companies", "2000", "--out", sample)
	srv := startServe(t, bin, env)

	load := exec.Command(bin, "ingest", "notices", "--quiet", filepath.Join(sample, "notices.jsonl.gz"))
	load.Env = append(os.Environ(), env...)
	var out, stderr bytes.Buffer
	load.Stdout, load.Stderr = &out, &stderr
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- load.Wait() }()
	t.Cleanup(func() { _ = load.Process.Kill() }) // a failed write must not leave the load running

	// Writes on serve until the load ends: each must succeed, however long
	// it waits for the load's transaction.
	var pairs int
	var longest time.Duration
	var loadErr error
writing:
	for i := 0; ; i++ {
		select {
		case loadErr = <-done:
			break writing
		default:
		}
		var w struct {
			ID string `json:"id"`
		}
		t0 := time.Now()
		call(t, "POST", srv.base+"/v1/watches", acct.AccountKey, map[string]any{"name": fmt.Sprint("beside ", i), "identifiers": []string{"000000019"}}, http.StatusCreated, &w)
		t1 := time.Now()
		call(t, "DELETE", srv.base+"/v1/watches/"+w.ID, acct.AccountKey, nil, http.StatusNoContent, nil)
		longest = max(longest, t1.Sub(t0), time.Since(t1))
		pairs++
		time.Sleep(100 * time.Millisecond)
	}
	if loadErr != nil {
		t.Fatalf("noticesd ingest: %v\nstdout: %s\nstderr: %s", loadErr, out.String(), stderr.String())
	}
	if want := fmt.Sprintf("inserted %d", besideNotices); !strings.Contains(out.String(), want) {
		t.Fatalf("noticesd ingest printed %q, want %q", out.String(), want)
	}
	// The load's three transactions take seconds; a loop that never met one
	// tested nothing.
	if pairs < 3 {
		t.Fatalf("only %d create/delete pairs ran during the load; the test needs the load to last longer", pairs)
	}
	t.Logf("%d watch create/delete pairs during the load; the longest write took %s", pairs, longest.Round(time.Millisecond))

	var page struct {
		Total int `json:"total"`
	}
	call(t, "GET", srv.base+"/v1/notices?limit=1&include_deregistration=true", acct.AccountKey, nil, http.StatusOK, &page)
	if page.Total != besideNotices {
		t.Fatalf("serve finds %d notices after the load, want %d", page.Total, besideNotices)
	}
}
