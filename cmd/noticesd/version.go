package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/noticesd/noticesd/internal/store/sqlite"
)

// Version is the release of noticesd (SemVer): the one place it is set.
// 'noticesd version' and GET /health print it with the commit.
const Version = "0.9.0"

// commit is set at link time (make build does, from git rev-parse HEAD):
//
//	go build -tags sqlite_fts5 -ldflags "-X main.commit=abc1234" ./cmd/noticesd
//
// Left empty, it comes from the VCS stamp Go writes into the binary
// (runtime/debug.ReadBuildInfo), else "unknown".
var commit string

// backend is one storage backend and whether this binary can run it.
type backend struct {
	name      string
	available bool
	why       string // why not, when unavailable
}

// backends lists the storage backends of NOTICES_BACKEND: adding one is one
// line here.
func backends() []backend {
	return []backend{
		{"embedded", sqlite.FTS5, "built without -tags " + sqlite.BuildTag},
		{"scale", true, ""},
	}
}

// buildInfo is what 'noticesd version' prints.
type buildInfo struct {
	Version, Commit, Go string
	// Module is the module version go install recorded (a release tag or
	// a pseudo-version naming the commit); "" in a build from a checkout.
	Module   string
	Tags     []string
	Modified bool
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: Version, Commit: commit, Go: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			b.Module = v
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if b.Commit == "" {
					b.Commit = s.Value
				}
			case "vcs.modified":
				b.Modified = s.Value == "true"
			case "-tags":
				b.Tags = strings.Split(s.Value, ",")
			}
		}
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "version (or --version)", "Print the version, the commit, the build tags and the storage backends this binary can run.", stderr)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	b := readBuildInfo()
	commit := b.Commit
	if b.Modified {
		commit += " (modified)"
	}
	tags := strings.Join(b.Tags, ",")
	if tags == "" {
		tags = "none"
	}
	fmt.Fprintf(stdout, "noticesd %s\ncommit:   %s\n", b.Version, commit)
	if b.Module != "" {
		fmt.Fprintf(stdout, "module:   %s\n", b.Module)
	}
	fmt.Fprintf(stdout, "go:       %s\ntags:     %s\n", b.Go, tags)
	for _, be := range backends() {
		state := "available"
		if !be.available {
			state = "unavailable (" + be.why + ")"
		}
		fmt.Fprintf(stdout, "backend:  %s %s\n", be.name, state)
	}
	return nil
}
