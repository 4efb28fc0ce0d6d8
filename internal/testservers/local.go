package testservers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Local processes are started by scripts/services.sh (the same script
// `make test` uses), in a run directory of this test binary's own, with this
// process as the owner: the script's watchdog stops them when the test binary
// exits, even when it dies without running Main (a test timeout, a kill).
var (
	localMu  sync.Mutex
	localRun string // run directory, created on first use
)

func localElasticsearch(ctx context.Context) (*server, error) {
	return localStart(ctx, "elasticsearch", probeElasticsearch)
}

func localRedis(ctx context.Context) (*server, error) {
	return localStart(ctx, "redis", probeRedis)
}

func localStart(ctx context.Context, name string, probe func(context.Context, string) (string, error)) (*server, error) {
	script, err := servicesScript()
	if err != nil {
		return nil, err
	}
	localMu.Lock()
	defer localMu.Unlock()
	if localRun == "" {
		dir, err := os.MkdirTemp("", "noticesd-testservers-")
		if err != nil {
			return nil, err
		}
		localRun = dir
	}
	start := time.Now()
	out, err := services(ctx, script, "start", name)
	if err != nil {
		return nil, fmt.Errorf("scripts/services.sh start %s: %w:\n%s", name, err, trimmed(out, 30))
	}
	u, err := os.ReadFile(filepath.Join(localRun, name+".url"))
	if err != nil {
		return nil, fmt.Errorf("scripts/services.sh start %s wrote no URL: %w:\n%s", name, err, trimmed(out, 30))
	}
	about, _ := os.ReadFile(filepath.Join(localRun, name+".about"))
	url := strings.TrimSpace(string(u))
	v, err := probe(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("%s started by scripts/services.sh at %s does not answer: %w", name, url, err)
	}
	return &server{url: url, version: v, source: "scripts/services.sh: " + strings.TrimSpace(string(about)), ready: time.Since(start)}, nil
}

// stopLocal stops the local processes this test binary started.
func stopLocal() error {
	localMu.Lock()
	defer localMu.Unlock()
	if localRun == "" {
		return nil
	}
	script, err := servicesScript()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := services(ctx, script, "stop")
	if err != nil {
		return fmt.Errorf("scripts/services.sh stop: %w:\n%s", err, trimmed(out, 20))
	}
	err = os.RemoveAll(localRun)
	localRun = ""
	return err
}

// services runs scripts/services.sh in this binary's run directory.
func services(ctx context.Context, script string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Env = append(os.Environ(),
		"NOTICES_SERVICES_RUN="+localRun,
		"NOTICES_SERVICES_OWNER="+strconv.Itoa(os.Getpid()),
	)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// servicesScript finds scripts/services.sh in the module's root, above the
// package directory `go test` runs in.
func servicesScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "scripts", "services.sh")
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("the module root %s has no scripts/services.sh", dir)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory, so no scripts/services.sh")
		}
		dir = parent
	}
}

// trimmed keeps the last n lines of s, for error messages.
func trimmed(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
