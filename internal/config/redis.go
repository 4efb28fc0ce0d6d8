package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
)

// RedactedRedisURL is NOTICES_REDIS_URL with its password masked, for
// messages: no password is ever printed.
func (c Config) RedactedRedisURL() string {
	return RedactURL(c.RedisURL)
}

// RedactURL returns raw with any password replaced by "xxxxx"; a URL that
// does not parse is not shown at all (it might hold a password in a form
// url.Parse cannot find).
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return u.Redacted()
}

// validateRedis checks the Redis settings of scale mode together: the URL
// (or the cluster URL, exclusive with it and with the Sentinels), the CA
// file (only with rediss://), and the Sentinel list with its master name
// (checkSentinels). Messages show the URL without its password.
func (c Config) validateRedis() error {
	if c.RedisClusterURL != "" {
		return c.validateRedisCluster()
	}
	u, err := url.Parse(c.RedisURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return fmt.Errorf("config: NOTICES_REDIS_URL=%q must be a redis:// (or rediss://) URL such as redis://user:password@localhost:6379/0", RedactURL(c.RedisURL))
	}
	if err := c.checkRedisCA("NOTICES_REDIS_URL", u); err != nil {
		return err
	}
	return c.checkSentinels()
}

// checkRedisCA checks NOTICES_REDIS_CA_FILE against u, the URL of the
// setting named: a CA file only with rediss://, and a readable PEM.
func (c Config) checkRedisCA(setting string, u *url.URL) error {
	if c.RedisCAFile == "" {
		return nil
	}
	if u.Scheme != "rediss" {
		return fmt.Errorf("config: NOTICES_REDIS_CA_FILE is set but %s=%q is not rediss:// (TLS); use rediss:// or unset the CA file", setting, u.Redacted())
	}
	return pemFile("NOTICES_REDIS_CA_FILE", c.RedisCAFile)
}

// validateRedisCluster checks NOTICES_REDIS_CLUSTER_URL: no other way to
// Redis set beside it (NOTICES_REDIS_URL, given or changed from its
// default, or a Sentinel setting), a redis:// or rediss:// URL with a host,
// and each addr= parameter host:port. go-redis parses it again when the
// client is made (redis.ParseClusterURL), refusing any other option it
// does not know.
func (c Config) validateRedisCluster() error {
	others := []struct {
		name string
		set  bool
	}{
		{"NOTICES_REDIS_URL", c.given["NOTICES_REDIS_URL"] || c.RedisURL != Default().RedisURL},
		{"NOTICES_REDIS_SENTINELS", len(c.RedisSentinels) > 0},
		{"NOTICES_REDIS_MASTER", c.RedisMaster != ""},
		{"NOTICES_REDIS_SENTINEL_PASSWORD", c.RedisSentinelPassword != ""},
	}
	for _, o := range others {
		if o.set {
			return fmt.Errorf("config: NOTICES_REDIS_CLUSTER_URL and %s are both set; a Redis Cluster is reached through NOTICES_REDIS_CLUSTER_URL alone: unset %s (or unset NOTICES_REDIS_CLUSTER_URL to use a single Redis or Sentinels)", o.name, o.name)
		}
	}
	const example = "redis://user:password@10.0.0.1:6379?addr=10.0.0.2:6379&addr=10.0.0.3:6379"
	u, err := url.Parse(c.RedisClusterURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return fmt.Errorf("config: NOTICES_REDIS_CLUSTER_URL=%q must be a redis:// (or rediss://) URL of one node, more with addr=, such as %s", RedactURL(c.RedisClusterURL), example)
	}
	for _, a := range u.Query()["addr"] {
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
			return fmt.Errorf("config: NOTICES_REDIS_CLUSTER_URL: addr=%q is not host:port (each further node is one addr= parameter, e.g. %s)", a, example)
		}
	}
	return c.checkRedisCA("NOTICES_REDIS_CLUSTER_URL", u)
}

// checkSentinels checks the Sentinel list and the master name they
// monitor: both or neither.
func (c Config) checkSentinels() error {
	if len(c.RedisSentinels) == 0 {
		if c.RedisMaster != "" {
			return fmt.Errorf("config: NOTICES_REDIS_MASTER is set without NOTICES_REDIS_SENTINELS; list the Sentinels (host:port,host:port,...) or unset NOTICES_REDIS_MASTER")
		}
		if c.RedisSentinelPassword != "" {
			return fmt.Errorf("config: NOTICES_REDIS_SENTINEL_PASSWORD is set without NOTICES_REDIS_SENTINELS")
		}
		return nil
	}
	for _, a := range c.RedisSentinels {
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return fmt.Errorf("config: NOTICES_REDIS_SENTINELS: %q is not host:port (the list is comma-separated, e.g. 10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26379)", a)
		}
	}
	if c.RedisMaster == "" {
		return fmt.Errorf("config: NOTICES_REDIS_SENTINELS is set without NOTICES_REDIS_MASTER, the master name the Sentinels monitor (sentinel monitor <name> ...)")
	}
	return nil
}
