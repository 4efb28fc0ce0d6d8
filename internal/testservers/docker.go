package testservers

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// esVersion is the Elasticsearch version the tests pin: the newest 8.x that
// Maven Central serves as the test zip (scripts/services.sh pins the same).
const esVersion = "8.19.21"

// dockerProbeTimeout bounds asking whether a Docker engine answers, so that a
// machine without one falls through to local processes at once.
const dockerProbeTimeout = time.Second

// dockerEngine is a Docker engine that answered.
type dockerEngine struct {
	pool *dockertest.Pool
	host string // where published ports are reached
}

var (
	dockerOnce sync.Once
	dockerEng  *dockerEngine
	dockerErr  error
)

// docker returns the Docker engine, or why there is none. It asks once per
// test binary, within dockerProbeTimeout.
func docker() (*dockerEngine, error) {
	dockerOnce.Do(func() { dockerEng, dockerErr = probeDocker(dockerProbeTimeout) })
	return dockerEng, dockerErr
}

func probeDocker(timeout time.Duration) (*dockerEngine, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("no Docker client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := pool.Client.PingWithContext(ctx); err != nil {
		return nil, fmt.Errorf("no engine answers at %s: %w", pool.Client.Endpoint(), err)
	}
	pool.MaxWait = 5 * time.Minute
	host := "127.0.0.1"
	if u, err := url.Parse(pool.Client.Endpoint()); err == nil && (u.Scheme == "tcp" || u.Scheme == "http" || u.Scheme == "https") {
		host = u.Hostname() // a remote engine publishes ports on its own host
	}
	return &dockerEngine{pool: pool, host: host}, nil
}

// run starts image:tag with env, publishing port, and waits until probe
// answers on the published address.
func (d *dockerEngine) run(ctx context.Context, repo, tag, port, scheme string, env []string,
	probe func(context.Context, string) (string, error)) (*server, error) {
	start := time.Now()
	bindIP := ""
	if d.host == "127.0.0.1" {
		bindIP = "127.0.0.1" // a server without security stays off the network
	}
	res, err := d.pool.RunWithOptions(&dockertest.RunOptions{
		Repository:   repo,
		Tag:          tag,
		Env:          env,
		ExposedPorts: []string{port},
		PortBindings: map[dc.Port][]dc.PortBinding{dc.Port(port): {{HostIP: bindIP}}},
		Labels:       map[string]string{"noticesd.testservers": "1"},
	}, func(hc *dc.HostConfig) {
		hc.PublishAllPorts = false
		hc.AutoRemove = true
		hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return nil, fmt.Errorf("run %s:%s: %w", repo, tag, err)
	}
	hostPort := res.GetPort(port)
	u := scheme + "://" + net.JoinHostPort(d.host, hostPort)
	if scheme == "redis" {
		u += "/0"
	}
	var version string
	err = d.pool.Retry(func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		v, err := probe(pctx, u)
		version = v
		return err
	})
	if err != nil {
		_ = d.pool.Purge(res)
		return nil, fmt.Errorf("%s:%s did not become ready at %s: %w", repo, tag, u, err)
	}
	return &server{
		url:     u,
		version: version,
		source:  "Docker image " + repo + ":" + tag + " (engine " + d.pool.Client.Endpoint() + ")",
		ready:   time.Since(start),
		stop:    func() error { return d.pool.Purge(res) },
	}, nil
}

func dockerElasticsearch(ctx context.Context, d *dockerEngine) (*server, error) {
	return d.run(ctx, "docker.elastic.co/elasticsearch/elasticsearch", esVersion, "9200/tcp", "http", []string{
		"discovery.type=single-node",
		"xpack.security.enabled=false",
		"cluster.routing.allocation.disk.threshold_enabled=false",
		"path.repo=/usr/share/elasticsearch/snapshots", // as compose.yaml; scripts/services.sh sets one too
		"ES_JAVA_OPTS=-Xms512m -Xmx1g",
	}, probeElasticsearch)
}

func dockerRedis(ctx context.Context, d *dockerEngine) (*server, error) {
	return d.run(ctx, "redis", "7", "6379/tcp", "redis", nil, probeRedis)
}
