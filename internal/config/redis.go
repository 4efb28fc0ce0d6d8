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

// validateRedis checks the Redis settings of scale mode together: the URL,
// the CA file (only with rediss://), and the Sentinel list with its master
// name (checkSentinels). Messages show the URL without its password.
func (c Config) validateRedis() error {
	u, err := url.Parse(c.RedisURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return fmt.Errorf("config: NOTICES_REDIS_URL=%q must be a redis:// (or rediss://) URL such as redis://user:password@localhost:6379/0", RedactURL(c.RedisURL))
	}
	if c.RedisCAFile != "" {
		if u.Scheme != "rediss" {
			return fmt.Errorf("config: NOTICES_REDIS_CA_FILE is set but NOTICES_REDIS_URL=%q is not rediss:// (TLS); use rediss:// or unset the CA file", u.Redacted())
		}
		if err := pemFile("NOTICES_REDIS_CA_FILE", c.RedisCAFile); err != nil {
			return err
		}
	}
	return c.checkSentinels()
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
