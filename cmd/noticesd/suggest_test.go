package main

import (
	"bytes"
	"testing"
)

// TestUnknownCommand: an unknown command is one line on stderr naming the
// nearest command, when one is near, and 'noticesd --help'; exit 2, and no
// usage text.
func TestUnknownCommand(t *testing.T) {
	for _, tt := range []struct {
		name, arg, want string
	}{
		{"one letter short", "serv", `noticesd: unknown command "serv"; did you mean "serve"? Run 'noticesd --help' for the commands.`},
		{"transposed", "ingset", `noticesd: unknown command "ingset"; did you mean "ingest"? Run 'noticesd --help' for the commands.`},
		{"one letter long", "versions", `noticesd: unknown command "versions"; did you mean "version"? Run 'noticesd --help' for the commands.`},
		{"unique prefix", "acc", `noticesd: unknown command "acc"; did you mean "accounts"? Run 'noticesd --help' for the commands.`},
		{"upper case", "DEMO", `noticesd: unknown command "DEMO"; did you mean "demo"? Run 'noticesd --help' for the commands.`},
		{"ambiguous prefix falls back to edits", "s", `noticesd: unknown command "s". Run 'noticesd --help' for the commands.`},
		{"nothing near", "frobnicate", `noticesd: unknown command "frobnicate". Run 'noticesd --help' for the commands.`},
		{"help of a misspelt command", "help serv", `noticesd: unknown command "serv"; did you mean "serve"? Run 'noticesd --help' for the commands.`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{tt.arg}
			if tt.arg == "help serv" {
				args = []string{"help", "serv"}
			}
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if got := stderr.String(); got != tt.want+"\n" {
				t.Errorf("stderr\n%q\nwant\n%q", got, tt.want+"\n")
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

// TestEditDistance: the Levenshtein distance behind the suggestion.
func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "serve", 5}, {"serve", "serve", 0}, {"serv", "serve", 1},
		{"ingset", "ingest", 2}, {"kitten", "sitting", 3}, {"worker", "queue", 5},
	} {
		t.Run(tt.a+"/"+tt.b, func(t *testing.T) {
			if got := editDistance(tt.a, tt.b); got != tt.want {
				t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if got := editDistance(tt.b, tt.a); got != tt.want {
				t.Errorf("editDistance(%q, %q) = %d, want %d", tt.b, tt.a, got, tt.want)
			}
		})
	}
}
