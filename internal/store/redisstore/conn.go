package redisstore

import (
	"cmp"
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

// Client timeouts: a Redis that is down or stalled fails a call within
// seconds, never hangs it. readTimeout is above WaitTimeout, so that a
// WAIT ends by its own timeout, not the socket's.
const (
	dialTimeout  = 2 * time.Second
	readTimeout  = 3 * time.Second
	writeTimeout = 3 * time.Second
	// clusterReload bounds how old a cluster client's slot map gets: a
	// dead master refuses connections without a MOVED, so only a reload
	// finds its promoted replica (go-redis's default, 60 s, was the 503
	// window of TestRedisClusterMasterLoss).
	clusterReload = time.Second
)

// Dial opens a go-redis client of c's Redis settings (NOTICES_REDIS_*) with
// the timeouts the service uses, without contacting the server (every Redis
// client of the process, shared by the store, asynq, the limiter and the
// leases, is made by Dial or Connect): a single-node client, with Sentinels a
// failover client (redis.NewFailoverClient), or with a cluster URL a
// cluster client (redis.NewClusterClient), which finds the other nodes
// from the ones the URL names and follows MOVED and ASK redirects and
// failovers. The URL's password never appears in an error.
func Dial(c config.Config) (redis.UniversalClient, error) {
	quietClientLog.Do(func() { redis.SetLogger(clientLog{}) })
	if c.RedisClusterURL != "" {
		return dialCluster(c)
	}
	o, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		return nil, &config.SettingError{Setting: "NOTICES_REDIS_URL",
			Message: fmt.Sprintf("NOTICES_REDIS_URL=%q: %v", config.RedactURL(c.RedisURL), err)}
	}
	// With Sentinels the URL's host is not the server: each connection
	// checks the certificate against the address it dials (the primary's,
	// as a Sentinel reports it, or the Sentinel's).
	if err := trust(o.TLSConfig, c.RedisCAFile, len(c.RedisSentinels) > 0); err != nil {
		return nil, err
	}
	if len(c.RedisSentinels) == 0 {
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = dialTimeout, readTimeout, writeTimeout
		o.MaxRetries, o.DialerRetries = 1, 2
		return redis.NewClient(o), nil
	}
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:       c.RedisMaster,
		SentinelAddrs:    c.RedisSentinels,
		SentinelPassword: c.RedisSentinelPassword,
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
func dialCluster(c config.Config) (redis.UniversalClient, error) {
	o, err := redis.ParseClusterURL(c.RedisClusterURL)
	if err != nil {
		return nil, &config.SettingError{Setting: "NOTICES_REDIS_CLUSTER_URL",
			Message: fmt.Sprintf("NOTICES_REDIS_CLUSTER_URL=%q: %v", config.RedactURL(c.RedisClusterURL), err)}
	}
	// Each node is dialled at the address the cluster reports for it: its
	// certificate is checked against that address, not the URL's host.
	if err := trust(o.TLSConfig, c.RedisCAFile, true); err != nil {
		return nil, err
	}
	o.DialTimeout = cmp.Or(o.DialTimeout, dialTimeout)
	o.ReadTimeout = cmp.Or(o.ReadTimeout, readTimeout)
	o.WriteTimeout = cmp.Or(o.WriteTimeout, writeTimeout)
	o.ClusterStateReloadInterval = cmp.Or(o.ClusterStateReloadInterval, clusterReload)
	cc := redis.NewClusterClient(o)
	cc.OnNewNode(func(node *redis.Client) { node.AddHook(metrics.RedirectHook) }) // noticesd_redis_redirects_total
	return cc, nil
}

// trust makes tc (nil without TLS) trust the roots of caFile
// (NOTICES_REDIS_CA_FILE) when set and, with anyHost, check a certificate
// against the address dialled rather than the URL's host.
func trust(tc *tls.Config, caFile string, anyHost bool) error {
	if tc == nil {
		return nil
	}
	if anyHost {
		tc.ServerName = ""
	}
	if caFile == "" {
		return nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return &config.SettingError{Setting: "NOTICES_REDIS_CA_FILE", Message: fmt.Sprintf("NOTICES_REDIS_CA_FILE: %v", err)}
	}
	tc.RootCAs = x509.NewCertPool()
	if !tc.RootCAs.AppendCertsFromPEM(pem) {
		return &config.SettingError{Setting: "NOTICES_REDIS_CA_FILE",
			Message: fmt.Sprintf("NOTICES_REDIS_CA_FILE=%s holds no PEM certificate", caFile)}
	}
	return nil
}

// Connect is Dial, then a check within 10 s that the server answers and
// accepts the settings: a setting it refuses is a *config.SettingError
// naming it (exit 2; docs/operating.md "Secured Redis" tables which), a
// Sentinel password the Sentinels need not is a warning in the log, and a
// Redis that simply does not answer is backend_unavailable naming the
// server (its password masked) and what to do.
func Connect(ctx context.Context, c config.Config) (redis.UniversalClient, error) {
	rdb, err := Dial(c)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if len(c.RedisSentinels) > 0 && c.RedisClusterURL == "" {
		// The Sentinels are reached with the data nodes' TLS settings.
		if err := checkSentinels(pctx, c, rdb.(*redis.Client).Options().TLSConfig); err != nil {
			_ = rdb.Close()
			return nil, err
		}
	}
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, connectError(c, err)
	}
	return rdb, nil
}

// connectError turns the failed first PING into a SettingError when a
// setting is at fault, backend_unavailable otherwise.
func connectError(c config.Config, err error) error {
	shown, setting := config.RedactURL(c.RedisURL), "NOTICES_REDIS_URL"
	switch {
	case c.RedisClusterURL != "":
		setting = "NOTICES_REDIS_CLUSTER_URL"
		shown = "the cluster " + config.RedactURL(c.RedisClusterURL)
	case len(c.RedisSentinels) > 0:
		shown = fmt.Sprintf("the primary of %q (Sentinels %s)", c.RedisMaster, strings.Join(c.RedisSentinels, ","))
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

// checkSentinels asks every Sentinel for the primary of c.RedisMaster; one
// answer suffices. Otherwise it says which setting is wrong: the master
// name when a Sentinel answered without knowing it, the Sentinel password
// when one refused it, else the Sentinel list (none answered).
func checkSentinels(ctx context.Context, c config.Config, tlsc *tls.Config) error {
	type answer struct {
		addr string
		err  error
	}
	answers := make(chan answer, len(c.RedisSentinels))
	for _, addr := range c.RedisSentinels {
		go func() {
			sc := sentinelClient(addr, c.RedisSentinelPassword, tlsc)
			defer sc.Close()
			_, err := sc.GetMasterAddrByName(ctx, c.RedisMaster).Result()
			answers <- answer{addr, err}
		}()
	}
	var unknown, refused, other []string
	untrusted := false
	for range c.RedisSentinels {
		a := <-answers
		switch {
		case a.err == nil:
			if c.RedisSentinelPassword != "" && sentinelOpen(ctx, sentinelClient(a.addr, "", tlsc)) {
				slog.Default().WarnContext(ctx, "NOTICES_REDIS_SENTINEL_PASSWORD is set, but the Sentinel at "+a.addr+
					" asks for no password and accepts any: unset NOTICES_REDIS_SENTINEL_PASSWORD, or give the Sentinels that password (requirepass, or ACL SETUSER default >password, in their config)",
					"setting", "NOTICES_REDIS_SENTINEL_PASSWORD", "sentinel", a.addr)
			}
			return nil
		case errors.Is(a.err, redis.Nil):
			unknown = append(unknown, a.addr)
		case authError(a.err):
			refused = append(refused, a.addr)
		default:
			untrusted = untrusted || certError(a.err)
			other = append(other, fmt.Sprintf("%s: %v", a.addr, a.err))
		}
	}
	switch {
	case len(unknown) > 0:
		return &config.SettingError{Setting: "NOTICES_REDIS_MASTER", Message: fmt.Sprintf(
			"the Sentinels %s monitor no master named %q; set NOTICES_REDIS_MASTER to the name of their 'sentinel monitor' line", strings.Join(unknown, ","), c.RedisMaster)}
	case len(refused) > 0:
		return &config.SettingError{Setting: "NOTICES_REDIS_SENTINEL_PASSWORD", Message: fmt.Sprintf(
			"the Sentinels %s refuse NOTICES_REDIS_SENTINEL_PASSWORD (set it to their requirepass, or unset it if they have none)", strings.Join(refused, ","))}
	case untrusted:
		return &config.SettingError{Setting: "NOTICES_REDIS_CA_FILE", Message: fmt.Sprintf(
			"the TLS certificates of the Sentinels are not trusted (%s); set NOTICES_REDIS_CA_FILE to the PEM of the CA that signed them", strings.Join(other, "; "))}
	}
	return &config.SettingError{Setting: "NOTICES_REDIS_SENTINELS", Message: fmt.Sprintf(
		"none of the Sentinels of NOTICES_REDIS_SENTINELS answers (%s); start them or correct the list", strings.Join(other, "; "))}
}

// sentinelClient is a client of the Sentinel at addr, without retries.
func sentinelClient(addr, password string, tlsc *tls.Config) *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: addr, Password: password, TLSConfig: tlsc,
		DialTimeout: dialTimeout, ReadTimeout: readTimeout, WriteTimeout: writeTimeout, MaxRetries: -1})
}

// sentinelOpen reports whether the Sentinel sc, a client without a
// password, is answered: then it asks for none, and a Sentinel password
// given is accepted (Redis 6 lets any password through for a user with
// nopass) but protects nothing.
func sentinelOpen(ctx context.Context, sc *redis.SentinelClient) bool {
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
