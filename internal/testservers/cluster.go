package testservers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NodeSpec is one node of a local cluster: its name and its roles
// (node.roles, e.g. "master", "data"; "voting_only" with "master").
type NodeSpec struct {
	Name  string
	Roles []string
}

// Cluster is an Elasticsearch cluster of several local processes on
// loopback, for the tests that lose a node (StartCluster). Its first
// master-eligible node bootstraps it (cluster.initial_master_nodes).
type Cluster struct {
	name  string
	dir   string
	home  string // ES_HOME
	java  string // ES_JAVA_HOME
	cred  *syscall.Credential
	heap  string
	Nodes []*Node
}

// Node is one node of a Cluster: a process that can be killed and started
// again on the same ports and data.
type Node struct {
	c              *Cluster
	Name           string
	Roles          []string
	HTTP, Transfer int // ports on 127.0.0.1
	dir            string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// clusterWait bounds a node's start (the JVM, the join, the first
// health): 47 s measured for two nodes on a 2-core machine shared with
// other test runs, over 3 min on one under heavy load (load average 30).
const clusterWait = 300 * time.Second

// clusterJavaOpts are the nodes' JVM options: 512 MB heaps, and the client
// JIT compiler only (C1), which spends less CPU compiling while a node
// starts (its steady-state speed matters little to a test's few thousand
// documents).
const clusterJavaOpts = "-Xms512m -Xmx512m -XX:TieredStopAtLevel=1"

// StartCluster starts a cluster of the given nodes (local processes from
// the Elasticsearch of scripts/services.sh, security off, 512 MB heaps) and
// waits until every node has joined and the cluster is green. They are
// stopped when the test ends, and also when the test binary dies: each
// node's launcher gets SIGKILL when this process exits (Pdeathsig), and the
// server it started stops when the launcher's pipe closes. When no
// Elasticsearch can be installed or started, t fails under CI=true and is
// skipped loudly otherwise (as Elasticsearch does).
func StartCluster(t testing.TB, nodes ...NodeSpec) *Cluster {
	t.Helper()
	c, err := newCluster(nodes)
	if err != nil {
		unavailable(t, "a local Elasticsearch cluster", err.Error())
	}
	t.Cleanup(c.stop)
	for _, n := range c.Nodes {
		if err := n.start(); err != nil {
			unavailable(t, "a local Elasticsearch cluster", err.Error())
		}
	}
	if err := c.waitNodes(len(c.Nodes), clusterWait); err != nil {
		t.Fatalf("cluster %s: %v\n%s", c.name, err, c.logs())
	}
	if err := c.WaitStatus("green", 60*time.Second); err != nil {
		t.Fatalf("cluster %s: %v\n%s", c.name, err, c.logs())
	}
	return c
}

func newCluster(specs []NodeSpec) (*Cluster, error) {
	script, err := servicesScript()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "paths")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/services.sh paths: %w:\n%s", err, trimmed(stderr.String(), 20))
	}
	vals := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vals[k] = v
		}
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	c := &Cluster{name: "noticesd-cluster-" + hex.EncodeToString(b[:]), home: vals["ES_HOME"], java: vals["ES_JAVA_HOME"], heap: clusterJavaOpts}
	if c.home == "" || c.java == "" {
		return nil, fmt.Errorf("scripts/services.sh paths printed no ES_HOME or ES_JAVA_HOME:\n%s", out)
	}
	if name := vals["ES_USER"]; name != "" {
		u, err := user.Lookup(name)
		if err != nil {
			return nil, err
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// Not t.TempDir: its parent is private to root, and the nodes run as
	// the Elasticsearch user. The directories of clusters whose test
	// binary died (its nodes died with it) are deleted first.
	dropOrphans()
	if c.dir, err = os.MkdirTemp("", clusterDirPrefix); err != nil {
		return nil, err
	}
	if err := os.Chmod(c.dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	for _, s := range specs {
		n := &Node{c: c, Name: s.Name, Roles: s.Roles, dir: filepath.Join(c.dir, s.Name)}
		if n.HTTP, err = freeClusterPort(); err != nil {
			return nil, err
		}
		if n.Transfer, err = freeClusterPort(); err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	var seeds, masters []string
	for _, n := range c.Nodes {
		seeds = append(seeds, fmt.Sprintf("%q", "127.0.0.1:"+strconv.Itoa(n.Transfer)))
		for _, r := range n.Roles {
			if r == "master" {
				masters = append(masters, fmt.Sprintf("%q", n.Name))
				break
			}
		}
	}
	if len(masters) == 0 {
		return nil, errors.New("a cluster needs a node with the master role")
	}
	for _, n := range c.Nodes {
		if err := n.layout(seeds, masters[:1]); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// clusterDirPrefix names the directories of clusters in os.TempDir().
const clusterDirPrefix = "noticesd-escluster-"

// dropOrphans deletes the directories of clusters whose owner (the test
// binary that started them, owner.pid) has exited without its cleanup.
func dropOrphans() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), clusterDirPrefix+"*"))
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "owner.pid"))
		if err != nil {
			continue // being made, or not ours
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

// freePort is a loopback port nobody listens on now.
func freeClusterPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// layout writes the node's configuration and directories, owned by the
// user it runs as.
func (n *Node) layout(seeds, masters []string) error {
	conf := filepath.Join(n.dir, "config")
	if err := os.CopyFS(conf, os.DirFS(filepath.Join(n.c.home, "config"))); err != nil {
		return err
	}
	for _, d := range []string{"data", "logs", "tmp"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			return err
		}
	}
	roles := make([]string, len(n.Roles))
	for i, r := range n.Roles {
		roles[i] = strconv.Quote(r)
	}
	yml := fmt.Sprintf(`cluster.name: %s
node.name: %s
node.roles: [%s]
path.data: %s
path.logs: %s
network.host: 127.0.0.1
http.port: %d
transport.port: %d
discovery.seed_hosts: [%s]
cluster.initial_master_nodes: [%s]
xpack.security.enabled: false
cluster.routing.allocation.disk.threshold_enabled: false
`, n.c.name, n.Name, strings.Join(roles, ", "), filepath.Join(n.dir, "data"), filepath.Join(n.dir, "logs"),
		n.HTTP, n.Transfer, strings.Join(seeds, ", "), strings.Join(masters, ", "))
	if err := os.WriteFile(filepath.Join(conf, "elasticsearch.yml"), []byte(yml), 0o644); err != nil {
		return err
	}
	if n.c.cred == nil {
		return nil
	}
	return filepath.Walk(n.dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(n.c.cred.Uid), int(n.c.cred.Gid))
	})
}

// URL is the node's HTTP base URL.
func (n *Node) URL() string { return "http://127.0.0.1:" + strconv.Itoa(n.HTTP) }

// URLs are the nodes' HTTP base URLs, in order.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.URL()
	}
	return out
}

// start launches the node's process (not waiting for it to answer).
func (n *Node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		select {
		case <-n.done:
		default:
			return fmt.Errorf("node %s is running", n.Name)
		}
	}
	console, err := os.OpenFile(filepath.Join(n.dir, "console.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(n.c.home, "bin", "elasticsearch"))
	cmd.Dir = n.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + n.dir, "LANG=C.UTF-8",
		"ES_HOME=" + n.c.home, "ES_PATH_CONF=" + filepath.Join(n.dir, "config"), "ES_JAVA_HOME=" + n.c.java,
		"ES_JAVA_OPTS=" + n.c.heap, "ES_TMPDIR=" + filepath.Join(n.dir, "tmp")}
	cmd.Stdout, cmd.Stderr = console, console
	// Its own process group (Kill and stop reach the launcher and the
	// server JVM it forks), and SIGKILL to the launcher when this process
	// dies; the server exits when its launcher does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: n.c.cred}
	if err := cmd.Start(); err != nil {
		console.Close()
		return fmt.Errorf("start node %s: %w", n.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); console.Close(); close(done) }()
	n.cmd, n.done = cmd, done
	return nil
}

// Start starts a stopped node again on its ports and data and waits until
// it has joined the cluster (all nodes present).
func (n *Node) Start(t testing.TB) {
	t.Helper()
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(clusterWait)
	for {
		// Asked of the node itself: the others may still list it for a
		// moment after it was killed.
		var rows []struct {
			Name string `json:"name"`
		}
		err := getJSON(n.URL()+"/_cat/nodes?format=json&h=name", &rows)
		if err == nil && len(rows) == len(n.c.Nodes) {
			return
		}
		select {
		case <-n.done:
			t.Fatalf("node %s exited while starting again\n%s", n.Name, n.c.logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s did not rejoin within %s (%d nodes, %v)\n%s", n.Name, clusterWait, len(rows), err, n.c.logs())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Kill sends SIGKILL to the node's processes (the server JVM and its
// launcher) and waits until they are gone: a node lost at once, without
// a shutdown.
func (n *Node) Kill(t testing.TB) {
	t.Helper()
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		t.Fatalf("node %s was never started", n.Name)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	waitGroupGone(cmd.Process.Pid, 30*time.Second)
}

// waitGroupGone waits until no process of group pgid is left.
func waitGroupGone(pgid int, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
	}
	return false
}

// stop stops every node (SIGTERM, then SIGKILL after 30 s) and deletes
// the cluster's directory.
func (c *Cluster) stop() {
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		n.mu.Lock()
		cmd := n.cmd
		n.mu.Unlock()
		if cmd == nil {
			continue
		}
		wg.Go(func() {
			pg := cmd.Process.Pid
			_ = syscall.Kill(-pg, syscall.SIGTERM)
			if !waitGroupGone(pg, 30*time.Second) {
				_ = syscall.Kill(-pg, syscall.SIGKILL)
				waitGroupGone(pg, 10*time.Second)
			}
		})
	}
	wg.Wait()
	_ = os.RemoveAll(c.dir)
}

// joined answers the names of the nodes in the cluster, asked of any
// node that answers.
func (c *Cluster) joined() ([]string, error) {
	var rows []struct {
		Name string `json:"name"`
	}
	err := c.get("/_cat/nodes?format=json&h=name", &rows)
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Name
	}
	return names, err
}

// get GETs path from the first node that answers, decoding JSON into out.
func (c *Cluster) get(path string, out any) error {
	var last error
	for _, n := range c.Nodes {
		if last = getJSON(n.URL()+path, out); last == nil {
			return nil
		}
	}
	return last
}

// getJSON GETs url and decodes its 200 answer into out.
func getJSON(url string, out any) error {
	cl := &http.Client{Timeout: 5 * time.Second}
	res, err := cl.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, res.Status)
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// waitNodes waits until the cluster has want nodes.
func (c *Cluster) waitNodes(want int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		names, err := c.joined()
		if err == nil && len(names) == want {
			return nil
		}
		for _, n := range c.Nodes {
			n.mu.Lock()
			done := n.done
			n.mu.Unlock()
			select {
			case <-done:
				return fmt.Errorf("node %s exited", n.Name)
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d nodes joined (%v, %v) after %s; want %d", len(names), names, err, limit, want)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// WaitStatus waits until the cluster's health is status (green, yellow)
// or better, as answered by a node that is up.
func (c *Cluster) WaitStatus(status string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last string
	for {
		var h struct {
			Status string `json:"status"`
		}
		err := c.get("/_cluster/health?wait_for_status="+status+"&timeout=1s", &h)
		if err == nil && (h.Status == status || h.Status == "green") {
			return nil
		}
		last = fmt.Sprint(h.Status, " ", err)
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster health not %s after %s (last: %s)", status, limit, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// logs is the end of every node's console log, for a failure message.
func (c *Cluster) logs() string {
	var b strings.Builder
	for _, n := range c.Nodes {
		data, _ := os.ReadFile(filepath.Join(n.dir, "console.log"))
		fmt.Fprintf(&b, "---- node %s console.log (end):\n%s\n", n.Name, trimmed(string(data), 25))
	}
	return b.String()
}
