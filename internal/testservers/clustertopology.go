//go:build unix

package testservers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterNodeTimeout is cluster-node-timeout of StartRedisCluster's nodes:
// a master unreachable this long is marked failed and its replica
// promoted, so a master loss takes seconds.
const ClusterNodeTimeout = 2000 * time.Millisecond

// ClusterTopology is a Redis Cluster of its own for one test: 3 masters,
// each with one replica (appendonly yes, cluster-node-timeout
// ClusterNodeTimeout), six redis-server processes on loopback, stopped
// when the test ends. Unlike RedisCluster's shared cluster, a test may
// kill its masters (KillMasterOf).
type ClusterTopology struct {
	redisProcs
	// URL is the cluster in go-redis's cluster form, for
	// NOTICES_REDIS_CLUSTER_URL: every node's address (rediss:// and the
	// user's name and password with ClusterOptions).
	URL string
	// CAFile is the PEM of the CA that signed the nodes' certificates
	// (NOTICES_REDIS_CA_FILE), OtherCAFile that of a CA that did not;
	// both "" without ClusterOptions.TLS.
	CAFile, OtherCAFile string
}

// ClusterOptions secure the nodes of StartRedisClusterWith; the zero value
// is StartRedisCluster's cluster: plain TCP, no password.
type ClusterOptions struct {
	// TLS makes every node TLS-only (port 0, tls-port, tls-cluster and
	// tls-replication yes) with a certificate for 127.0.0.1 signed by a CA
	// made for the test (ClusterTopology.CAFile); a client needs no
	// certificate of its own (tls-auth-clients no).
	TLS bool
	// User and Password, when set, are an ACL user with every right (the
	// rule of SecuredACL), as whom the replicas sync (masteruser,
	// masterauth) and redis-cli creates the cluster; the default user
	// then needs a password nobody is given.
	User, Password string
}

// StartRedisCluster starts a ClusterTopology and waits until every node
// reports cluster_state:ok with the 16,384 slots assigned. Without
// redis-server and redis-cli on PATH the test fails under CI=true and is
// skipped loudly otherwise.
func StartRedisCluster(t testing.TB) *ClusterTopology {
	t.Helper()
	return StartRedisClusterWith(t, ClusterOptions{})
}

// StartRedisClusterWith is StartRedisCluster with its nodes secured as o
// says.
func StartRedisClusterWith(t testing.TB, o ClusterOptions) *ClusterTopology {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	cli, cliErr := exec.LookPath("redis-cli")
	if err != nil || cliErr != nil {
		unavailable(t, "redis-server and redis-cli (for a Redis Cluster)", "apt-get install redis-server redis-tools (scripts/services.sh install does)")
		return nil
	}
	top := &ClusterTopology{redisProcs: newRedisProcs(t)}
	t.Cleanup(top.stopAll)
	conf := []string{
		"cluster-enabled yes",
		"cluster-config-file nodes.conf",
		"cluster-node-timeout " + strconv.FormatInt(ClusterNodeTimeout.Milliseconds(), 10),
	}
	u := &url.URL{Scheme: "redis"}
	// Bounded: redis-cli waits for the nodes to join for ever, and they
	// never do when their bus connections fail (a TLS handshake refused).
	cctx, ccancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer ccancel()
	create := exec.CommandContext(cctx, cli)
	if o.TLS {
		u.Scheme = "rediss"
		conf = append(conf, top.secure(t)...)
		create.Args = append(create.Args, "--tls", "--cacert", top.CAFile)
	}
	if o.User != "" {
		top.user, top.password = o.User, o.Password
		u.User = url.UserPassword(o.User, o.Password)
		conf = append(conf, "user "+o.User+" on >"+o.Password+" ~* &* +@all",
			"masteruser "+o.User, "masterauth "+o.Password, "requirepass "+randomSecret())
		// The password in the environment, not on the command line.
		create.Args = append(create.Args, "--user", o.User)
		create.Env = append(os.Environ(), "REDISCLI_AUTH="+o.Password)
	}
	var addrs []string
	for i := 1; i <= 6; i++ {
		p := top.start(t, bin, "node"+strconv.Itoa(i), conf, "", freeClusterLoopback)
		addrs = append(addrs, p.addr)
	}
	create.Args = append(append(append(create.Args, "--cluster", "create"), addrs...), "--cluster-replicas", "1", "--cluster-yes")
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s\n%s", err, trimmed(string(out), 30), top.logs())
	}
	u.Host, u.RawQuery = addrs[0], "addr="+strings.Join(addrs[1:], "&addr=")
	top.URL = u.String()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		err := top.allOK(ctx)
		if err == nil {
			return top
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the Redis Cluster did not settle within 60 s: %v\n%s", err, top.logs())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// secure writes the CA files and the nodes' certificate and key, sets the
// TLS of this package's clients, and returns the nodes' TLS settings.
func (top *ClusterTopology) secure(t testing.TB) []string {
	t.Helper()
	ca, err := NewCA("noticesd test Redis Cluster CA")
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("some other CA")
	if err != nil {
		t.Fatal(err)
	}
	// One certificate for every node: all listen on 127.0.0.1. A node
	// presents it to the others as a client too (the cluster bus asks for
	// a client certificate whatever tls-auth-clients says).
	certPEM, keyPEM, err := ca.Issue("127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	top.CAFile, top.OtherCAFile = filepath.Join(top.dir, "ca.pem"), filepath.Join(top.dir, "other-ca.pem")
	certFile, keyFile := filepath.Join(top.dir, "node.pem"), filepath.Join(top.dir, "node-key.pem")
	for file, data := range map[string][]byte{top.CAFile: ca.CertPEM(), top.OtherCAFile: other.CertPEM(), certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	top.tls = &tls.Config{RootCAs: roots}
	return []string{"tls-cert-file " + certFile, "tls-key-file " + keyFile, "tls-ca-cert-file " + top.CAFile,
		"tls-auth-clients no", "tls-replication yes", "tls-cluster yes"}
}

// allOK checks that every live node reports cluster_state:ok with every
// slot assigned, and that every replica's link to its master is up.
func (top *ClusterTopology) allOK(ctx context.Context) error {
	for _, addr := range top.live() {
		rdb := top.client(addr)
		info, err := rdb.ClusterInfo(ctx).Result()
		if err == nil && !strings.Contains(info, "cluster_state:ok") || err == nil && !strings.Contains(info, "cluster_slots_assigned:16384") {
			err = fmt.Errorf("cluster info: %s", strings.Join(strings.Fields(info), " "))
		}
		// A replica counts once it has synced: before that a WAIT for one
		// replica on its master times out (an acknowledged write refused).
		if err == nil {
			var repl string
			if repl, err = rdb.Info(ctx, "replication").Result(); err == nil && strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
				err = fmt.Errorf("replica not synced with its master yet")
			}
		}
		rdb.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
	}
	return nil
}

// live returns the addresses of the nodes still running.
func (top *ClusterTopology) live() []string {
	top.mu.Lock()
	defer top.mu.Unlock()
	var out []string
	for addr, p := range top.servers {
		select {
		case <-p.done:
		default:
			out = append(out, addr)
		}
	}
	return out
}

// MasterOf returns the address of the master serving key's slot, as the
// first live node that answers says.
func (top *ClusterTopology) MasterOf(ctx context.Context, key string) (string, error) {
	var last error
	for _, addr := range top.live() {
		rdb := top.client(addr)
		slot, err := rdb.ClusterKeySlot(ctx, key).Result()
		var shards []redis.ClusterShard
		if err == nil {
			shards, err = rdb.ClusterShards(ctx).Result()
		}
		rdb.Close()
		if err != nil {
			last = fmt.Errorf("%s: %w", addr, err)
			continue
		}
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if r.Start > slot || slot > r.End {
					continue
				}
				for _, n := range sh.Nodes {
					port := n.Port // 0 on a TLS-only node: its port is TLSPort
					if top.tls != nil {
						port = n.TLSPort
					}
					if n.Role == "master" && n.Health == "online" {
						return net.JoinHostPort(n.IP, strconv.FormatInt(port, 10)), nil
					}
				}
			}
		}
		last = fmt.Errorf("%s: no node serves slot %d", addr, slot)
	}
	return "", last
}

// KillMasterOf sends SIGKILL (kill -9) to the master serving key's slot
// and returns its address.
func (top *ClusterTopology) KillMasterOf(t testing.TB, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addr, err := top.MasterOf(ctx, key)
	if err != nil {
		t.Fatalf("which master serves %q: %v", key, err)
	}
	top.mu.Lock()
	p := top.servers[addr]
	top.mu.Unlock()
	if p == nil {
		t.Fatalf("the cluster names %s as the master of %q, which this topology did not start", addr, key)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %s: %v", p.name, err)
	}
	<-p.done
	return addr
}

// WaitPromoted waits until the live nodes agree that a master other than
// old serves key's slot and report cluster_state:ok; it returns the new
// master's address.
func (top *ClusterTopology) WaitPromoted(t testing.TB, key, old string, limit time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		addr, err := top.MasterOf(ctx, key)
		if err == nil && addr != old {
			if err = top.allOK(ctx); err == nil {
				return addr
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no master other than %s serves %q within %s (last: %s, %v)\n%s", old, key, limit, addr, err, top.logs())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freeClusterLoopback returns a 127.0.0.1 address below port 55535 whose
// port and cluster bus port (port + 10000) are both free at the time of
// the call.
func freeClusterLoopback() (string, error) {
	ports, err := ClusterPorts(1, nil)
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(ports[0]), nil
}

// ClusterPorts returns n loopback ports below 55535 (a cluster node's bus
// listens on port + 10000) whose port and bus port are both free at the
// time of the call, none of them in used, starting from a random port.
func ClusterPorts(n int, used []int) ([]int, error) {
	var out []int
	for range 2000 {
		if len(out) == n {
			return out, nil
		}
		p := 20000 + rand.IntN(25535)
		if slices.Contains(used, p) || slices.Contains(used, p+10000) {
			continue
		}
		a, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		b, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		a.Close()
		if err != nil {
			continue
		}
		b.Close()
		out = append(out, p)
		used = append(used, p, p+10000)
	}
	return nil, fmt.Errorf("found %d free loopback ports below 55535 with their bus ports free, want %d", len(out), n)
}
