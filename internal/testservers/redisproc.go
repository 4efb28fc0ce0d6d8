//go:build unix

package testservers

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisProc is a redis-server process one test started on loopback, in a
// directory of its own; it is killed when the test ends.
type RedisProc struct {
	// Addr is 127.0.0.1:port (the TLS port when started with TLS).
	Addr string
	cmd  *exec.Cmd
	log  string
}

// startRedisProc starts redis-server with args after the loopback
// defaults (no snapshots, no AOF) and waits until it is ready. tls makes
// the port a TLS port (--port 0 --tls-port). Without redis-server on PATH
// the test fails under CI=true and is skipped loudly otherwise.
func startRedisProc(t testing.TB, name string, tlsPort bool, args ...string) *RedisProc {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server ("+name+")", "no redis-server on PATH: apt-get install redis-server (scripts/services.sh install does)")
		return nil
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	p := &RedisProc{Addr: "127.0.0.1:" + strconv.Itoa(port), log: filepath.Join(dir, "redis.log")}
	all := []string{"--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no", "--logfile", p.log}
	if tlsPort {
		all = append(all, "--port", "0", "--tls-port", strconv.Itoa(port))
	} else {
		all = append(all, "--port", strconv.Itoa(port))
	}
	p.cmd = exec.Command(bin, append(all, args...)...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start redis-server (%s): %v", name, err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, _ := os.ReadFile(p.log)
		if strings.Contains(string(b), "Ready to accept connections") {
			return p
		}
		if time.Now().After(deadline) || (p.cmd.ProcessState != nil) {
			t.Fatalf("redis-server (%s) not ready after 15 s; its log:\n%s", name, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Pause stops the process (SIGSTOP) until Resume: it keeps its
// connections open but answers nothing, as a stalled server does.
func (p *RedisProc) Pause(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// Resume continues a paused process (SIGCONT).
func (p *RedisProc) Resume(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Replicated is a Redis primary and one replica of it, each a
// redis-server process of this test (StartReplicated).
type Replicated struct {
	// PrimaryURL and ReplicaURL are redis:// URLs of the two.
	PrimaryURL, ReplicaURL string
	// Replica is the replica's process (Pause it to stall replication).
	Replica *RedisProc
}

// StartReplicated starts a primary and a replica (replicaof) and waits
// until the replica has synced and the primary counts it.
func StartReplicated(t testing.TB) *Replicated {
	t.Helper()
	primary := startRedisProc(t, "primary", false)
	if primary == nil {
		return nil
	}
	host, port, _ := net.SplitHostPort(primary.Addr)
	replica := startRedisProc(t, "replica", false, "--replicaof", host, port)
	r := &Replicated{PrimaryURL: "redis://" + primary.Addr + "/0", ReplicaURL: "redis://" + replica.Addr + "/0", Replica: replica}
	pc := redis.NewClient(&redis.Options{Addr: primary.Addr})
	defer pc.Close()
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer rc.Close()
	ctx := context.Background()
	deadline := time.Now().Add(15 * time.Second)
	for {
		pi, _ := pc.Info(ctx, "replication").Result()
		ri, _ := rc.Info(ctx, "replication").Result()
		if strings.Contains(pi, "connected_slaves:1") && strings.Contains(ri, "master_link_status:up") {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not sync within 15 s:\nprimary: %s\nreplica: %s", pi, ri)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SecuredUser and SecuredPassword are the ACL user of StartSecured, and
// SecuredACL its rule (what noticesd needs: docs/operating.md, "Secured
// Redis").
const (
	SecuredUser     = "noticesd"
	SecuredPassword = "s3cret-Redis-pass"
	SecuredACL      = "on >" + SecuredPassword + " ~* &* +@all"
)

// Secured is a redis-server of this test with TLS only (no plain port),
// a default user that needs a password and an ACL user for noticesd.
type Secured struct {
	// URL is rediss://noticesd:<password>@127.0.0.1:port/0.
	URL string
	// CAFile is the PEM of the CA that signed the server's certificate
	// (NOTICES_REDIS_CA_FILE); OtherCAFile a CA that did not.
	CAFile, OtherCAFile string
	// Proc is the server process.
	Proc *RedisProc
}

// StartSecured starts a Secured Redis: certificates made here with
// crypto/x509 (a CA and a server certificate for 127.0.0.1 and
// localhost), --tls-port only, --tls-auth-clients no, requirepass for the
// default user and the ACL user SecuredUser with SecuredACL.
func StartSecured(t testing.TB) *Secured {
	t.Helper()
	dir := t.TempDir()
	ca, caKey := newCA(t, "noticesd test Redis CA")
	other, _ := newCA(t, "some other CA")
	s := &Secured{CAFile: filepath.Join(dir, "ca.pem"), OtherCAFile: filepath.Join(dir, "other-ca.pem")}
	writePEM(t, s.CAFile, "CERTIFICATE", ca.Raw)
	writePEM(t, s.OtherCAFile, "CERTIFICATE", other.Raw)
	certFile, keyFile := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	serverCert(t, ca, caKey, certFile, keyFile)
	args := []string{"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", s.CAFile,
		"--tls-auth-clients", "no", "--requirepass", "default-" + SecuredPassword, "--user", SecuredUser}
	s.Proc = startRedisProc(t, "secured", true, append(args, strings.Fields(SecuredACL)...)...)
	if s.Proc == nil {
		return nil
	}
	s.URL = (&url.URL{Scheme: "rediss", User: url.UserPassword(SecuredUser, SecuredPassword), Host: s.Proc.Addr, Path: "/0"}).String()
	return s
}

func newCA(t testing.TB, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func serverCert(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", kb)
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
