package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// semver is a SemVer 2.0.0 version without a leading v.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// TestVersion: the release is a SemVer, and a binary stamped as make build
// and the Dockerfile stamp it prints that version with the commit.
func TestVersion(t *testing.T) {
	if !semver.MatchString(Version) {
		t.Fatalf("Version %q is not a SemVer (MAJOR.MINOR.PATCH)", Version)
	}
	bin := buildBinary(t, "-ldflags", "-X main.commit=0123456789abcdef")
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("noticesd version: %v\n%s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	if lines[0] != "noticesd "+Version || len(lines) < 2 || lines[1] != "commit:   0123456789abcdef" {
		t.Errorf("noticesd version printed\n%s\nwant first 'noticesd %s' then 'commit:   0123456789abcdef'", out, Version)
	}
}
