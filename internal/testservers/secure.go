package testservers

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
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

// SecureNode is a single local Elasticsearch node with security on, as a
// production cluster runs it: HTTPS with a certificate signed by a CA of
// the test's own, and users in the file realm (no native realm: the test
// distribution cannot create its .security index, so no API keys or
// native roles either). One node per test binary (SecuredElasticsearch).
type SecureNode struct {
	// URL is https://127.0.0.1:PORT, without credentials.
	URL string
	// CA signed the node's certificate; CAFile is its PEM on disk and
	// CAFingerprint its SHA-256 as Elasticsearch prints it (lower-case
	// hex, no colons).
	CA            *CA
	CAFile        string
	CAFingerprint string
	// User and Password are a superuser of the file realm.
	User, Password string
	// WeakUser and WeakPassword are a user whose role has the cluster's
	// monitor privilege and only read on indices.
	WeakUser, WeakPassword string
	// Home is the distribution (ES_HOME), Conf the node's configuration
	// directory (ES_PATH_CONF: roles.yml, users, users_roles), JavaHome
	// its ES_JAVA_HOME and RunAs the system user it runs as ("" when this
	// process is not root).
	Home, Conf, JavaHome, RunAs string

	dir  string
	cred *syscall.Credential
	cmd  *exec.Cmd
	done chan struct{}
}

var (
	secureOnce sync.Once
	secureDone = make(chan struct{})
	secureNode *SecureNode
	secureErr  error
)

// secureWait bounds the node's start (install checks, the JVM, security).
const secureWait = 4 * time.Minute

// SecuredElasticsearch returns the secured node of this test binary,
// starting it on first use (scripts/services.sh installs what it needs).
// It is stopped by Main, and when the test binary dies without Main its
// launcher gets SIGKILL (Pdeathsig) and the server exits with it. When
// it cannot be had, t fails under CI=true and is skipped loudly otherwise.
func SecuredElasticsearch(t testing.TB) *SecureNode {
	t.Helper()
	StartSecuredElasticsearch()
	<-secureDone
	if secureErr != nil {
		unavailable(t, "a secured Elasticsearch node", secureErr.Error())
	}
	return secureNode
}

// StartSecuredElasticsearch starts the secured node of this test binary
// in the background, if it is not started yet, for SecuredElasticsearch to
// wait for: a test can build or load meanwhile.
func StartSecuredElasticsearch() {
	secureOnce.Do(func() {
		go func() {
			n, err := startSecure()
			secureMu.Lock()
			secureNode, secureErr = n, err
			secureMu.Unlock()
			close(secureDone)
		}()
	})
}

// secureMu guards secureNode against stopSecure.
var secureMu sync.Mutex

// ESEnv is the environment of the distribution's tools
// (bin/elasticsearch-users and the like) for this node.
func (n *SecureNode) ESEnv() []string {
	return []string{"PATH=/usr/bin:/bin", "HOME=" + n.dir, "LANG=C.UTF-8", "ES_HOME=" + n.Home,
		"ES_PATH_CONF=" + n.Conf, "ES_JAVA_HOME=" + n.JavaHome, "ES_TMPDIR=" + filepath.Join(n.dir, "tmp")}
}

// OwnConf gives the files of the node's configuration directory back to
// the user the node runs as (after a tool run as root wrote some).
func (n *SecureNode) OwnConf() error {
	if n.cred == nil {
		return nil
	}
	return filepath.Walk(n.Conf, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(n.cred.Uid), int(n.cred.Gid))
	})
}

// Client is an HTTP client that trusts the node's CA.
func (n *SecureNode) Client() *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(n.CA.Cert)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}
}

// Authenticates reports whether user:password is accepted by the node
// (GET /_security/_authenticate answers 200).
func (n *SecureNode) Authenticates(user, password string) bool {
	req, _ := http.NewRequest(http.MethodGet, n.URL+"/_security/_authenticate", nil)
	req.SetBasicAuth(user, password)
	res, err := n.Client().Do(req)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

func startSecure() (*SecureNode, error) {
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
	n := &SecureNode{Home: vals["ES_HOME"], JavaHome: vals["ES_JAVA_HOME"], RunAs: vals["ES_USER"],
		User: "admin", Password: randomSecret(), WeakUser: "weak", WeakPassword: randomSecret()}
	if n.Home == "" || n.JavaHome == "" {
		return nil, fmt.Errorf("scripts/services.sh paths printed no ES_HOME or ES_JAVA_HOME:\n%s", out)
	}
	if n.RunAs != "" {
		u, err := user.Lookup(n.RunAs)
		if err != nil {
			return nil, err
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		n.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// Not a t.TempDir: its parent is private to root, and the node runs
	// as the Elasticsearch user.
	removeStaleSecure()
	if n.dir, err = os.MkdirTemp("", "noticesd-essecure-"); err != nil {
		return nil, err
	}
	// owner.pid: a later binary deletes the directory once this one is
	// gone (its node dies with it, but nothing else removes the files).
	if err := os.WriteFile(filepath.Join(n.dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			n.stop()
		}
	}()
	if err := n.layout(); err != nil {
		return nil, err
	}
	if err := n.start(); err != nil {
		return nil, err
	}
	// The two users, while the node starts (each run of the tool is a
	// JVM; the node picks the files up when they change).
	for _, u := range [][3]string{{n.User, n.Password, "superuser"}, {n.WeakUser, n.WeakPassword, "weak"}} {
		if out, err := n.Tool(ctx, "elasticsearch-users", "useradd", u[0], "-p", u[1], "-r", u[2]); err != nil {
			return nil, fmt.Errorf("elasticsearch-users useradd %s: %w:\n%s", u[0], err, trimmed(out, 20))
		}
	}
	if err := n.waitReady(secureWait); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, n.logs())
	}
	for deadline := time.Now().Add(time.Minute); !n.Authenticates(n.WeakUser, n.WeakPassword); time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			return nil, errors.New("the secured Elasticsearch node does not accept its weak user a minute after it answered")
		}
	}
	ok = true
	return n, nil
}

// Tool runs one of the distribution's tools (bin/NAME) on the node's
// configuration, as the user the node runs as, and returns its output.
func (n *SecureNode) Tool(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(n.Home, "bin", name), args...)
	cmd.Env = n.ESEnv()
	cmd.Dir = n.dir
	if n.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: n.cred}
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// layout writes the node's certificates, configuration and roles.
func (n *SecureNode) layout() error {
	if err := os.Chmod(n.dir, 0o755); err != nil {
		return err
	}
	n.Conf = filepath.Join(n.dir, "config")
	if err := os.CopyFS(n.Conf, os.DirFS(filepath.Join(n.Home, "config"))); err != nil {
		return err
	}
	for _, d := range []string{"data", "logs", "tmp", "config/certs"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			return err
		}
	}
	ca, err := NewCA("noticesd test CA")
	if err != nil {
		return err
	}
	n.CA = ca
	n.CAFingerprint = ca.Fingerprint()
	n.CAFile = filepath.Join(n.dir, "ca.crt")
	if err := os.WriteFile(n.CAFile, ca.CertPEM(), 0o644); err != nil {
		return err
	}
	certPEM, keyPEM, err := ca.Issue("127.0.0.1", "localhost")
	if err != nil {
		return err
	}
	// The node presents its chain (its certificate, then the CA's), as
	// one Elasticsearch sets up itself does: a client pinning the CA's
	// fingerprint finds it in the handshake.
	if err := os.WriteFile(filepath.Join(n.Conf, "certs", "node.crt"), append(certPEM, ca.CertPEM()...), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.Conf, "certs", "node.key"), keyPEM, 0o600); err != nil {
		return err
	}
	httpPort, transport, err := twoPorts()
	if err != nil {
		return err
	}
	n.URL = "https://127.0.0.1:" + strconv.Itoa(httpPort)
	// discovery.type single-node: no other node joins, so transport TLS,
	// which security needs between nodes, is not needed (and the bootstrap
	// checks that ask for it do not apply on loopback).
	yml := fmt.Sprintf(`cluster.name: noticesd-secure
node.name: noticesd-secure
path.data: %s
path.logs: %s
discovery.type: single-node
network.host: 127.0.0.1
http.port: %d
transport.port: %d
xpack.security.enabled: true
xpack.security.http.ssl.enabled: true
xpack.security.http.ssl.certificate: certs/node.crt
xpack.security.http.ssl.key: certs/node.key
cluster.routing.allocation.disk.threshold_enabled: false
`, filepath.Join(n.dir, "data"), filepath.Join(n.dir, "logs"), httpPort, transport)
	if err := os.WriteFile(filepath.Join(n.Conf, "elasticsearch.yml"), []byte(yml), 0o644); err != nil {
		return err
	}
	// The weak role: the cluster's health, and reading any index, but
	// neither managing nor writing one.
	roles := "\nweak:\n  cluster: [monitor]\n  indices:\n    - names: ['*']\n      privileges: [read]\n"
	f, err := os.OpenFile(filepath.Join(n.Conf, "roles.yml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(roles); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if n.cred == nil {
		return nil
	}
	return filepath.Walk(n.dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(n.cred.Uid), int(n.cred.Gid))
	})
}

// removeStaleSecure deletes the directories of secured nodes whose test
// binary has exited.
func removeStaleSecure() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "noticesd-essecure-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
}

// twoPorts are two loopback ports nobody listens on now.
func twoPorts() (int, int, error) {
	var ports [2]int
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		defer ln.Close()
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports[0], ports[1], nil
}

// start launches the node (not waiting for it).
func (n *SecureNode) start() error {
	console, err := os.OpenFile(filepath.Join(n.dir, "console.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(n.Home, "bin", "elasticsearch"))
	cmd.Dir = n.dir
	cmd.Env = append(n.ESEnv(), "ES_JAVA_OPTS=-Xms512m -Xmx512m")
	cmd.Stdout, cmd.Stderr = console, console
	// Its own process group (stop reaches the launcher and the server JVM
	// it forks), and SIGKILL to the launcher when this process dies; the
	// server exits when its launcher does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: n.cred}
	if err := cmd.Start(); err != nil {
		console.Close()
		return fmt.Errorf("start the secured node: %w", err)
	}
	n.cmd, n.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); console.Close(); close(n.done) }()
	return nil
}

// waitReady waits until the node answers its cluster health, yellow or
// green, to the superuser.
func (n *SecureNode) waitReady(limit time.Duration) error {
	cl := n.Client()
	cl.Timeout = 5 * time.Second
	deadline := time.Now().Add(limit)
	var last string
	for {
		req, _ := http.NewRequest(http.MethodGet, n.URL+"/_cluster/health?wait_for_status=yellow&timeout=1s", nil)
		req.SetBasicAuth(n.User, n.Password)
		res, err := cl.Do(req)
		if err == nil {
			var h struct {
				Status string `json:"status"`
			}
			derr := json.NewDecoder(res.Body).Decode(&h)
			res.Body.Close()
			if res.StatusCode == http.StatusOK && derr == nil && (h.Status == "yellow" || h.Status == "green") {
				return nil
			}
			last = fmt.Sprintf("HTTP %d, status %q", res.StatusCode, h.Status)
		} else {
			last = err.Error()
		}
		select {
		case <-n.done:
			return errors.New("the secured Elasticsearch node exited while starting")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the secured Elasticsearch node did not answer a yellow health within %s (last: %s)", limit, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// logs is the end of the node's console log, for a failure message.
func (n *SecureNode) logs() string {
	data, _ := os.ReadFile(filepath.Join(n.dir, "console.log"))
	return "---- secured node console.log (end):\n" + trimmed(string(data), 60)
}

// stop stops the node (SIGTERM, SIGKILL after 30 s) and deletes its
// directory.
func (n *SecureNode) stop() {
	if n.cmd != nil {
		pg := n.cmd.Process.Pid
		_ = syscall.Kill(-pg, syscall.SIGTERM)
		if !secureGone(pg, 30*time.Second) {
			_ = syscall.Kill(-pg, syscall.SIGKILL)
			secureGone(pg, 10*time.Second)
		}
	}
	if n.dir != "" {
		_ = os.RemoveAll(n.dir)
	}
}

// secureGone waits until no process of group pgid is left.
func secureGone(pgid int, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
	}
	return false
}

// stopSecure stops the secured node, if this binary started one (Main).
func stopSecure() {
	select {
	case <-secureDone:
	default:
		return // not started, or still starting (it stops when this process exits)
	}
	secureMu.Lock()
	defer secureMu.Unlock()
	if secureNode != nil {
		secureNode.stop()
	}
}

// randomSecret is a password of 24 hex digits.
func randomSecret() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CA is a certificate authority of a test's own.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a CA (ECDSA P-256, valid for a day).
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key}, nil
}

// CertPEM is the CA's certificate in PEM.
func (c *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Cert.Raw})
}

// Fingerprint is the SHA-256 of the CA's certificate, lower-case hex.
func (c *CA) Fingerprint() string {
	sum := sha256.Sum256(c.Cert.Raw)
	return hex.EncodeToString(sum[:])
}

// Issue makes a server certificate for hosts (IP addresses or names)
// signed by the CA, and returns it and its key in PEM. It serves as a
// client certificate too: a Redis Cluster node presents its certificate
// to the other nodes as a client.
func (c *CA) Issue(hosts ...string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.Cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

// serial is a random certificate serial number.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}
