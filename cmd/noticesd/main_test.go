package main

import (
	"bytes"
	"encoding/json"
	"os"
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
		{"no command", nil, 2, "Commands:", ""},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"command help", []string{"ingest", "--help"}, 0, "", "Exit status: 0 every line loaded, 3 some lines were rejected, 1 failure."},
		{"ingest without args", []string{"ingest"}, 2, "", "ingest needs"},
		{"ingest all good", []string{"ingest", "notices", good}, 0, "inserted 1", ""},
		{"ingest again updates", []string{"ingest", "notices", good}, 0, "inserted 0 updated 1", ""},
		{"ingest with a broken line", []string{"ingest", "notices", bad}, 3, "rejected 1", "bad.jsonl:2:"},
		{"ingest a missing file", []string{"ingest", "notices", filepath.Join(dir, "missing.jsonl")}, 1, "", "missing.jsonl"},
		{"unknown plan", []string{"accounts", "create", "--name", "x", "--plan", "gold"}, 1, "", "enterprise, free, standard"},
		{"subscription needs a value", []string{"accounts", "subscription", "acc_x"}, 2, "", "--active=true"},
		{"collect needs a source", []string{"collect", "--once"}, 2, "", "NOTICES_SOURCE is not set"},
		{"serve with webhooks and no key", []string{"serve"}, 1, "", "openssl rand -base64 32"},
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
