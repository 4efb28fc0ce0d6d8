//go:build unix

package testservers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A secured cluster (TLS only, an ACL user) is reached with rediss://, its
// CA and the user's password, and nothing else: a plain connection, a
// connection without the password and one trusting another CA are each
// refused; its replicas sync as the ACL user (WAIT 1 on a key's master
// answers 1) and MasterOf names masters by their TLS port.
func TestSecuredClusterTopology(t *testing.T) {
	if testing.Short() {
		t.Skip("starts six redis-server processes")
	}
	top := StartRedisClusterWith(t, ClusterOptions{TLS: true, User: SecuredUser, Password: SecuredPassword})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !strings.HasPrefix(top.URL, "rediss://"+SecuredUser+":"+SecuredPassword+"@127.0.0.1:") {
		t.Fatalf("URL %s, want rediss:// with the user and password", top.URL)
	}
	trusting := func(caFile string) *tls.Config {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(pem)
		return &tls.Config{RootCAs: roots}
	}
	o, err := redis.ParseClusterURL(top.URL)
	if err != nil {
		t.Fatal(err)
	}
	o.TLSConfig = trusting(top.CAFile)
	rdb := redis.NewClusterClient(o)
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET over TLS as %s: %v", SecuredUser, err)
	}
	master, err := top.MasterOf(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	m, err := rdb.MasterForKey(ctx, "k")
	if err != nil || m.Options().Addr != master {
		t.Fatalf("MasterOf(k) = %s; the cluster client's master of k is %v (%v)", master, m, err)
	}
	if n, err := m.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 on %s: %d replicas, %v; want the replica synced as %s", master, n, err, SecuredUser)
	}
	for _, c := range []struct {
		name string
		opts redis.Options
		want string
	}{
		{"plain TCP", redis.Options{Username: SecuredUser, Password: SecuredPassword}, "EOF"},
		{"no password", redis.Options{TLSConfig: trusting(top.CAFile)}, "NOAUTH"},
		{"wrong password", redis.Options{TLSConfig: trusting(top.CAFile), Username: SecuredUser, Password: "wrong"}, "WRONGPASS"},
		{"another CA", redis.Options{TLSConfig: trusting(top.OtherCAFile), Username: SecuredUser, Password: SecuredPassword}, "x509"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Addr, c.opts.MaxRetries = master, -1
			cl := redis.NewClient(&c.opts)
			defer cl.Close()
			if err := cl.Get(ctx, "k").Err(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("GET k: %v; want an error with %q", err, c.want)
			}
		})
	}
}
