package config

import (
	"strings"
	"time"

	"github.com/noticesd/noticesd/internal/account"
)

// Setting is one NOTICES_* environment variable: its name, its group in
// `noticesd --help` and the operating guide, its default as shown, a
// one-line doc (Markdown) and whether its value is secret. The rows of
// table say how each is parsed and checked; Settings is what they document.
type Setting struct {
	Name    string
	Group   string
	Default string
	About   string
	Secrecy Secrecy
	// bind is how the row becomes settings; nil for the file settings a
	// secret row implies (fromLookup reads them with their secret).
	bind binder
}

// Secrecy says how much of a setting's value may be shown.
type Secrecy int

const (
	// Public values are shown as they are.
	Public Secrecy = iota
	// Secret values are never shown; NAME_FILE may name a file holding the
	// value instead (not both).
	Secret
	// Credentials are URLs (or comma-separated URLs) shown with their
	// passwords masked; <STEM>_PASSWORD_FILE (NOTICES_REDIS_URL:
	// NOTICES_REDIS_PASSWORD_FILE) may name a file holding the password of
	// the user the URLs name.
	Credentials
)

// The groups of the settings, in the order they are listed.
const (
	groupServer   = "Server"
	groupES       = "Elasticsearch (scale backend)"
	groupRedis    = "Redis (scale backend)"
	groupScale    = "Scale backend"
	groupSource   = "Collector"
	groupWebhooks = "Webhooks"
	groupMail     = "Mail"
	groupLimits   = "Limits"
	groupPlans    = "Plans"
)

//go:generate go test -tags sqlite_fts5 -run ^TestSettingsReference$ . -update

// table is every setting: name, group, doc, secrecy, and how it is parsed
// and checked. fromLookup reads it in one loop, Validate runs its checks,
// and Settings (so `noticesd --help` and docs/operating.md) documents it;
// adding a setting is one row here and its field in Config. A Default left
// empty is the field's value in Default().
var table = []Setting{
	{Name: "NOTICES_ADDR", Group: groupServer, About: "listen address of the API",
		bind: text(func(c *Config) *string { return &c.Addr }, listenAddr)},
	{Name: "NOTICES_METRICS_ADDR", Group: groupServer, About: "listen address of `serve`'s `GET /metrics` on a port of its own, e.g. `:9464`; the API's port then answers `/metrics` 404 `not_found` (see [Metrics](#metrics)). Unset (none): `/metrics` on the API's port",
		bind: textOr("none", func(c *Config) *string { return &c.MetricsAddr }, optional(listenAddr))},
	{Name: "NOTICES_DATA_DIR", Group: groupServer, About: "directory of the SQLite file (notices.db) and the collector state",
		bind: text(func(c *Config) *string { return &c.DataDir }, nonEmpty)},
	{Name: "NOTICES_BACKEND", Group: groupServer, About: "embedded (one SQLite file) or scale (Elasticsearch + Redis)",
		bind: text(func(c *Config) *string { return &c.Backend }, oneOf("embedded", "scale"))},
	{Name: "NOTICES_LOG_LEVEL", Group: groupServer, About: "debug, info, warn or error",
		bind: text(func(c *Config) *string { return &c.LogLevel }, oneOf("debug", "info", "warn", "error"))},
	{Name: "NOTICES_LOG_FORMAT", Group: groupServer, About: "json or text: format of the log lines on stderr",
		bind: text(func(c *Config) *string { return &c.LogFormat }, oneOf("json", "text"))},

	{Name: "NOTICES_ELASTICSEARCH_URL", Group: groupES, Secrecy: Credentials, About: "Elasticsearch node URL, or several comma-separated, with user:password@ for basic authentication (see [Secured Elasticsearch](#secured-elasticsearch))",
		bind: text(func(c *Config) *string { return &c.ElasticsearchURL }, nil)},
	{Name: "NOTICES_ELASTICSEARCH_REPLICAS", Group: groupES, About: "replicas of each Elasticsearch index noticesd creates",
		bind: integer(func(c *Config) *int { return &c.ElasticsearchReplicas }, 0)},
	{Name: "NOTICES_ELASTICSEARCH_API_KEY", Group: groupES, Secrecy: Secret, About: "Elasticsearch API key, encoded (the `encoded` field of the create API key answer), instead of user:password in the URL",
		bind: text(func(c *Config) *string { return &c.ElasticsearchAPIKey }, nil)},
	{Name: "NOTICES_ELASTICSEARCH_CA_FILE", Group: groupES, About: "PEM file of the CA that signed the Elasticsearch nodes' HTTPS certificates (default: the system's roots)",
		bind: text(func(c *Config) *string { return &c.ElasticsearchCAFile }, nil)},
	{Name: "NOTICES_ELASTICSEARCH_CA_FINGERPRINT", Group: groupES, About: "SHA-256 fingerprint of the Elasticsearch CA certificate (hex, with or without colons, as Elasticsearch prints it), instead of `NOTICES_ELASTICSEARCH_CA_FILE`",
		bind: text(func(c *Config) *string { return &c.ElasticsearchCAFingerprint }, nil)},

	{Name: "NOTICES_REDIS_URL", Group: groupRedis, Secrecy: Credentials, About: "Redis URL (it must run with appendonly yes): redis://user:password@host:port/db (ACL user), rediss:// for TLS; with Sentinels its host is ignored",
		bind: text(func(c *Config) *string { return &c.RedisURL }, nil)},
	{Name: "NOTICES_REDIS_CA_FILE", Group: groupRedis, About: "PEM roots trusted for rediss:// (default: the system's roots)",
		bind: textOr("none", func(c *Config) *string { return &c.RedisCAFile }, nil)},
	{Name: "NOTICES_REDIS_SENTINELS", Group: groupRedis, About: "comma-separated host:port of Redis Sentinels; the client asks them for the primary of `NOTICES_REDIS_MASTER` and follows failovers",
		bind: list(func(c *Config) *[]string { return &c.RedisSentinels })},
	{Name: "NOTICES_REDIS_MASTER", Group: groupRedis, About: "master name the Sentinels monitor (required with `NOTICES_REDIS_SENTINELS`)",
		bind: textOr("none", func(c *Config) *string { return &c.RedisMaster }, nil)},
	{Name: "NOTICES_REDIS_SENTINEL_PASSWORD", Group: groupRedis, Secrecy: Secret, About: "password of the Sentinels (the URL's user and password are those of the data nodes)",
		bind: text(func(c *Config) *string { return &c.RedisSentinelPassword }, nil)},
	{Name: "NOTICES_REDIS_CLUSTER_URL", Group: groupRedis, Secrecy: Credentials, About: "a Redis Cluster instead of `NOTICES_REDIS_URL` (not with it, nor with Sentinels): redis://user:password@host1:port?addr=host2:port&addr=host3:port (seed nodes; the client learns the rest), rediss:// for TLS with `NOTICES_REDIS_CA_FILE`; see [Redis Cluster](#redis-cluster)",
		bind: textOr("none", func(c *Config) *string { return &c.RedisClusterURL }, nil)},

	{Name: "NOTICES_NAMESPACE", Group: groupScale, About: "prefix of every Elasticsearch index and alias, Redis key and queue (the exceptions, asynq's and the rate limiter's keys, are listed in [redis.md](redis.md#key-layout))",
		bind: text(func(c *Config) *string { return &c.Namespace }, checkNamespace)},
	{Name: "NOTICES_SCREEN_COPY", Group: groupScale, About: "on/off: each serve process keeps an in-memory copy of the register the bulk screen reads (off: each screen reads the register from Redis). The notice summaries are held in memory either way (Redis keeps none; memory: see the operating guide's sizing)",
		bind: onOff(func(c *Config) *bool { return &c.ScreenCopy })},
	{Name: "NOTICES_AGG_CACHE", Group: groupScale, About: "answers of GET /v1/filters and /v1/stats each process keeps until the notices change (0 keeps none; docs/elasticsearch.md)",
		bind: integer(func(c *Config) *int { return &c.AggCache }, 0)},
	{Name: "NOTICES_COLLECTOR_LEASE", Group: groupScale, About: "how long the collector lease outlives its holder's last renewal, so how soon another serve replica takes the collector over when the one running it dies",
		bind: duration(func(c *Config) *time.Duration { return &c.CollectorLease }, atLeast(time.Second, "it is renewed every third of it"))},
	{Name: "NOTICES_PUBLISH_LOG_RETENTION", Group: groupScale, About: "how long the publish log in Redis keeps an entry: a bulk-screen copy further behind than this reloads from its source; shorter keeps Redis smaller (at least 10s)",
		bind: duration(func(c *Config) *time.Duration { return &c.PublishLogRetention }, atLeast(10*time.Second, "a screen copy further behind than it reloads"))},
	{Name: "NOTICES_WRITER_LEASE", Group: groupScale, About: "how long the notice writer lease (one writer at a time: ingest, the collector) outlives its holder's last renewal, so how soon the next writer takes over from one that died",
		bind: duration(func(c *Config) *time.Duration { return &c.WriterLease }, atLeast(time.Second, "it is renewed every third of it"))},
	{Name: "NOTICES_WORKER_CONCURRENCY", Group: groupScale, About: "delivery attempts in flight per `noticesd worker` process",
		bind: integer(func(c *Config) *int { return &c.WorkerConcurrency }, 1)},
	{Name: "NOTICES_WORKER_METRICS_ADDR", Group: groupScale, Default: "off", About: "listen address of each `noticesd worker`'s `GET /metrics`, e.g. `:9464`; off (or unset) serves none",
		bind: textOr("off", func(c *Config) *string { return &c.WorkerMetricsAddr }, optional(listenAddr))},

	{Name: "NOTICES_SOURCE", Group: groupSource, Secrecy: Credentials, About: "collector source: a directory of *.jsonl(.gz) files or an http(s) JSON Lines feed",
		bind: textOr("none", func(c *Config) *string { return &c.Source }, checkSource)},
	{Name: "NOTICES_COLLECT_INTERVAL", Group: groupSource, About: "time between collector runs",
		bind: duration(func(c *Config) *time.Duration { return &c.CollectInterval }, nil)},

	{Name: "NOTICES_WEBHOOKS", Group: groupWebhooks, About: "on/off: webhook registration and the delivery worker",
		bind: onOff(func(c *Config) *bool { return &c.Webhooks })},
	{Name: "NOTICES_SECRET_KEY", Group: groupWebhooks, Secrecy: Secret, About: "base64 of 32 random bytes (`openssl rand -base64 32`) encrypting webhook secrets at rest; `serve` and `worker` need it while webhooks are on",
		bind: text(func(c *Config) *string { return &c.SecretKey }, optional(secretKey))},
	{Name: "NOTICES_SECRET_KEY_PREVIOUS", Group: groupWebhooks, Secrecy: Secret, About: "the key before a rotation, still accepted for decryption until every secret is re-sealed",
		bind: text(func(c *Config) *string { return &c.SecretKeyPrevious }, optional(secretKey))},
	{Name: "NOTICES_DELIVERY_RETRY_UNIT", Group: groupWebhooks, About: "unit of the delivery retry schedule (tests shorten it)",
		bind: duration(func(c *Config) *time.Duration { return &c.DeliveryRetryUnit }, nil)},
	{Name: "NOTICES_DELIVERY_TIMEOUT", Group: groupWebhooks, About: "timeout of one webhook delivery attempt",
		bind: duration(func(c *Config) *time.Duration { return &c.DeliveryTimeout }, nil)},
	{Name: "NOTICES_WEBHOOK_ALLOW_PRIVATE", Group: groupWebhooks, About: "allow webhook URLs on private, loopback and link-local addresses",
		bind: onOff(func(c *Config) *bool { return &c.WebhookAllowPrivate })},
	{Name: "NOTICES_WEBHOOK_CA_FILE", Group: groupWebhooks, About: "extra PEM CA bundle trusted for webhook HTTPS",
		bind: text(func(c *Config) *string { return &c.WebhookCAFile }, optional(pemFile))},

	{Name: "NOTICES_SMTP_URL", Group: groupMail, Secrecy: Credentials, About: "SMTP server of alert_email mail: smtp://user:pass@host:587 (STARTTLS when offered) or smtps://user:pass@host:465; unset turns mail off",
		bind: textOr("none", func(c *Config) *string { return &c.SMTPURL }, nil)},
	{Name: "NOTICES_MAIL_FROM", Group: groupMail, About: "From address of alert_email mail (required with `NOTICES_SMTP_URL`), e.g. 'noticesd <alerts@example.com>'",
		bind: text(func(c *Config) *string { return &c.MailFrom }, nil)},
	{Name: "NOTICES_DIGEST_TIME", Group: groupMail, About: "daily digest time of alert_email: HH:MM and an IANA time zone",
		bind: text(func(c *Config) *string { return &c.DigestTime }, digestTime)},

	{Name: "NOTICES_MAX_BODY_BYTES", Group: groupLimits, About: "body cap of POST /v1/match and POST /v1/watches",
		bind: integer(func(c *Config) *int { return &c.MaxBodyBytes }, 1024)},
	{Name: "NOTICES_MAX_SMALL_BODY_BYTES", Group: groupLimits, About: "body cap of every other route",
		bind: integer(func(c *Config) *int { return &c.MaxSmallBodyBytes }, 1024)},
	{Name: "NOTICES_HEADER_TIMEOUT", Group: groupLimits, About: "time to receive the request line and headers",
		bind: duration(func(c *Config) *time.Duration { return &c.HeaderTimeout }, nil)},
	{Name: "NOTICES_BODY_TIMEOUT", Group: groupLimits, About: "time to receive the body once the headers are in",
		bind: duration(func(c *Config) *time.Duration { return &c.BodyTimeout }, nil)},
	{Name: "NOTICES_WRITE_TIMEOUT", Group: groupLimits, About: "time to send the response",
		bind: duration(func(c *Config) *time.Duration { return &c.WriteTimeout }, nil)},
	{Name: "NOTICES_IDLE_TIMEOUT", Group: groupLimits, About: "how long a kept-alive connection may wait for its next request",
		bind: duration(func(c *Config) *time.Duration { return &c.IdleTimeout }, nil)},
	{Name: "NOTICES_MAX_CONNS", Group: groupLimits, About: "open connections, all clients together",
		bind: integer(func(c *Config) *int { return &c.MaxConns }, 1)},
	{Name: "NOTICES_MAX_CONNS_PER_IP", Group: groupLimits, About: "open connections from one client address",
		bind: integer(func(c *Config) *int { return &c.MaxConnsPerIP }, 1)},
	{Name: "NOTICES_HEAVY_CONCURRENCY", Group: groupLimits, Default: "half the CPUs, at least 1", About: "heavy requests (bulk screen, CSV export, large watch creation, filters and stats with `q`) running at once; a slot is held while the server works, not while the client reads",
		bind: integer(func(c *Config) *int { return &c.HeavyConcurrency }, 1)},
	{Name: "NOTICES_HEAVY_WAIT", Group: groupLimits, About: "how long a heavy request queues for a slot before 429",
		bind: duration(func(c *Config) *time.Duration { return &c.HeavyWait }, nil)},

	{Name: planPattern + "COMPANIES", Group: groupPlans, About: "distinct companies an account of the plan may watch",
		bind: planLimit{"COMPANIES", func(p *account.Plan) *int { return &p.Companies }}},
	{Name: planPattern + "WATCHES", Group: groupPlans, About: "watches an account of the plan may have",
		bind: planLimit{"WATCHES", func(p *account.Plan) *int { return &p.Watches }}},
	{Name: planPattern + "RPS", Group: groupPlans, About: "requests per second of one key of the plan",
		bind: planLimit{"RPS", func(p *account.Plan) *int { return &p.RequestsPerSecond }}},
	{Name: planPattern + "BURST", Group: groupPlans, About: "burst of one key of the plan",
		bind: planLimit{"BURST", func(p *account.Plan) *int { return &p.Burst }}},
	{Name: planPattern + "HEAVY", Group: groupPlans, About: "heavy requests at once of one account of the plan (its two keys together; at most `NOTICES_HEAVY_CONCURRENCY` − 1 when that is over 1)",
		bind: planLimit{"HEAVY", func(p *account.Plan) *int { return &p.Heavy }}},
}

// Settings lists every NOTICES_* variable the service reads, group by
// group: the rows of the table with their defaults, each secret followed
// by its NAME_FILE and each credentials URL by its <STEM>_PASSWORD_FILE.
// `noticesd --help` prints it and docs/operating.md's reference is made
// from it (TestSettingsReference).
var Settings = documented()

// documented is Settings, made from table.
func documented() []Setting {
	var out []Setting
	for _, s := range table {
		s.Default = s.shownDefault()
		out = append(out, s)
		if f := s.fileSetting(); f != "" {
			out = append(out, Setting{Name: f, Group: s.Group, Default: "none", About: s.fileAbout()})
		}
	}
	return out
}

// shownDefault is the default as the reference shows it: the table's own
// text, or the field's value in Default() ("none" when empty).
func (s Setting) shownDefault() string {
	switch b := s.bind.(type) {
	case nil:
		return s.Default
	case planLimit:
		return b.defaults()
	}
	if s.Default != "" {
		return s.Default
	}
	if v := s.bind.bind(s.Name)[0].v.get(Default()); v != "" {
		return v
	}
	return "none"
}

// fileSetting is the setting naming a file that holds the value (a
// secret) or the password in it (credentials); "" for none.
func (s Setting) fileSetting() string {
	switch s.Secrecy {
	case Secret:
		return s.Name + "_FILE"
	case Credentials:
		return strings.TrimSuffix(s.Name, "_URL") + "_PASSWORD_FILE"
	}
	return ""
}

// fileAbout is the doc of fileSetting.
func (s Setting) fileAbout() string {
	if s.Secrecy == Secret {
		return "file holding `" + s.Name + "` (white space around it ignored), e.g. a compose secret at /run/secrets/...; not together with `" + s.Name + "`"
	}
	return "file holding the password of the user `" + s.Name + "` names (the URL then gives the user without a password), e.g. a compose secret; not together with a password in the URL"
}
