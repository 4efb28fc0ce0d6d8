package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHealthStoreCannotWrite puts the SQLite file on a small tmpfs and
// fills it for real. /health must say degraded with the reason (HTTP 200:
// the store is reachable) and /ready answer 503 while it lasts, and both
// ok again after.
func TestHealthStoreCannotWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("HEALTH WRITE TEST NOT RUN: mounting a small tmpfs needs root; run the tests as root to cover a full disk")
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mount := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %v: %v: %s", args, err, out)
		}
	}
	mount("-t", "tmpfs", "-o", "size=8m", "tmpfs", dir)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() }) // after the store closes (cleanups run last-in first)
	f := newFixture(t, fixtureOpts{dir: dir, writeProbe: true})
	f.srv.writeProbe.every = 0 // probe on every /health: the fixture's clock stands still

	check := f.checkHealth
	check(t, 200, "ok", "ok", "")

	t.Run("disk full", func(t *testing.T) {
		filler := filepath.Join(dir, "filler")
		fill, err := os.Create(filler)
		if err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 64<<10)
		for {
			if _, err := fill.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling the disk: %v", err)
				}
				break
			}
		}
		fill.Close()
		check(t, 200, "degraded", "degraded", "no space left on device")
		f.checkReady(t, 503)
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		check(t, 200, "ok", "ok", "")
		f.checkReady(t, 200)
	})
}

// TestHealthStoreReadOnly makes the database file and its directory
// immutable (chattr +i, which even root cannot write through): the store
// still answers reads, /health says it cannot write, and recovers after.
func TestHealthStoreReadOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("HEALTH READ-ONLY TEST NOT RUN: chattr +i needs root; run the tests as root to cover a read-only store")
	}
	dir := t.TempDir()
	f := newFixture(t, fixtureOpts{dir: dir, writeProbe: true})
	f.srv.writeProbe.every = 0 // probe on every /health: the fixture's clock stands still
	chattr := func(flag string) error {
		out, err := exec.Command("chattr", flag, dir, filepath.Join(dir, "notices.db")).CombinedOutput()
		if err != nil {
			return fmt.Errorf("chattr %s: %v: %s", flag, err, out)
		}
		return nil
	}
	if err := chattr("+i"); err != nil {
		t.Skipf("HEALTH READ-ONLY TEST NOT RUN: the file system of %s has no immutable flag: %v", dir, err)
	}
	t.Cleanup(func() { _ = chattr("-i") })
	f.checkHealth(t, 200, "degraded", "degraded", "operation not permitted")
	f.checkReady(t, 503)
	if res := f.do(t, "GET", "/v1/notices", f.read); res.status != 200 {
		t.Errorf("reads must go on while writes fail: HTTP %d %s", res.status, res.body)
	}
	if err := chattr("-i"); err != nil {
		t.Fatal(err)
	}
	f.checkHealth(t, 200, "ok", "ok", "")
	f.checkReady(t, 200)
}

// checkReady asks /ready and wants status.
func (f *fixture) checkReady(t *testing.T, status int) {
	t.Helper()
	if res := f.do(t, "GET", "/ready", ""); res.status != status {
		t.Fatalf("/ready: HTTP %d %s, want %d", res.status, res.body, status)
	}
}

// checkHealth asks /health and wants the given HTTP status, status, store
// check and a single reason containing reason ("" for none).
func (f *fixture) checkHealth(t *testing.T, status int, state, store, reason string) {
	t.Helper()
	res := f.do(t, "GET", "/health", "")
	var h healthResponse
	if err := json.Unmarshal(res.body, &h); err != nil {
		t.Fatal(err)
	}
	if res.status != status || h.Status != state || h.Checks.Store != store {
		t.Fatalf("HTTP %d status %q store %q, want %d %q %q; body %s", res.status, h.Status, h.Checks.Store, status, state, store, res.body)
	}
	if reason == "" && len(h.Reasons) != 0 || reason != "" && (len(h.Reasons) != 1 || !strings.Contains(h.Reasons[0], reason)) {
		t.Fatalf("reasons %q, want one mentioning %q", h.Reasons, reason)
	}
}

// TestHealthWriteProbeReused: /health needs no key, so the write probe runs
// at most once per writeProbeEvery on the injected clock.
func TestHealthWriteProbeReused(t *testing.T) {
	f := newFixture(t)
	now := fixedNow
	probes := 0
	f.srv.deps.Now = func() time.Time { return now }
	f.srv.deps.StoreWritable = func(context.Context) error { probes++; return nil }
	for range 5 {
		f.checkHealth(t, 200, "ok", "ok", "")
	}
	if probes != 1 {
		t.Fatalf("%d probes for 5 calls within %s, want 1", probes, writeProbeEvery)
	}
	now = now.Add(writeProbeEvery)
	f.checkHealth(t, 200, "ok", "ok", "")
	if probes != 2 {
		t.Fatalf("%d probes after %s, want 2", probes, writeProbeEvery)
	}
}
