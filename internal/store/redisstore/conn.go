package redisstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/metrics"
)

// Target is where scale mode's Redis is and how to reach it: the
// NOTICES_REDIS_* settings. Every Redis client of the process (the store,
// asynq, the request limiter, leases, arrivals, the screen copy, the CLI)
// is made from one Target by Dial or Connect.
type Target struct {
	// URL is NOTICES_REDIS_URL: redis://user:password@host:port/db, or
	// rediss:// for TLS. With Sentinels its host is ignored; its user,
	// password, db and scheme apply to the data nodes.
	URL string
	// CAFile is NOTICES_REDIS_CA_FILE: PEM roots trusted for rediss://
	// ("" trusts the system's roots).
	CAFile string
	// Sentinels is NOTICES_REDIS_SENTINELS (host:port each); with them the
	// client asks the Sentinels for the primary of Master and follows a
	// failover. They are reached with the same TLS setting as the data
	// nodes (rediss:// means TLS to the Sentinels too).
	Sentinels []string
	// Master is NOTICES_REDIS_MASTER, the name the Sentinels monitor.
	Master string
	// SentinelPassword is NOTICES_REDIS_SENTINEL_PASSWORD.
	SentinelPassword string
	// ClusterURL is NOTICES_REDIS_CLUSTER_URL: a Redis Cluster in
	// go-redis's cluster URL form (redis.ParseClusterURL), used instead of
	// URL and the Sentinels when set.
	ClusterURL string
}

// Cluster reports whether t is a Redis Cluster.
func (t Target) Cluster() bool { return t.ClusterURL != "" }

// setting is the setting that names where Redis is.
func (t Target) setting() string {
	if t.Cluster() {
		return "NOTICES_REDIS_CLUSTER_URL"
	}
	return "NOTICES_REDIS_URL"
}

// TargetOf returns the Redis settings of cfg.
func TargetOf(cfg config.Config) Target {
	return Target{URL: cfg.RedisURL, CAFile: cfg.RedisCAFile, Sentinels: cfg.RedisSentinels,
		Master: cfg.RedisMaster, SentinelPassword: cfg.RedisSentinelPassword, ClusterURL: cfg.RedisClusterURL}
}

// URLTarget is a Target of one Redis at url (tests, tools).
func URLTarget(url string) Target { return Target{URL: url} }

// ClusterTarget is a Target of the Redis Cluster at url, in go-redis's
// cluster URL form (tests, tools).
func ClusterTarget(url string) Target { return Target{ClusterURL: url} }

// Client timeouts: a Redis that is down or stalled fails a call within
// seconds, never hangs it. readTimeout is above WaitTimeout, so that a
// WAIT ends by its own timeout, not the socket's.
const (
	dialTimeout  = 2 * time.Second
	readTimeout  = 3 * time.Second
	writeTimeout = 3 * time.Second
)

// Dial opens a go-redis client of t with the timeouts the service uses,
// without contacting the server: a single-node client, with Sentinels a
// failover client (redis.NewFailoverClient), or with a cluster URL a
// cluster client (redis.NewClusterClient), which finds the other nodes
// from the ones the URL names and follows MOVED and ASK redirects and
// failovers. The URL's password never appears in an error.
func Dial(t Target) (redis.UniversalClient, error) {
	quietClientLog.Do(func() { redis.SetLogger(clientLog{}) })
	if t.Cluster() {
		return dialCluster(t)
	}
	o, err := redis.ParseURL(t.URL)
	if err != nil {
		return nil, &config.SettingError{Setting: "NOTICES_REDIS_URL",
			Message: fmt.Sprintf("NOTICES_REDIS_URL=%q: %v", config.RedactURL(t.URL), err)}
	}
	if o.TLSConfig != nil && t.CAFile != "" {
		if o.TLSConfig.RootCAs, err = caRoots(t.CAFile); err != nil {
			return nil, err
		}
	}
	if len(t.Sentinels) == 0 {
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = dialTimeout, readTimeout, writeTimeout
		o.MaxRetries, o.DialerRetries = 1, 2
		return redis.NewClient(o), nil
	}
	if o.TLSConfig != nil {
		// The URL's host is not the server: each connection checks the
		// certificate against the address it dials (the primary's, as a
		// Sentinel reports it, or the Sentinel's).
		o.TLSConfig.ServerName = ""
	}
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:       t.Master,
		SentinelAddrs:    t.Sentinels,
		SentinelPassword: t.SentinelPassword,
		Username:         o.Username,
		Password:         o.Password,
		DB:               o.DB,
		TLSConfig:        o.TLSConfig,
		DialTimeout:      dialTimeout,
		ReadTimeout:      readTimeout,
		WriteTimeout:     writeTimeout,
		MaxRetries:       1,
		DialerRetries:    2,
	}), nil
}

// dialCluster is Dial of a Redis Cluster: the URL parsed by go-redis
// (redis.ParseClusterURL), the service's timeouts where the URL sets none.
// MaxRetries stays go-redis's cluster default, as a retry is how a command
// follows a MOVED or ASK redirect and a failover.
func dialCluster(t Target) (redis.UniversalClient, error) {
	o, err := redis.ParseClusterURL(t.ClusterURL)
	if err != nil {
		return nil, &config.SettingError{Setting: "NOTICES_REDIS_CLUSTER_URL",
			Message: fmt.Sprintf("NOTICES_REDIS_CLUSTER_URL=%q: %v", config.RedactURL(t.ClusterURL), err)}
	}
	if o.TLSConfig != nil {
		// Each node is dialled at the address the cluster reports for it:
		// its certificate is checked against that address, not the URL's
		// host.
		o.TLSConfig.ServerName = ""
		if t.CAFile != "" {
			if o.TLSConfig.RootCAs, err = caRoots(t.CAFile); err != nil {
				return nil, err
			}
		}
	}
	for _, d := range []struct {
		at  *time.Duration
		def time.Duration
	}{{&o.DialTimeout, dialTimeout}, {&o.ReadTimeout, readTimeout}, {&o.WriteTimeout, writeTimeout}} {
		if *d.at == 0 {
			*d.at = d.def
		}
	}
	c := redis.NewClusterClient(o)
	c.OnNewNode(func(node *redis.Client) { node.AddHook(metrics.RedirectHook) }) // noticesd_redis_redirects_total
	return c, nil
}

// caRoots reads NOTICES_REDIS_CA_FILE.
func caRoots(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, &config.SettingError{Setting: "NOTICES_REDIS_CA_FILE", Message: fmt.Sprintf("NOTICES_REDIS_CA_FILE: %v", err)}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, &config.SettingError{Setting: "NOTICES_REDIS_CA_FILE",
			Message: fmt.Sprintf("NOTICES_REDIS_CA_FILE=%s holds no PEM certificate", file)}
	}
	return roots, nil
}

// Connect is Dial, then a check within 10 s that the server answers and
// accepts the settings. A setting the server refuses is a
// *config.SettingError naming it (exit 2): a password it refuses
// (NOTICES_REDIS_URL), a certificate the CA does not verify
// (NOTICES_REDIS_CA_FILE), Sentinels that do not answer
// (NOTICES_REDIS_SENTINELS), refuse their password
// (NOTICES_REDIS_SENTINEL_PASSWORD) or do not know the master
// (NOTICES_REDIS_MASTER). A Sentinel password given to Sentinels that ask
// for none is let through by them, so it is a warning in the log naming
// NOTICES_REDIS_SENTINEL_PASSWORD. A Redis that simply does not answer is
// backend_unavailable naming the server (its password masked) and what to
// do, rather than a failure at the first step that needed it.
func Connect(ctx context.Context, t Target) (redis.UniversalClient, error) {
	rdb, err := Dial(t)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if len(t.Sentinels) > 0 && !t.Cluster() {
		if err := checkSentinels(pctx, t); err != nil {
			_ = rdb.Close()
			return nil, err
		}
	}
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, connectError(t, err)
	}
	return rdb, nil
}

// connectError turns the failed first PING into a SettingError when a
// setting is at fault, backend_unavailable otherwise.
func connectError(t Target, err error) error {
	shown, setting := config.RedactURL(t.URL), t.setting()
	switch {
	case t.Cluster():
		shown = "the cluster " + config.RedactURL(t.ClusterURL)
	case len(t.Sentinels) > 0:
		shown = fmt.Sprintf("the primary of %q (Sentinels %s)", t.Master, strings.Join(t.Sentinels, ","))
	}
	switch {
	case authError(err):
		return &config.SettingError{Setting: setting, Message: fmt.Sprintf(
			"Redis at %s refuses the user and password of %s (%v); correct them (redis://user:password@host:port/db)", shown, setting, err)}
	case certError(err):
		return &config.SettingError{Setting: "NOTICES_REDIS_CA_FILE", Message: fmt.Sprintf(
			"the TLS certificate of Redis at %s is not trusted (%v); set NOTICES_REDIS_CA_FILE to the PEM of the CA that signed it (and check the URL's host is a name in the certificate)", shown, err)}
	case strings.Contains(err.Error(), "first record does not look like a TLS handshake"):
		return &config.SettingError{Setting: setting, Message: fmt.Sprintf(
			"Redis at %s does not speak TLS; use redis:// in %s, not rediss://", shown, setting)}
	}
	return fmt.Errorf("open Redis at %s: %w", shown, errs.New(errs.BackendUnavailable,
		"Redis does not answer (%v); start it or correct %s, then retry", err, setting))
}

// checkSentinels asks every Sentinel for the primary of t.Master; one
// answer suffices. Otherwise it says which setting is wrong: the master
// name when a Sentinel answered without knowing it, the Sentinel password
// when one refused it, else the Sentinel list (none answered).
func checkSentinels(ctx context.Context, t Target) error {
	o, err := redis.ParseURL(t.URL)
	if err != nil {
		return err // Dial has parsed it already
	}
	var tlsc *tls.Config
	if o.TLSConfig != nil {
		tlsc = o.TLSConfig.Clone()
		tlsc.ServerName = ""
		if t.CAFile != "" {
			pem, _ := os.ReadFile(t.CAFile)
			tlsc.RootCAs = x509.NewCertPool()
			tlsc.RootCAs.AppendCertsFromPEM(pem)
		}
	}
	type answer struct {
		addr string
		err  error
	}
	answers := make(chan answer, len(t.Sentinels))
	for _, addr := range t.Sentinels {
		go func() {
			sc := redis.NewSentinelClient(&redis.Options{Addr: addr, Password: t.SentinelPassword, TLSConfig: tlsc,
				DialTimeout: dialTimeout, ReadTimeout: readTimeout, WriteTimeout: writeTimeout, MaxRetries: -1})
			defer sc.Close()
			_, err := sc.GetMasterAddrByName(ctx, t.Master).Result()
			answers <- answer{addr, err}
		}()
	}
	var unknown, refused, other []string
	var certErr error
	for range t.Sentinels {
		a := <-answers
		switch {
		case a.err == nil:
			if t.SentinelPassword != "" && sentinelOpen(ctx, a.addr, tlsc) {
				slog.Default().WarnContext(ctx, "NOTICES_REDIS_SENTINEL_PASSWORD is set, but the Sentinel at "+a.addr+
					" asks for no password and accepts any: unset NOTICES_REDIS_SENTINEL_PASSWORD, or give the Sentinels that password (requirepass, or ACL SETUSER default >password, in their config)",
					"setting", "NOTICES_REDIS_SENTINEL_PASSWORD", "sentinel", a.addr)
			}
			return nil
		case errors.Is(a.err, redis.Nil):
			unknown = append(unknown, a.addr)
		case authError(a.err):
			refused = append(refused, a.addr)
		case certError(a.err):
			certErr = a.err
			other = append(other, fmt.Sprintf("%s: %v", a.addr, a.err))
		default:
			other = append(other, fmt.Sprintf("%s: %v", a.addr, a.err))
		}
	}
	switch {
	case len(unknown) > 0:
		return &config.SettingError{Setting: "NOTICES_REDIS_MASTER", Message: fmt.Sprintf(
			"the Sentinels %s monitor no master named %q; set NOTICES_REDIS_MASTER to the name of their 'sentinel monitor' line", strings.Join(unknown, ","), t.Master)}
	case len(refused) > 0:
		return &config.SettingError{Setting: "NOTICES_REDIS_SENTINEL_PASSWORD", Message: fmt.Sprintf(
			"the Sentinels %s refuse NOTICES_REDIS_SENTINEL_PASSWORD (set it to their requirepass, or unset it if they have none)", strings.Join(refused, ","))}
	case certErr != nil:
		return &config.SettingError{Setting: "NOTICES_REDIS_CA_FILE", Message: fmt.Sprintf(
			"the TLS certificates of the Sentinels are not trusted (%s); set NOTICES_REDIS_CA_FILE to the PEM of the CA that signed them", strings.Join(other, "; "))}
	}
	return &config.SettingError{Setting: "NOTICES_REDIS_SENTINELS", Message: fmt.Sprintf(
		"none of the Sentinels of NOTICES_REDIS_SENTINELS answers (%s); start them or correct the list", strings.Join(other, "; "))}
}

// sentinelOpen reports whether the Sentinel at addr answers a client
// without a password: then it asks for none, and a Sentinel password
// given is accepted (Redis 6 lets any password through for a user with
// nopass) but protects nothing.
func sentinelOpen(ctx context.Context, addr string, tlsc *tls.Config) bool {
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr, TLSConfig: tlsc,
		DialTimeout: dialTimeout, ReadTimeout: readTimeout, WriteTimeout: writeTimeout, MaxRetries: -1})
	defer sc.Close()
	return sc.Ping(ctx).Err() == nil
}

// authError reports whether err is Redis refusing the credentials.
func authError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"WRONGPASS", "NOAUTH", "invalid username-password", "without any password configured", "invalid password"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// certError reports whether err is a TLS certificate that did not verify.
func certError(err error) bool {
	var verr *tls.CertificateVerificationError
	var uerr x509.UnknownAuthorityError
	var herr x509.HostnameError
	var cerr x509.CertificateInvalidError
	return errors.As(err, &verr) || errors.As(err, &uerr) || errors.As(err, &herr) || errors.As(err, &cerr) ||
		strings.Contains(err.Error(), "x509: ")
}

// quietClientLog routes go-redis's own log lines (a failed dial of its
// pool, printed to stderr in the standard log format with a source line)
// to the process's logger at debug level, once per process: the failure
// reaches the caller as an error (backend_unavailable) anyway.
var quietClientLog sync.Once

type clientLog struct{}

func (clientLog) Printf(ctx context.Context, format string, v ...any) {
	slog.Default().DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}

// ForEachMaster calls fn with the client of each master: every master of
// a Redis Cluster (at once, its view of the cluster reloaded first), the
// one server (or Sentinel primary) otherwise. For what a master answers
// for its own keys only: SCAN, INFO, CONFIG.
func ForEachMaster(ctx context.Context, rdb redis.UniversalClient, fn func(ctx context.Context, m *redis.Client) error) error {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	}
	return fmt.Errorf("redisstore: a Redis client of type %T is not supported", rdb)
}

// scanKeys calls fn with each batch of the keys matching pattern (SCAN
// MATCH pattern COUNT count), over every master of a Redis Cluster, one at
// a time (fn needs no lock).
func scanKeys(ctx context.Context, rdb redis.UniversalClient, pattern string, count int64, fn func(keys []string) error) error {
	var mu sync.Mutex
	return ForEachMaster(ctx, rdb, func(ctx context.Context, m *redis.Client) error {
		return scanPages(func(c uint64) ([]string, uint64, error) {
			return m.Scan(ctx, c, pattern, count).Result()
		}, func(keys []string) error {
			if len(keys) == 0 {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			return fn(keys)
		})
	})
}
