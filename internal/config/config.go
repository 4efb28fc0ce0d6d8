// Package config is the service's settings: one typed struct read from the
// environment (flags may override), defaults in code, validated at start.
package config

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/mail"
	"github.com/noticesd/noticesd/internal/secretbox"
)

// Config holds every setting of API.md's operating contract.
type Config struct {
	Addr             string // NOTICES_ADDR
	DataDir          string // NOTICES_DATA_DIR; the SQLite file lives there
	Backend          string // NOTICES_BACKEND: embedded or scale
	ElasticsearchURL string // NOTICES_ELASTICSEARCH_URL (scale): one node or several, comma-separated (ElasticsearchURLs)
	RedisURL         string // NOTICES_REDIS_URL (scale): redis://user:password@host:port/db, rediss:// for TLS
	RedisCAFile      string // NOTICES_REDIS_CA_FILE: PEM roots trusted for rediss:// (default: the system's)
	// RedisSentinels (NOTICES_REDIS_SENTINELS, comma-separated host:port)
	// make the client find the primary through Redis Sentinel, as
	// RedisMaster (NOTICES_REDIS_MASTER); RedisURL's host is then ignored,
	// its user, password, db and scheme still apply to the data nodes.
	// RedisSentinelPassword (NOTICES_REDIS_SENTINEL_PASSWORD) is the
	// Sentinels' own password.
	RedisSentinels        []string
	RedisMaster           string
	RedisSentinelPassword string
	Namespace             string        // NOTICES_NAMESPACE: prefix of every index, alias and Redis key (scale)
	ScreenCopy            bool          // NOTICES_SCREEN_COPY: serve keeps an in-memory copy of the register the bulk screen reads (scale)
	AggCache              int           // NOTICES_AGG_CACHE: filters/stats answers each process keeps until the notices change; 0 keeps none (scale)
	Source                string        // NOTICES_SOURCE: "" (none), a directory, or an http(s) URL
	CollectInterval       time.Duration // NOTICES_COLLECT_INTERVAL
	CollectorLease        time.Duration // NOTICES_COLLECTOR_LEASE: time to live of the collector lease (scale)
	PublishLogRetention   time.Duration // NOTICES_PUBLISH_LOG_RETENTION: how long the publish log keeps an entry (scale)
	WriterLease           time.Duration // NOTICES_WRITER_LEASE: time to live of the notice writer lease (scale)
	Webhooks              bool          // NOTICES_WEBHOOKS: on/off
	DeliveryRetryUnit     time.Duration // NOTICES_DELIVERY_RETRY_UNIT
	DeliveryTimeout       time.Duration // NOTICES_DELIVERY_TIMEOUT
	WebhookAllowPrivate   bool          // NOTICES_WEBHOOK_ALLOW_PRIVATE
	WebhookCAFile         string        // NOTICES_WEBHOOK_CA_FILE
	WorkerConcurrency     int           // NOTICES_WORKER_CONCURRENCY: delivery attempts in flight per `noticesd worker` process (scale)
	MetricsAddr           string        // NOTICES_METRICS_ADDR: listen address of serve's /metrics on a listener of its own; "" serves it on Addr
	WorkerMetricsAddr     string        // NOTICES_WORKER_METRICS_ADDR: listen address of `noticesd worker`'s /metrics; "" (off) serves none
	SMTPURL               string        // NOTICES_SMTP_URL: smtp:// or smtps://; "" turns mail off
	MailFrom              string        // NOTICES_MAIL_FROM: From address of alert_email mail
	DigestTime            string        // NOTICES_DIGEST_TIME: daily digest time, "HH:MM Zone"
	LogLevel              string        // NOTICES_LOG_LEVEL: debug, info, warn, error
	LogFormat             string        // NOTICES_LOG_FORMAT: json or text
	MaxBodyBytes          int           // NOTICES_MAX_BODY_BYTES: body cap of POST /v1/match and POST /v1/watches
	MaxSmallBodyBytes     int           // NOTICES_MAX_SMALL_BODY_BYTES: body cap of every other route
	HeaderTimeout         time.Duration // NOTICES_HEADER_TIMEOUT: to receive the request line and headers
	BodyTimeout           time.Duration // NOTICES_BODY_TIMEOUT: to receive the body once the headers are in
	WriteTimeout          time.Duration // NOTICES_WRITE_TIMEOUT: to send the response
	IdleTimeout           time.Duration // NOTICES_IDLE_TIMEOUT: a kept-alive connection waiting for its next request
	MaxConns              int           // NOTICES_MAX_CONNS: open connections, all clients together
	MaxConnsPerIP         int           // NOTICES_MAX_CONNS_PER_IP: open connections from one client address
	HeavyConcurrency      int           // NOTICES_HEAVY_CONCURRENCY: heavy requests running at once, all keys together
	HeavyWait             time.Duration // NOTICES_HEAVY_WAIT: how long a heavy request queues for a slot before 429

	// RedisClusterURL (NOTICES_REDIS_CLUSTER_URL) is a Redis Cluster in
	// go-redis's cluster URL form,
	// redis://user:password@host1:port?addr=host2:port&addr=host3:port
	// (rediss:// for TLS); exclusive with RedisURL and the Sentinel
	// settings. "" for none.
	RedisClusterURL string

	// ElasticsearchReplicas (NOTICES_ELASTICSEARCH_REPLICAS) is the number
	// of replicas of each index noticesd creates (scale).
	ElasticsearchReplicas int
	// ElasticsearchAPIKey is the encoded id:key of an Elasticsearch API key
	// (NOTICES_ELASTICSEARCH_API_KEY, or read from the file
	// NOTICES_ELASTICSEARCH_API_KEY_FILE names); "" for none. A secret:
	// never put it in a message.
	ElasticsearchAPIKey string
	// ElasticsearchCAFile (NOTICES_ELASTICSEARCH_CA_FILE) is a PEM file of
	// the CAs an https node's certificate must chain to, and
	// ElasticsearchCAFingerprint (NOTICES_ELASTICSEARCH_CA_FINGERPRINT) the
	// SHA-256 of a certificate it must present (hex, colons allowed): one
	// or neither (then the system's roots).
	ElasticsearchCAFile        string
	ElasticsearchCAFingerprint string

	// SecretKey (NOTICES_SECRET_KEY) encrypts webhook secrets at rest:
	// standard base64 of 32 random bytes (`openssl rand -base64 32`).
	// SecretKeyPrevious (NOTICES_SECRET_KEY_PREVIOUS) is the key before a
	// rotation, still accepted for decryption; what it sealed is re-sealed
	// under SecretKey when the store opens.
	SecretKey         string
	SecretKeyPrevious string
	// Plans are the plan limits; NOTICES_PLAN_<NAME>_COMPANIES, _WATCHES,
	// _RPS, _BURST and _HEAVY override them (for example
	// NOTICES_PLAN_FREE_WATCHES); any other NOTICES_PLAN_ name is refused.
	Plans map[string]account.Plan

	// given are the settings the environment set (parse), so that a
	// setting left at its default can be told from one set to it.
	given map[string]bool

	// files are the settings naming a file that fromLookup read a secret
	// from (NOTICES_SECRET_KEY_FILE, NOTICES_REDIS_PASSWORD_FILE, ...),
	// each with the file's path. A password read from a file is in its URL
	// (RedisURL, ...), so everything after reads it there.
	files map[string]string
}

// Default returns the defaults of API.md.
func Default() Config {
	return Config{
		Addr:                ":8080",
		DataDir:             "./data",
		Backend:             "embedded",
		Namespace:           "notices",
		ElasticsearchURL:    "http://localhost:9200",
		RedisURL:            "redis://localhost:6379/0",
		CollectInterval:     15 * time.Minute,
		CollectorLease:      30 * time.Second,
		PublishLogRetention: 24 * time.Hour,
		WriterLease:         30 * time.Second,
		Webhooks:            true,
		ScreenCopy:          true,
		AggCache:            1000,
		DeliveryRetryUnit:   10 * time.Minute,
		DeliveryTimeout:     10 * time.Second,
		WorkerConcurrency:   32,
		DigestTime:          mail.DefaultDigestTime,
		LogLevel:            "info",
		LogFormat:           "json",
		MaxBodyBytes:        8 << 20,
		MaxSmallBodyBytes:   64 << 10,
		HeaderTimeout:       10 * time.Second,
		BodyTimeout:         60 * time.Second,
		WriteTimeout:        60 * time.Second,
		IdleTimeout:         60 * time.Second,
		MaxConns:            2048,
		MaxConnsPerIP:       256,
		HeavyConcurrency:    DefaultHeavyConcurrency(),
		HeavyWait:           10 * time.Second,
		Plans:               account.DefaultPlans(),
	}
}

// DefaultHeavyConcurrency is the default of NOTICES_HEAVY_CONCURRENCY: half
// the CPUs the process may use, at least one, so heavy requests never take
// every core from the light ones.
func DefaultHeavyConcurrency() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// DatabasePath is the SQLite file inside DataDir.
func (c Config) DatabasePath() string {
	return strings.TrimRight(c.DataDir, "/") + "/notices.db"
}

// FromEnv returns the defaults overridden by the NOTICES_* environment
// variables, or an error naming the first bad one.
func FromEnv() (Config, error) {
	if err := unknownPlanSettings(os.Environ()); err != nil {
		return Default(), err
	}
	return fromLookup(os.LookupEnv)
}

// fromLookup reads the settings (parse), then validates them.
func fromLookup(lookup func(string) (string, bool)) (Config, error) {
	c, err := parse(lookup)
	if err != nil {
		return c, err
	}
	return c, c.Validate()
}

// parse reads every setting of the table over the defaults, each error
// noted and all of them returned together.
func parse(lookup func(string) (string, bool)) (Config, error) {
	c := Default()
	var errs []string
	for _, s := range table {
		for _, b := range s.bind.bind(s.Name) {
			if err := s.load(&c, b, lookup); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("config: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

// load sets one setting from the environment when it is set there (an
// empty value is unset): for a secret, from NAME or the file NAME_FILE
// names; for credentials, with the password in the file
// <STEM>_PASSWORD_FILE names.
func (s Setting) load(c *Config, b binding, lookup func(string) (string, bool)) error {
	raw, _ := lookup(b.name)
	if raw != "" {
		if c.given == nil {
			c.given = map[string]bool{}
		}
		c.given[b.name] = true
	}
	if s.Secrecy == Secret {
		var err error
		if raw, err = c.secretFromFile(b.name, raw, lookup); err != nil {
			return err
		}
	}
	if raw != "" {
		if err := b.v.set(c, raw); err != nil {
			return fmt.Errorf("%s %v", s.assignment(b.name, raw), err)
		}
	}
	if s.Secrecy == Credentials {
		return c.passwordFromFile(s, b, lookup)
	}
	return nil
}

// Validate checks the settings, each on its own (the table's checks) and
// then together (crossChecks), and says what to fix.
func (c Config) Validate() error {
	for _, s := range table {
		for _, b := range s.bind.bind(s.Name) {
			if err := b.v.check(b.name, c); err != nil {
				return err
			}
		}
	}
	for _, check := range crossChecks {
		if err := check(c); err != nil {
			return err
		}
	}
	return nil
}

// MailOn reports whether alert_email mail is sent (NOTICES_SMTP_URL set).
func (c Config) MailOn() bool { return c.SMTPURL != "" }

// MailSender returns the SMTP sender of alert_email mail, or nil when mail
// is off.
func (c Config) MailSender() (*mail.Sender, error) {
	if !c.MailOn() {
		return nil, nil
	}
	return mail.NewSender(c.SMTPURL, c.MailFrom, 30*time.Second)
}

// DigestSchedule is NOTICES_DIGEST_TIME parsed (Validate checked it).
func (c Config) DigestSchedule() mail.Schedule {
	s, _ := mail.ParseSchedule(c.DigestTime)
	return s
}

// DevelopmentSecretKey is the fixed, public NOTICES_SECRET_KEY that
// `noticesd demo` (what `make run` runs) uses when none is set, so a fresh
// clone runs with webhooks on. It protects nothing: anyone can read it
// here. Never use it for real data; generate a key with
// `openssl rand -base64 32`.
const DevelopmentSecretKey = secretbox.DevelopmentKey

// RequireSecretKey checks that webhook secrets can be encrypted when
// webhooks are on: serve calls it at start.
func (c Config) RequireSecretKey() error {
	if c.Webhooks && c.SecretKey == "" {
		return fmt.Errorf("config: NOTICES_WEBHOOKS is on and NOTICES_SECRET_KEY is not set; webhook secrets are encrypted at rest with it. " +
			"Generate one with `openssl rand -base64 32` and keep it safe (losing it loses the secrets), or set NOTICES_WEBHOOKS=off")
	}
	return nil
}

// SecretBox returns the box sealing webhook secrets under SecretKey (and
// SecretKeyPrevious), or nil when no key is set.
func (c Config) SecretBox() (*secretbox.Box, error) {
	if c.SecretKey == "" {
		return nil, nil
	}
	cur, err := secretbox.ParseKey(c.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("config: NOTICES_SECRET_KEY: %w", err)
	}
	var prev []byte
	if c.SecretKeyPrevious != "" {
		if prev, err = secretbox.ParseKey(c.SecretKeyPrevious); err != nil {
			return nil, fmt.Errorf("config: NOTICES_SECRET_KEY_PREVIOUS: %w", err)
		}
	}
	return secretbox.New(cur, prev)
}
