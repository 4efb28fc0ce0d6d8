// Package install checks that the module installs the way the README and
// docs/operating.md say it will once published:
// `go install -tags sqlite_fts5 <module path>/cmd/noticesd@latest`.
//
// The module is not fetched from its public host (the test must not depend on
// a network or on a release having been published). Instead the committed tree
// (HEAD, exactly what a tag would publish; `git archive`) is packed as a
// module zip with golang.org/x/mod/zip and served from a file:// module proxy in front of the
// normal one, at a pseudo-version made from HEAD's commit. `go install` then
// resolves `@latest` through the same protocol it would use against the real
// host, builds with the documented tag, and the binary must run: `version`
// must report that version and the embedded backend, and the binary must
// ingest a small generated sample into its SQLite store (full-text index included).
package install

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// git runs git in dir and returns its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %s: %v (this test packs the committed tree, so it needs the git checkout)", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// moduleProxy writes a file:// module proxy serving HEAD of the repository at
// root as the module's only (and so latest) version, and returns the proxy
// directory, the module path and the version.
func moduleProxy(t *testing.T, root string) (dir, path, version string) {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	path = modfile.ModulePath(gomod)
	if err := module.CheckPath(path); err != nil {
		t.Fatalf("module path %q is not one `go install PATH@latest` accepts: %v", path, err)
	}
	// The go.mod that a proxy serves is the committed one.
	committedMod := git(t, root, "show", "HEAD:go.mod") + "\n"
	rev := git(t, root, "rev-parse", "HEAD")
	unix := git(t, root, "show", "-s", "--format=%ct", "HEAD")
	var secs int64
	if err := json.Unmarshal([]byte(unix), &secs); err != nil {
		t.Fatalf("commit time %q: %v", unix, err)
	}
	when := time.Unix(secs, 0).UTC()
	version = module.PseudoVersion("v0", "", when, rev[:12])

	dir = t.TempDir()
	escaped, err := module.EscapePath(path)
	if err != nil {
		t.Fatal(err)
	}
	vdir := filepath.Join(dir, escaped, "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": version, "Time": when.Format(time.RFC3339)})
	write := func(name string, data []byte) {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(vdir, "list"), nil) // no tagged release: @latest answers
	write(filepath.Join(dir, escaped, "@latest"), info)
	write(filepath.Join(vdir, version+".info"), info)
	write(filepath.Join(vdir, version+".mod"), []byte(committedMod))
	zf, err := os.Create(filepath.Join(vdir, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	// The committed tree, exactly: git archive of HEAD (also from a git
	// worktree, where zip.CreateFromVCS does not find the repository).
	tree := t.TempDir()
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, rev, tree)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", rev, err, out)
	}
	if err := zip.CreateFromDir(zf, module.Version{Path: path, Version: version}, tree); err != nil {
		t.Fatalf("pack the committed tree as module %s@%s: %v", path, version, err)
	}
	if err := zf.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, path, version
}

// env is the environment with the given variables replaced.
func env(set map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	return out
}

// run runs a command and returns its combined output, failing t on error.
func run(t *testing.T, e []string, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Dir = e, dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func TestGoInstallLatest(t *testing.T) {
	root := git(t, ".", "rev-parse", "--show-toplevel")
	proxy, path, version := moduleProxy(t, root)

	upstream, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		t.Fatal(err)
	}
	gobin := t.TempDir()
	work := t.TempDir() // outside the module, as a user's shell would be
	e := env(map[string]string{
		"GOPROXY":     "file://" + filepath.ToSlash(proxy) + "," + strings.TrimSpace(string(upstream)),
		"GONOSUMDB":   path, // the checksum database cannot know a version made here
		"GOFLAGS":     "",
		"GOBIN":       gobin,
		"CGO_ENABLED": "1",
	})
	t.Logf("go install -tags sqlite_fts5 %s/cmd/noticesd@latest (serving %s from a file proxy)", path, version)
	run(t, e, work, "go", "install", "-tags", "sqlite_fts5", path+"/cmd/noticesd@latest")
	bin := filepath.Join(gobin, "noticesd")

	t.Run("version", func(t *testing.T) {
		out := run(t, e, work, bin, "version")
		t.Logf("installed binary: %s", out)
		for _, want := range []string{version, "sqlite_fts5", "embedded"} {
			if !strings.Contains(out, want) {
				t.Errorf("noticesd version does not mention %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "embedded unavailable") {
			t.Errorf("the installed binary cannot run the embedded backend:\n%s", out)
		}
	})

	t.Run("ingest", func(t *testing.T) {
		data := t.TempDir()
		e := append(e, "NOTICES_DATA_DIR="+filepath.Join(data, "db"))
		run(t, e, work, bin, "sample", "--notices", "200", "--companies", "400", "--now", "2026-11-20", "--out", data)
		run(t, e, work, bin, "ingest", "register", "--quiet", filepath.Join(data, "company_register.tsv"))
		out := run(t, e, work, bin, "ingest", "notices", "--quiet", filepath.Join(data, "notices.jsonl.gz"))
		if !strings.Contains(out, "inserted 200 ") {
			t.Errorf("ingest of 200 sample notices (full-text index included) did not insert 200:\n%s", out)
		}
	})
}
