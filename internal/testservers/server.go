package testservers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// server is one running server as a test binary sees it.
type server struct {
	url     string
	version string
	source  string        // where it came from: the env variable, Docker, a local process
	ready   time.Duration // how long it took to become ready (to answer, for an env URL)
	stop    func() error  // nil when this package did not start it
}

func (s *server) String() string {
	return fmt.Sprintf("%s at %s from %s, ready in %s", s.version, s.url, s.source, s.ready.Round(time.Millisecond))
}

// kind is one of the two servers; it is resolved once per test binary.
type kind struct {
	name   string // "Elasticsearch"
	envVar string // NOTICES_TEST_..._URL
	// probe checks a URL and returns the server's version.
	probe func(ctx context.Context, url string) (string, error)
	// docker and local start a server, or say why they could not; a
	// kind with no docker is started as local processes only.
	docker func(ctx context.Context, p *dockerEngine) (*server, error)
	local  func(ctx context.Context) (*server, error)

	mu     sync.Mutex // held while resolving
	done   bool
	srv    *server
	err    error
	logged sync.Once
}

var (
	esKind = &kind{
		name: "Elasticsearch", envVar: "NOTICES_TEST_ELASTICSEARCH_URL",
		probe: probeElasticsearch, docker: dockerElasticsearch, local: localElasticsearch,
	}
	redisKind = &kind{
		name: "Redis", envVar: "NOTICES_TEST_REDIS_URL",
		probe: probeRedis, docker: dockerRedis, local: localRedis,
	}
	kinds = []*kind{esKind, redisKind, redisClusterKind}
)

// startTimeout bounds getting one server from Docker or as a local process
// (a cold local Elasticsearch downloads ~100 MB and takes ~45 s here).
const startTimeout = 10 * time.Minute

func (k *kind) url(t testing.TB) string {
	t.Helper()
	srv, err := k.get()
	if err != nil {
		unavailable(t, k.name, err.Error())
		return ""
	}
	k.logged.Do(func() {
		t.Logf("testservers: %s", srv)
		fmt.Fprintf(os.Stderr, "testservers: %s\n", srv)
	})
	return srv.url
}

// get resolves the server on first use; later calls get the same answer.
func (k *kind) get() (*server, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.done {
		k.srv, k.err = k.resolve()
		k.done = true
	}
	return k.srv, k.err
}

// resolved returns the server if a test has already obtained it, nil otherwise.
func (k *kind) resolved() *server {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done && k.err == nil {
		return k.srv
	}
	return nil
}

func (k *kind) resolve() (*server, error) {
	if u := os.Getenv(k.envVar); u != "" {
		return k.fromEnv(u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var tried []string
	// A kind without docker (a Redis Cluster: no image makes one) starts
	// local processes first, not as a fallback.
	if k.docker != nil {
		if eng, err := docker(); err != nil {
			tried = append(tried, "Docker: "+err.Error())
		} else {
			srv, err := k.docker(ctx, eng)
			if err == nil {
				return srv, nil
			}
			tried = append(tried, "Docker: "+err.Error())
		}
	}
	srv, err := k.local(ctx)
	if err == nil {
		if len(tried) > 0 {
			srv.source += " (tried first: " + strings.Join(tried, "; ") + ")"
		}
		return srv, nil
	}
	tried = append(tried, "local process: "+err.Error())
	return nil, fmt.Errorf("%s is not set, and no server could be started (%s)", k.envVar, strings.Join(tried, "; "))
}

func (k *kind) fromEnv(u string) (*server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	v, err := k.probe(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("%s=%s does not answer: %w", k.envVar, u, err)
	}
	return &server{url: u, version: v, source: "env " + k.envVar, ready: time.Since(start)}, nil
}

// shutdown stops every server this package started.
func shutdown() error {
	var errs []error
	for _, k := range kinds {
		if s := k.resolved(); s != nil && s.stop != nil {
			if err := s.stop(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", k.name, err))
			}
		}
	}
	if err := stopLocal(); err != nil {
		errs = append(errs, err)
	}
	stopSecure()
	return errors.Join(errs...)
}
