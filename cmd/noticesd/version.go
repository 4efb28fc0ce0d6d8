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

// version and commit are set at link time, for example
//
//	go build -tags sqlite_fts5 -ldflags "-X main.version=v1.2.0 -X main.commit=abc1234" ./cmd/noticesd
//
// Left empty, they come from the module version and the VCS stamp Go writes
// into the binary (runtime/debug.ReadBuildInfo).
var version, commit string

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
	Tags                []string
	Modified            bool
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Go: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
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
	if b.Version == "" {
		b.Version = "devel"
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
	fmt.Fprintf(stdout, "noticesd %s\ncommit:   %s\ngo:       %s\ntags:     %s\n", b.Version, commit, b.Go, tags)
	for _, be := range backends() {
		state := "available"
		if !be.available {
			state = "unavailable (" + be.why + ")"
		}
		fmt.Fprintf(stdout, "backend:  %s %s\n", be.name, state)
	}
	return nil
}
