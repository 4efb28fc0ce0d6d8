// Package config is the service's settings: one typed struct read from the
// environment (flags may override), defaults in code, validated at start.
package config

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"noticesd/internal/account"
)

// Config holds every setting of API.md's operating contract.
type Config struct {
	Addr                string        // NOTICES_ADDR
	DataDir             string        // NOTICES_DATA_DIR; the SQLite file lives there
	Backend             string        // NOTICES_BACKEND: embedded or scale
	ElasticsearchURL    string        // NOTICES_ELASTICSEARCH_URL (scale)
	RedisURL            string        // NOTICES_REDIS_URL (scale)
	Namespace           string        // NOTICES_NAMESPACE: prefix of every index, alias and Redis key (scale)
	Source              string        // NOTICES_SOURCE: "" (none), a directory, or an http(s) URL
	CollectInterval     time.Duration // NOTICES_COLLECT_INTERVAL
	Webhooks            bool          // NOTICES_WEBHOOKS: on/off
	DeliveryRetryUnit   time.Duration // NOTICES_DELIVERY_RETRY_UNIT
	DeliveryTimeout     time.Duration // NOTICES_DELIVERY_TIMEOUT
	WebhookAllowPrivate bool          // NOTICES_WEBHOOK_ALLOW_PRIVATE
	WebhookCAFile       string        // NOTICES_WEBHOOK_CA_FILE
	LogLevel            string        // NOTICES_LOG_LEVEL: debug, info, warn, error
	MaxBodyBytes        int           // NOTICES_MAX_BODY_BYTES
	Plans               map[string]account.Plan
}

// Default returns the defaults of API.md.
func Default() Config {
	return Config{
		Addr:              ":8080",
		DataDir:           "./data",
		Backend:           "embedded",
		Namespace:         "notices",
		CollectInterval:   15 * time.Minute,
		Webhooks:          true,
		DeliveryRetryUnit: 10 * time.Minute,
		DeliveryTimeout:   10 * time.Second,
		LogLevel:          "info",
		MaxBodyBytes:      8 << 20,
		Plans:             account.DefaultPlans(),
	}
}

// DatabasePath is the SQLite file inside DataDir.
func (c Config) DatabasePath() string {
	return strings.TrimRight(c.DataDir, "/") + "/notices.db"
}

// FromEnv returns the defaults overridden by the NOTICES_* environment
// variables, or an error naming the first bad one.
func FromEnv() (Config, error) { return fromLookup(os.LookupEnv) }

func fromLookup(lookup func(string) (string, bool)) (Config, error) {
	c := Default()
	var errsSeen []string
	str := func(name string, dst *string) {
		if v, ok := lookup(name); ok && v != "" {
			*dst = v
		}
	}
	dur := func(name string, dst *time.Duration) {
		if v, ok := lookup(name); ok && v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errsSeen = append(errsSeen, fmt.Sprintf("%s=%q is not a positive duration such as 10m or 30s", name, v))
				return
			}
			*dst = d
		}
	}
	boolean := func(name string, dst *bool) {
		if v, ok := lookup(name); ok && v != "" {
			switch strings.ToLower(v) {
			case "1", "true", "on", "yes":
				*dst = true
			case "0", "false", "off", "no":
				*dst = false
			default:
				errsSeen = append(errsSeen, fmt.Sprintf("%s=%q must be on/off (or true/false)", name, v))
			}
		}
	}
	str("NOTICES_ADDR", &c.Addr)
	str("NOTICES_DATA_DIR", &c.DataDir)
	str("NOTICES_BACKEND", &c.Backend)
	str("NOTICES_ELASTICSEARCH_URL", &c.ElasticsearchURL)
	str("NOTICES_REDIS_URL", &c.RedisURL)
	str("NOTICES_NAMESPACE", &c.Namespace)
	str("NOTICES_SOURCE", &c.Source)
	if strings.EqualFold(c.Source, "none") {
		c.Source = ""
	}
	dur("NOTICES_COLLECT_INTERVAL", &c.CollectInterval)
	boolean("NOTICES_WEBHOOKS", &c.Webhooks)
	dur("NOTICES_DELIVERY_RETRY_UNIT", &c.DeliveryRetryUnit)
	dur("NOTICES_DELIVERY_TIMEOUT", &c.DeliveryTimeout)
	boolean("NOTICES_WEBHOOK_ALLOW_PRIVATE", &c.WebhookAllowPrivate)
	str("NOTICES_WEBHOOK_CA_FILE", &c.WebhookCAFile)
	str("NOTICES_LOG_LEVEL", &c.LogLevel)
	if v, ok := lookup("NOTICES_MAX_BODY_BYTES"); ok && v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1024 {
			errsSeen = append(errsSeen, fmt.Sprintf("NOTICES_MAX_BODY_BYTES=%q must be an integer of at least 1024", v))
		} else {
			c.MaxBodyBytes = n
		}
	}
	if len(errsSeen) > 0 {
		return c, fmt.Errorf("config: %s", strings.Join(errsSeen, "; "))
	}
	return c, c.Validate()
}

// Validate checks the settings together and says what to fix.
func (c Config) Validate() error {
	switch c.Backend {
	case "embedded":
	case "scale":
		if c.ElasticsearchURL == "" || c.RedisURL == "" {
			return fmt.Errorf("config: NOTICES_BACKEND=scale needs NOTICES_ELASTICSEARCH_URL and NOTICES_REDIS_URL")
		}
	default:
		return fmt.Errorf("config: NOTICES_BACKEND=%q must be embedded or scale", c.Backend)
	}
	if !validNamespace(c.Namespace) {
		return fmt.Errorf("config: NOTICES_NAMESPACE=%q must be 1 to 64 of a-z, 0-9, '-' and '_', starting with a letter or digit (it prefixes Elasticsearch indices and Redis keys)", c.Namespace)
	}
	if c.DataDir == "" {
		return fmt.Errorf("config: NOTICES_DATA_DIR must not be empty")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("config: NOTICES_LOG_LEVEL=%q must be debug, info, warn or error", c.LogLevel)
	}
	if strings.HasPrefix(c.Source, "http://") || strings.HasPrefix(c.Source, "https://") {
		if u, err := url.Parse(c.Source); err != nil || u.Host == "" {
			return fmt.Errorf("config: NOTICES_SOURCE=%q is not a valid URL", c.Source)
		}
	}
	return nil
}

// validNamespace reports whether ns can prefix Elasticsearch index names
// (lower case, no wildcards or separators) and Redis keys.
func validNamespace(ns string) bool {
	if ns == "" || len(ns) > 64 || ns[0] == '-' || ns[0] == '_' {
		return false
	}
	for _, r := range ns {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
