// Package testservers hands tests a running Elasticsearch 8 node and a
// running Redis 7 server, and a namespace of their own on each.
//
// Where the servers come from, in order:
//  1. NOTICES_TEST_ELASTICSEARCH_URL / NOTICES_TEST_REDIS_URL when set (an
//     existing server; `make test` starts one of each through
//     scripts/services.sh and sets these);
//  2. (to be built) a Docker engine, when one answers;
//  3. (to be built) local processes.
//
// A live suite never skips silently: with CI=true a server that cannot be
// had fails the test with the reason; otherwise the test is skipped with a
// loud message naming what did not run.
package testservers

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Elasticsearch returns the base URL (http://host:port) of a running
// Elasticsearch node, or fails/skips t as the package doc says.
func Elasticsearch(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("NOTICES_TEST_ELASTICSEARCH_URL"); u != "" {
		return u
	}
	unavailable(t, "Elasticsearch", "NOTICES_TEST_ELASTICSEARCH_URL is not set")
	return ""
}

// Redis returns a redis:// URL of a running Redis server, or fails/skips t
// as the package doc says.
func Redis(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("NOTICES_TEST_REDIS_URL"); u != "" {
		return u
	}
	unavailable(t, "Redis", "NOTICES_TEST_REDIS_URL is not set")
	return ""
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9]+`)

// Namespace returns a NOTICES_NAMESPACE unique to this test: lower case,
// safe as an Elasticsearch index prefix and a Redis key prefix.
func Namespace(t testing.TB) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := unsafeChars.ReplaceAllString(strings.ToLower(t.Name()), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	return "t-" + strings.Trim(name, "-") + "-" + hex.EncodeToString(b[:])
}

func unavailable(t testing.TB, server, why string) {
	t.Helper()
	msg := "LIVE SUITE NOT RUN: " + t.Name() + " needs " + server + ": " + why +
		" (run `make test`, or set NOTICES_TEST_ELASTICSEARCH_URL / NOTICES_TEST_REDIS_URL)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
