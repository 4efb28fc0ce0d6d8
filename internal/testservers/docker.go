package testservers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
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
	// hostNetwork: the engine has no "bridge" network (dockerd --bridge=none,
	// as make test-deploy runs it), so containers share the host's network
	// and listen on free loopback ports given to them, nothing is published.
	hostNetwork bool
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
	_, bridgeErr := pool.Client.NetworkInfo("bridge")
	var noNetwork *dc.NoSuchNetwork
	hostNetwork := errors.As(bridgeErr, &noNetwork)
	if hostNetwork && host != "127.0.0.1" {
		return nil, fmt.Errorf("the engine at %s has no bridge network, and a remote engine's host network is not this machine's", pool.Client.Endpoint())
	}
	return &dockerEngine{pool: pool, host: host, hostNetwork: hostNetwork}, nil
}

// freeLoopbackPort returns a TCP port free on 127.0.0.1 now.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("no free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// onHost is what a container on the host network is given so that it
// listens on 127.0.0.1:port (and, for Elasticsearch, transport on another
// free port): environment variables and a command (nil: the image's).
type onHost func(port int) (env, cmd []string, err error)

// run starts image:tag with env, publishing port, and waits until probe
// answers on the published address. On an engine without a bridge network
// the container shares the host's network instead, listening where hostArgs
// tells it to.
func (d *dockerEngine) run(ctx context.Context, repo, tag, port, scheme string, env []string, hostArgs onHost,
	probe func(context.Context, string) (string, error)) (*server, error) {
	start := time.Now()
	bindIP := ""
	if d.host == "127.0.0.1" {
		bindIP = "127.0.0.1" // a server without security stays off the network
	}
	opts := &dockertest.RunOptions{
		Repository:   repo,
		Tag:          tag,
		Env:          env,
		ExposedPorts: []string{port},
		PortBindings: map[dc.Port][]dc.PortBinding{dc.Port(port): {{HostIP: bindIP}}},
		Labels:       map[string]string{"noticesd.testservers": "1"},
	}
	hostPort := ""
	if d.hostNetwork {
		p, err := freeLoopbackPort()
		if err != nil {
			return nil, err
		}
		extraEnv, cmd, err := hostArgs(p)
		if err != nil {
			return nil, err
		}
		opts.ExposedPorts, opts.PortBindings = nil, nil
		opts.Env = append(append([]string(nil), env...), extraEnv...)
		opts.Cmd = cmd
		hostPort = strconv.Itoa(p)
	}
	res, err := d.pool.RunWithOptions(opts, func(hc *dc.HostConfig) {
		hc.PublishAllPorts = false
		hc.AutoRemove = true
		hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
		if d.hostNetwork {
			hc.NetworkMode = "host"
			hc.PortBindings = nil
		}
	})
	if err != nil {
		return nil, fmt.Errorf("run %s:%s: %w", repo, tag, err)
	}
	how := "port " + port + " published"
	if d.hostNetwork {
		how = "host network"
	} else {
		hostPort = res.GetPort(port)
	}
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
		source:  "Docker image " + repo + ":" + tag + " (engine " + d.pool.Client.Endpoint() + ", " + how + ", container " + res.Container.ID[:12] + ")",
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
	}, func(port int) ([]string, []string, error) {
		transport, err := freeLoopbackPort()
		if err != nil {
			return nil, nil, err
		}
		return []string{"network.host=127.0.0.1", "http.port=" + strconv.Itoa(port), "transport.port=" + strconv.Itoa(transport)}, nil, nil
	}, probeElasticsearch)
}

// dockerRedis: on the host network with no persistence, as scripts/services.sh
// runs its redis-server. With the default save points TestMillionCompanyWatch
// timed out against it in two of three runs on a busy machine; a fork for a
// save in the middle of its 1,000,000-company watch is the likely cause.
func dockerRedis(ctx context.Context, d *dockerEngine) (*server, error) {
	return d.run(ctx, "redis", "7", "6379/tcp", "redis", nil, func(port int) ([]string, []string, error) {
		return nil, []string{"redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no"}, nil
	}, probeRedis)
}
