package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLI runs the commands in-process against a real data dir: help,
// unknown commands, the ingest exit codes of API.md (0 all loaded, 3 some
// lines rejected, 1 failure) and the accounts commands.
func TestCLI(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("NOTICES_DATA_DIR", filepath.Join(dir, "data"))
	t.Setenv("NOTICES_SECRET_KEY", "")
	good := filepath.Join(dir, "good.jsonl")
	bad := filepath.Join(dir, "bad.jsonl")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(good, `{"source_id":"A1","published_at":"2026-11-20T01:00:00Z","acn":"004085616","company_name":"ACME PTY LTD","notice_purpose":"Appointment","state":"VIC"}`+"\n")
	write(bad, `{"source_id":"A2","published_at":"2026-11-20","company_name":"B PTY LTD"}`+"\nnot json\n")

	tests := []struct {
		name     string
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{"help", []string{"--help"}, 0, "Commands:", ""},
		{"help lists the settings by group, secrets marked", []string{"--help"}, 0,
			"\nWebhooks:\n  NOTICES_WEBHOOKS                     on/off: webhook registration and the delivery worker [on]\n" +
				"  NOTICES_SECRET_KEY                   base64 of 32 random bytes (openssl rand -base64 32) encrypting webhook secrets at rest; serve and worker need it while webhooks are on [none] (secret)\n" +
				"  NOTICES_SECRET_KEY_FILE              file holding NOTICES_SECRET_KEY", ""},
		{"no command", nil, 2, "", "Commands:"},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate". Run 'noticesd --help'`},
		{"command help", []string{"ingest", "--help"}, 0, "Exit status: 0 every line loaded, 3 some lines were rejected, 1 failure,", ""},
		{"ingest without args", []string{"ingest"}, 2, "", "ingest needs"},
		{"ingest negative batch", []string{"ingest", "notices", "--batch", "-5", good}, 2, "", "--batch -5 is negative"},
		{"ingest stdin twice", []string{"ingest", "notices", "-", "-"}, 2, "", "standard input (-) is given more than once"},
		{"subcommand help after args", []string{"ingest", "notices", "--help"}, 0, "Usage: noticesd ingest", ""},
		{"help COMMAND", []string{"help", "ingest"}, 0, "Usage: noticesd ingest", ""},
		{"unknown flag", []string{"ingest", "notices", "--bogus", good}, 2, "", "flag provided but not defined: -bogus"},
		{"unknown flag after args", []string{"accounts", "list", "--bogus"}, 2, "", "-bogus"},
		{"stray argument", []string{"serve", "now"}, 2, "", `serve takes no arguments, got "now"`},
		{"unknown flag of worker", []string{"worker", "--bogus"}, 2, "", "-bogus"},
		{"unknown flag of queue", []string{"queue", "--bogus"}, 2, "", "-bogus"},
		{"unknown flag of reindex", []string{"reindex", "--bogus"}, 2, "", "-bogus"},
		{"stray argument to worker", []string{"worker", "now"}, 2, "", `worker takes no arguments, got "now"`},
		{"stray argument to queue", []string{"queue", "now"}, 2, "", `queue takes no arguments, got "now"`},
		{"flag after a stray argument", []string{"reindex", "now", "--quiet"}, 2, "", `reindex takes no arguments, got "now"`},
		{"unknown accounts command", []string{"accounts", "frob"}, 2, "", `unknown accounts command "frob"`},
		{"version", []string{"version"}, 0, "backend:  embedded available", ""},
		{"--version", []string{"--version"}, 0, "tags:     sqlite_fts5", ""},
		{"ingest all good", []string{"ingest", "notices", "--quiet", good}, 0, "inserted 1", ""},
		{"ingest again updates", []string{"ingest", "notices", good}, 0, "inserted 0 updated 1", ""},
		{"ingest with a broken line", []string{"ingest", "notices", bad}, 3, "rejected 1", "bad.jsonl:2:"},
		{"ingest a missing file", []string{"ingest", "notices", filepath.Join(dir, "missing.jsonl")}, 1, "", "missing.jsonl"},
		{"unknown plan", []string{"accounts", "create", "--name", "x", "--plan", "gold"}, 2, "", "enterprise, free, standard"},
		{"subscription needs a value", []string{"accounts", "subscription", "acc_x"}, 2, "", "--active=true"},
		{"collect needs a source", []string{"collect", "--once"}, 2, "", "NOTICES_SOURCE is not set"},
		{"serve with webhooks and no key", []string{"serve"}, 2, "", "openssl rand -base64 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.inStdout) {
				t.Errorf("stdout %q does not contain %q", stdout.String(), tt.inStdout)
			}
			if !strings.Contains(stderr.String(), tt.inStderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.inStderr)
			}
		})
	}

	t.Run("accounts create, list, rotate, lapse", func(t *testing.T) {
		var out, errb bytes.Buffer
		if code := run([]string{"accounts", "create", "--name", "Acme Credit", "--plan", "free"}, &out, &errb); code != 0 {
			t.Fatalf("create: exit %d: %s", code, errb.String())
		}
		var created struct {
			AccountID  string `json:"account_id"`
			AccountKey string `json:"account_key"`
			ReadKey    string `json:"read_key"`
		}
		if err := json.Unmarshal(out.Bytes(), &created); err != nil {
			t.Fatalf("create printed %q, not JSON: %v", out.String(), err)
		}
		if !strings.HasPrefix(created.AccountID, "acc_") || !strings.HasPrefix(created.AccountKey, "nk_acct_") || !strings.HasPrefix(created.ReadKey, "nk_read_") {
			t.Fatalf("created %+v", created)
		}
		out.Reset()
		if code := run([]string{"accounts", "list"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "Acme Credit") {
			t.Fatalf("list: exit %d: %s", code, out.String())
		}
		if strings.Contains(out.String(), created.AccountKey) {
			t.Fatal("list shows a key; keys are shown once")
		}
		out.Reset()
		if code := run([]string{"accounts", "rotate-keys", created.AccountID}, &out, &errb); code != 0 || strings.Contains(out.String(), created.AccountKey) {
			t.Fatalf("rotate-keys: exit %d: %s", code, out.String())
		}
		out.Reset()
		if code := run([]string{"accounts", "subscription", created.AccountID, "--active=false"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "active=false") {
			t.Fatalf("subscription: exit %d: %s %s", code, out.String(), errb.String())
		}
	})
}

// TestBadSettingIsUsageError checks that a wrong NOTICES_* value exits 2 and
// names the variable.
func TestBadSettingIsUsageError(t *testing.T) {
	t.Setenv("NOTICES_DATA_DIR", t.TempDir())
	t.Setenv("NOTICES_LOG_FORMAT", "yaml")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"accounts", "list"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "NOTICES_LOG_FORMAT") {
		t.Fatalf("exit %d, stderr %q; want 2 naming NOTICES_LOG_FORMAT", code, stderr.String())
	}
}

// TestParseArgs checks flags among positional arguments and "--".
func TestParseArgs(t *testing.T) {
	tests := []struct {
		args      []string
		wantPos   string
		wantQuiet bool
	}{
		{[]string{"notices", "--quiet", "a"}, "notices a", true},
		{[]string{"--quiet", "notices", "a", "b"}, "notices a b", true},
		{[]string{"notices", "-", "--quiet"}, "notices -", true},
		{[]string{"notices", "--", "--quiet"}, "notices --quiet", false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := newFlags("x", "x", "", io.Discard)
			quiet := fs.Bool("quiet", false, "")
			pos, err := parseArgs(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(pos, " "); got != tt.wantPos || *quiet != tt.wantQuiet {
				t.Fatalf("positional %q quiet %v, want %q %v", got, *quiet, tt.wantPos, tt.wantQuiet)
			}
		})
	}
}

// TestBuildWithoutFTS5 builds the binary without the sqlite_fts5 tag and
// with a commit set by -ldflags: 'version' reports the release, the commit
// and the missing backend, and a command that
// opens the store refuses, names the tag and creates nothing.
func TestBuildWithoutFTS5(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not building a second binary without the sqlite_fts5 tag")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "noticesd-notag")
	build := exec.Command("go", "build", "-ldflags", "-X main.commit=feedface", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build without tags: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("version: %v\n%s", err, out)
	}
	for _, want := range []string{"noticesd " + Version + "\n", "commit:   feedface", "backend:  embedded unavailable (built without -tags sqlite_fts5)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("version output %q lacks %q", out, want)
		}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(bin, "accounts", "list")
	cmd.Env = append(os.Environ(), "NOTICES_DATA_DIR="+data)
	out, err = cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("accounts list without the tag: %v, want exit 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "-tags sqlite_fts5") {
		t.Errorf("message %q does not name the build tag", out)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the data dir %s was created (stat: %v); nothing may be created", data, err)
	}
	serve := exec.Command(bin, "serve")
	serve.Env = append(os.Environ(), "NOTICES_DATA_DIR="+data, "NOTICES_ADDR=127.0.0.1:0", "NOTICES_WEBHOOKS=off")
	out, err = serve.CombinedOutput()
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "-tags sqlite_fts5") {
		t.Fatalf("serve without the tag: %v, want exit 1 naming the tag\n%s", err, out)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("serve created the data dir %s (stat: %v); nothing may be created", data, err)
	}
}

// TestBadSettingExitsUsage: a wrong NOTICES_* value stops the command with
// exit 2, naming the variable, before anything is done.
func TestBadSettingExitsUsage(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, env, value string }{
		{"listen address without a port", "NOTICES_ADDR", "notanaddr"},
		{"listen port out of range", "NOTICES_ADDR", ":70000"},
		{"CA file missing", "NOTICES_WEBHOOK_CA_FILE", filepath.Join(dir, "missing.pem")},
		{"CA file without a certificate", "NOTICES_WEBHOOK_CA_FILE", notPEM},
		{"source directory missing", "NOTICES_SOURCE", filepath.Join(dir, "no-such-dir")},
		{"source of another scheme", "NOTICES_SOURCE", "ftp://feed.example.com/notices"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NOTICES_DATA_DIR", filepath.Join(dir, "data"))
			t.Setenv(tt.env, tt.value)
			var stdout, stderr bytes.Buffer
			if code := run([]string{"accounts", "list"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.env) {
				t.Fatalf("exit %d, stderr %q; want 2 naming %s", code, stderr.String(), tt.env)
			}
			if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
				t.Fatalf("the data directory was created (%v) although the setting was refused", err)
			}
		})
	}
}
