// Package testservers hands tests a running Elasticsearch 8 node and a
// running Redis 7 server, and a namespace of their own on each.
//
// Where the servers come from, in order, once per test binary:
//  1. NOTICES_TEST_ELASTICSEARCH_URL / NOTICES_TEST_REDIS_URL when set (an
//     existing server; `make test` starts one of each through
//     scripts/services.sh and sets these). A URL that does not answer is an
//     error, not a reason to look elsewhere.
//  2. A Docker engine, when one answers within a second: the official
//     Elasticsearch image (single node, security off, small heap) and redis:7,
//     through github.com/ory/dockertest/v3, with the port published on
//     127.0.0.1; on an engine without a bridge network (dockerd
//     --bridge=none, as `make test-deploy` runs it) on the host's network
//     instead, listening on a free loopback port.
//  3. Local processes started by scripts/services.sh (Elasticsearch from the
//     Maven Central test zip, redis-server from Debian), on free loopback
//     ports, one of each per test binary.
//
// RedisCluster hands out a Redis Cluster (3 masters, a replica each) the
// same way, from NOTICES_TEST_REDIS_CLUSTER_URL or scripts/services.sh
// (no Docker image makes one).
//
// A package whose tests use these servers calls Main from its TestMain, which
// stops what this package started and prints which live suites did not run:
//
//	func TestMain(m *testing.M) { testservers.Main(m) }
//
// (Local processes are stopped even without it, when the test binary exits;
// Docker containers only by Main.)
//
// A live suite never skips silently: with CI=true a server that cannot be had
// fails the test with the reason; otherwise the test is skipped with a loud
// message naming what did not run, repeated by Main at the end.
package testservers

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Elasticsearch returns the base URL (http://host:port) of a running
// Elasticsearch node, or fails/skips t as the package doc says.
func Elasticsearch(t testing.TB) string {
	t.Helper()
	return esKind.url(t)
}

// Redis returns a redis:// URL of a running Redis server, or fails/skips t
// as the package doc says.
func Redis(t testing.TB) string {
	t.Helper()
	return redisKind.url(t)
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9]+`)

// Namespace returns a NOTICES_NAMESPACE unique to this test: lower case,
// safe as an Elasticsearch index prefix and a Redis key prefix. When the test
// ends, the indices and Redis keys under it are deleted from the servers this
// test binary uses, so shared servers do not fill up.
func Namespace(t testing.TB) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := unsafeChars.ReplaceAllString(strings.ToLower(t.Name()), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	ns := "t-" + strings.Trim(name, "-") + "-" + hex.EncodeToString(b[:])
	t.Cleanup(func() { clean(t, ns) })
	return ns
}

// Main runs the tests, stops the servers this package started for them and
// prints which live suites did not run, then exits. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if err := shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, "testservers: stopping the test servers:", err)
		if code == 0 {
			code = 1
		}
	}
	reportNotRun(os.Stderr)
	os.Exit(code)
}

var (
	notRunMu sync.Mutex
	notRun   []string
)

// unavailable fails t under CI=true and skips it loudly otherwise.
func unavailable(t testing.TB, server, why string) {
	t.Helper()
	msg := "LIVE SUITE NOT RUN: " + t.Name() + " needs " + server + ": " + why +
		" (run `make test`, or set NOTICES_TEST_ELASTICSEARCH_URL / NOTICES_TEST_REDIS_URL / NOTICES_TEST_REDIS_CLUSTER_URL)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	notRunMu.Lock()
	notRun = append(notRun, t.Name()+" ("+server+")")
	notRunMu.Unlock()
	t.Skip(msg)
}

// reportNotRun prints the live suites that were skipped. `go test ./...`
// hides the output of passing packages, so the banner also goes to the
// terminal when there is one.
func reportNotRun(w io.Writer) {
	notRunMu.Lock()
	defer notRunMu.Unlock()
	if len(notRun) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n!!! %d LIVE TEST(S) DID NOT RUN in %s (no Elasticsearch/Redis/Redis Cluster could be had):\n", len(notRun), filepath.Base(os.Args[0]))
	for _, n := range notRun {
		fmt.Fprintf(&b, "!!!   %s\n", n)
	}
	b.WriteString("!!! run `make test`, or set NOTICES_TEST_ELASTICSEARCH_URL / NOTICES_TEST_REDIS_URL / NOTICES_TEST_REDIS_CLUSTER_URL\n")
	fmt.Fprint(w, b.String())
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		fmt.Fprint(tty, b.String())
		tty.Close()
	}
}
