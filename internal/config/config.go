// Package config is the service's settings: one typed struct read from the
// environment (flags may override), defaults in code, validated at start.
package config

import (
	"crypto/x509"
	"fmt"
	"net"
	netmail "net/mail"
	"net/url"
	"os"
	"runtime"
	"strconv"
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
	ScreenCopy            bool          // NOTICES_SCREEN_COPY: serve keeps an in-memory copy of the bulk screen's data (scale)
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

	// ElasticsearchReplicas (NOTICES_ELASTICSEARCH_REPLICAS) is the number
	// of replicas of each index noticesd creates (scale).
	ElasticsearchReplicas int
	// ElasticsearchAPIKey is the encoded id:key of an Elasticsearch API key
	// (NOTICES_ELASTICSEARCH_API_KEY, or read from the file
	// ElasticsearchAPIKeyFile names, NOTICES_ELASTICSEARCH_API_KEY_FILE);
	// "" for none. A secret: never put it in a message.
	ElasticsearchAPIKey     string
	ElasticsearchAPIKeyFile string
	// ElasticsearchCAFile (NOTICES_ELASTICSEARCH_CA_FILE) is a PEM file of
	// the CAs an https node's certificate must chain to, and
	// ElasticsearchCAFingerprint (NOTICES_ELASTICSEARCH_CA_FINGERPRINT) the
	// SHA-256 of a certificate it must present (hex, colons allowed): one
	// or neither (then the system's roots).
	ElasticsearchCAFile        string
	ElasticsearchCAFingerprint string
	// ElasticsearchPasswordFile (NOTICES_ELASTICSEARCH_PASSWORD_FILE) and
	// RedisPasswordFile (NOTICES_REDIS_PASSWORD_FILE) name files holding
	// the password of the user in ElasticsearchURL or RedisURL; fromLookup
	// puts it into those URLs, so everything after reads it there.
	ElasticsearchPasswordFile string
	RedisPasswordFile         string

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

// planSettingSuffixes are the settings of each plan (NOTICES_PLAN_<PLAN>_X).
var planSettingSuffixes = []string{"COMPANIES", "WATCHES", "RPS", "BURST", "HEAVY"}

// planSetting names a plan's setting: NOTICES_PLAN_FREE_RPS.
func planSetting(plan, suffix string) string {
	return "NOTICES_PLAN_" + strings.ToUpper(plan) + "_" + suffix
}

// unknownPlanSettings refuses NOTICES_PLAN_ names in environ that are not
// settings: a misspelt plan limit would otherwise be ignored without a word.
func unknownPlanSettings(environ []string) error {
	known := map[string]bool{}
	for plan := range Default().Plans {
		for _, suffix := range planSettingSuffixes {
			known[planSetting(plan, suffix)] = true
		}
	}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "NOTICES_PLAN_") && !known[name] {
			return fmt.Errorf("config: %s is not a setting: the plans are free, standard and enterprise, each with _%s (e.g. NOTICES_PLAN_FREE_WATCHES)",
				name, strings.Join(planSettingSuffixes, ", _"))
		}
	}
	return nil
}

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
	str("NOTICES_ELASTICSEARCH_API_KEY", &c.ElasticsearchAPIKey)
	str("NOTICES_ELASTICSEARCH_API_KEY_FILE", &c.ElasticsearchAPIKeyFile)
	str("NOTICES_ELASTICSEARCH_CA_FILE", &c.ElasticsearchCAFile)
	str("NOTICES_ELASTICSEARCH_CA_FINGERPRINT", &c.ElasticsearchCAFingerprint)
	if err := c.readElasticsearchAPIKeyFile(); err != nil {
		errsSeen = append(errsSeen, err.Error())
	}
	str("NOTICES_ELASTICSEARCH_PASSWORD_FILE", &c.ElasticsearchPasswordFile)
	if c.ElasticsearchPasswordFile != "" {
		if u, err := withPasswordFile("NOTICES_ELASTICSEARCH_URL", c.ElasticsearchURL, "NOTICES_ELASTICSEARCH_PASSWORD_FILE", c.ElasticsearchPasswordFile); err != nil {
			errsSeen = append(errsSeen, err.Error())
		} else {
			c.ElasticsearchURL = u
		}
	}
	str("NOTICES_REDIS_URL", &c.RedisURL)
	str("NOTICES_REDIS_PASSWORD_FILE", &c.RedisPasswordFile)
	if c.RedisPasswordFile != "" {
		if u, err := withPasswordFile("NOTICES_REDIS_URL", c.RedisURL, "NOTICES_REDIS_PASSWORD_FILE", c.RedisPasswordFile); err != nil {
			errsSeen = append(errsSeen, err.Error())
		} else {
			c.RedisURL = u
		}
	}
	str("NOTICES_REDIS_CA_FILE", &c.RedisCAFile)
	str("NOTICES_REDIS_MASTER", &c.RedisMaster)
	str("NOTICES_REDIS_SENTINEL_PASSWORD", &c.RedisSentinelPassword)
	if v, ok := lookup("NOTICES_REDIS_SENTINELS"); ok && strings.TrimSpace(v) != "" && !strings.EqualFold(v, "none") {
		for _, a := range strings.Split(v, ",") {
			c.RedisSentinels = append(c.RedisSentinels, strings.TrimSpace(a))
		}
	}
	if strings.EqualFold(c.RedisCAFile, "none") {
		c.RedisCAFile = ""
	}
	if strings.EqualFold(c.RedisMaster, "none") {
		c.RedisMaster = ""
	}
	str("NOTICES_NAMESPACE", &c.Namespace)
	str("NOTICES_SOURCE", &c.Source)
	str("NOTICES_METRICS_ADDR", &c.MetricsAddr)
	if strings.EqualFold(c.MetricsAddr, "none") {
		c.MetricsAddr = ""
	}
	str("NOTICES_WORKER_METRICS_ADDR", &c.WorkerMetricsAddr)
	if strings.EqualFold(c.WorkerMetricsAddr, "off") {
		c.WorkerMetricsAddr = ""
	}
	if strings.EqualFold(c.Source, "none") {
		c.Source = ""
	}
	dur("NOTICES_COLLECT_INTERVAL", &c.CollectInterval)
	dur("NOTICES_COLLECTOR_LEASE", &c.CollectorLease)
	dur("NOTICES_PUBLISH_LOG_RETENTION", &c.PublishLogRetention)
	dur("NOTICES_WRITER_LEASE", &c.WriterLease)
	boolean("NOTICES_WEBHOOKS", &c.Webhooks)
	boolean("NOTICES_SCREEN_COPY", &c.ScreenCopy)
	dur("NOTICES_DELIVERY_RETRY_UNIT", &c.DeliveryRetryUnit)
	dur("NOTICES_DELIVERY_TIMEOUT", &c.DeliveryTimeout)
	boolean("NOTICES_WEBHOOK_ALLOW_PRIVATE", &c.WebhookAllowPrivate)
	str("NOTICES_WEBHOOK_CA_FILE", &c.WebhookCAFile)
	str("NOTICES_SMTP_URL", &c.SMTPURL)
	if strings.EqualFold(c.SMTPURL, "none") {
		c.SMTPURL = ""
	}
	str("NOTICES_MAIL_FROM", &c.MailFrom)
	str("NOTICES_DIGEST_TIME", &c.DigestTime)
	str("NOTICES_LOG_LEVEL", &c.LogLevel)
	str("NOTICES_SECRET_KEY", &c.SecretKey)
	if err := secretKeyFile(lookup, &c.SecretKey); err != nil {
		errsSeen = append(errsSeen, err.Error())
	}
	str("NOTICES_SECRET_KEY_PREVIOUS", &c.SecretKeyPrevious)
	str("NOTICES_LOG_FORMAT", &c.LogFormat)
	integer := func(name string, min int, dst *int) {
		if v, ok := lookup(name); ok && v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < min {
				errsSeen = append(errsSeen, fmt.Sprintf("%s=%q must be an integer of at least %d", name, v, min))
				return
			}
			*dst = n
		}
	}
	integer("NOTICES_MAX_BODY_BYTES", 1024, &c.MaxBodyBytes)
	integer("NOTICES_MAX_SMALL_BODY_BYTES", 1024, &c.MaxSmallBodyBytes)
	dur("NOTICES_HEADER_TIMEOUT", &c.HeaderTimeout)
	dur("NOTICES_BODY_TIMEOUT", &c.BodyTimeout)
	dur("NOTICES_WRITE_TIMEOUT", &c.WriteTimeout)
	dur("NOTICES_IDLE_TIMEOUT", &c.IdleTimeout)
	integer("NOTICES_MAX_CONNS", 1, &c.MaxConns)
	integer("NOTICES_MAX_CONNS_PER_IP", 1, &c.MaxConnsPerIP)
	integer("NOTICES_HEAVY_CONCURRENCY", 1, &c.HeavyConcurrency)
	integer("NOTICES_WORKER_CONCURRENCY", 1, &c.WorkerConcurrency)
	integer("NOTICES_AGG_CACHE", 0, &c.AggCache)
	integer("NOTICES_ELASTICSEARCH_REPLICAS", 0, &c.ElasticsearchReplicas)
	dur("NOTICES_HEAVY_WAIT", &c.HeavyWait)
	plans := make(map[string]account.Plan, len(c.Plans))
	for name, p := range c.Plans {
		for _, v := range []struct {
			suffix string
			dst    *int
		}{{planSettingSuffixes[0], &p.Companies}, {planSettingSuffixes[1], &p.Watches}, {planSettingSuffixes[2], &p.RequestsPerSecond},
			{planSettingSuffixes[3], &p.Burst}, {planSettingSuffixes[4], &p.Heavy}} {
			integer(planSetting(name, v.suffix), 1, v.dst)
		}
		plans[name] = p
	}
	c.Plans = plans
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
		if err := c.checkElasticsearch(); err != nil {
			return err
		}
		if err := c.validateRedis(); err != nil {
			return err
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
	switch c.LogFormat {
	case "json", "text":
	default:
		return fmt.Errorf("config: NOTICES_LOG_FORMAT=%q must be json or text", c.LogFormat)
	}
	if c.MaxSmallBodyBytes > c.MaxBodyBytes {
		return fmt.Errorf("config: NOTICES_MAX_SMALL_BODY_BYTES=%d must not exceed NOTICES_MAX_BODY_BYTES=%d", c.MaxSmallBodyBytes, c.MaxBodyBytes)
	}
	if c.MaxConnsPerIP > c.MaxConns {
		return fmt.Errorf("config: NOTICES_MAX_CONNS_PER_IP=%d must not exceed NOTICES_MAX_CONNS=%d", c.MaxConnsPerIP, c.MaxConns)
	}
	if c.WriterLease < time.Second {
		return fmt.Errorf("config: NOTICES_WRITER_LEASE=%s must be at least 1s (it is renewed every third of it)", c.WriterLease)
	}
	if c.PublishLogRetention < 10*time.Second {
		return fmt.Errorf("config: NOTICES_PUBLISH_LOG_RETENTION=%s must be at least 10s (a screen copy further behind than it reloads)", c.PublishLogRetention)
	}
	if c.CollectorLease < time.Second {
		return fmt.Errorf("config: NOTICES_COLLECTOR_LEASE=%s must be at least 1s (it is renewed every third of it)", c.CollectorLease)
	}
	if c.HeavyWait >= c.BodyTimeout {
		return fmt.Errorf("config: NOTICES_HEAVY_WAIT=%s must be shorter than NOTICES_BODY_TIMEOUT=%s (a queued request still has to receive its body)", c.HeavyWait, c.BodyTimeout)
	}
	for name, p := range c.Plans {
		if p.RequestsPerSecond < 1 || p.Burst < 1 || p.Heavy < 1 {
			return fmt.Errorf("config: plan %s needs a request rate, burst and heavy limit of at least 1 (NOTICES_PLAN_%s_RPS, _BURST, _HEAVY)", name, strings.ToUpper(name))
		}
	}
	if c.SecretKey == "" && c.SecretKeyPrevious != "" {
		return fmt.Errorf("config: NOTICES_SECRET_KEY_PREVIOUS is set without NOTICES_SECRET_KEY; set the new key as NOTICES_SECRET_KEY")
	}
	for name, v := range map[string]string{"NOTICES_SECRET_KEY": c.SecretKey, "NOTICES_SECRET_KEY_PREVIOUS": c.SecretKeyPrevious} {
		if v == "" {
			continue
		}
		if _, err := secretbox.ParseKey(v); err != nil {
			return fmt.Errorf("config: %s: %w", name, err)
		}
	}
	if _, err := mail.ParseSchedule(c.DigestTime); err != nil {
		return fmt.Errorf("config: NOTICES_DIGEST_TIME: %w", err)
	}
	if c.SMTPURL != "" {
		if _, err := mail.ParseURL(c.SMTPURL); err != nil {
			return fmt.Errorf("config: %w", err)
		}
		if c.MailFrom == "" {
			return fmt.Errorf("config: NOTICES_SMTP_URL is set and NOTICES_MAIL_FROM is not; set the From address of alert emails, e.g. NOTICES_MAIL_FROM='noticesd <alerts@example.com>'")
		}
		if _, err := netmail.ParseAddress(c.MailFrom); err != nil {
			return fmt.Errorf("config: NOTICES_MAIL_FROM=%q is not an email address such as alerts@example.com or 'noticesd <alerts@example.com>'", c.MailFrom)
		}
	}
	switch {
	case c.Source == "":
	case strings.HasPrefix(c.Source, "http://") || strings.HasPrefix(c.Source, "https://"):
		if u, err := url.Parse(c.Source); err != nil || u.Host == "" {
			return fmt.Errorf("config: NOTICES_SOURCE=%q is not a valid URL", c.Source)
		}
	case strings.Contains(c.Source, "://"):
		return fmt.Errorf("config: NOTICES_SOURCE=%q must be a directory path or an http(s) URL", c.Source)
	default:
		if fi, err := os.Stat(c.Source); err != nil || !fi.IsDir() {
			return fmt.Errorf("config: NOTICES_SOURCE=%q is not a directory this process can read (a directory of *.jsonl or *.jsonl.gz files, or an http(s) URL)", c.Source)
		}
	}
	if err := checkListenAddr(c.Addr); err != nil {
		return fmt.Errorf("config: NOTICES_ADDR=%q %v", c.Addr, err)
	}
	if c.MetricsAddr != "" {
		if err := checkListenAddr(c.MetricsAddr); err != nil {
			return fmt.Errorf("config: NOTICES_METRICS_ADDR=%q %v", c.MetricsAddr, err)
		}
		if samePort(c.MetricsAddr, c.Addr) {
			return fmt.Errorf("config: NOTICES_METRICS_ADDR=%q has the port of NOTICES_ADDR=%q; give /metrics a port of its own (e.g. :9464), or unset NOTICES_METRICS_ADDR to serve it on the API's port", c.MetricsAddr, c.Addr)
		}
	}
	if c.WorkerMetricsAddr != "" {
		if err := checkListenAddr(c.WorkerMetricsAddr); err != nil {
			return fmt.Errorf("config: NOTICES_WORKER_METRICS_ADDR=%q %v", c.WorkerMetricsAddr, err)
		}
	}
	if c.WebhookCAFile != "" {
		pem, err := os.ReadFile(c.WebhookCAFile)
		if err != nil {
			return fmt.Errorf("config: NOTICES_WEBHOOK_CA_FILE: %w; point it at a readable PEM file or unset it", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return fmt.Errorf("config: NOTICES_WEBHOOK_CA_FILE=%s holds no PEM certificate; it must contain one or more -----BEGIN CERTIFICATE----- blocks", c.WebhookCAFile)
		}
	}
	return nil
}

// checkListenAddr checks a listen address: host:port with a port of 0 to
// 65535 (the host may be empty: every interface).
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("is not a listen address such as :8080 or 127.0.0.1:8080 (%v)", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("has port %q; it must be a number from 0 to 65535", port)
	}
	return nil
}

// samePort reports whether two listen addresses (checked by
// checkListenAddr) ask for the same non-zero port.
func samePort(a, b string) bool {
	_, pa, _ := net.SplitHostPort(a)
	_, pb, _ := net.SplitHostPort(b)
	return pa == pb && pa != "0"
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

// secretKeyFile reads NOTICES_SECRET_KEY_FILE (a file holding the key, as a
// compose or Kubernetes secret mounts it) into *key, without surrounding
// white space. Setting it together with NOTICES_SECRET_KEY is an error.
func secretKeyFile(lookup func(string) (string, bool), key *string) error {
	path, ok := lookup("NOTICES_SECRET_KEY_FILE")
	if !ok || path == "" {
		return nil
	}
	if *key != "" {
		return fmt.Errorf("NOTICES_SECRET_KEY and NOTICES_SECRET_KEY_FILE are both set; set one of them")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("NOTICES_SECRET_KEY_FILE=%q cannot be read: %v", path, err)
	}
	k := strings.TrimSpace(string(b))
	if k == "" {
		return fmt.Errorf("NOTICES_SECRET_KEY_FILE=%q is empty; it must hold the key (openssl rand -base64 32)", path)
	}
	*key = k
	return nil
}
