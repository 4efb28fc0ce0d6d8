package config

// Setting documents one NOTICES_* environment variable: its default and what
// it does. Settings is the one list `noticesd --help` prints and
// docs/operating.md must mirror (TestSettingsDocumented checks both ways):
// adding a setting is one line here beside its line in fromLookup.
type Setting struct {
	Name    string
	Default string
	About   string
}

// Settings lists every NOTICES_* variable the service reads, in the order
// of the operating guide.
var Settings = []Setting{
	{"NOTICES_ADDR", ":8080", "listen address of the API"},
	{"NOTICES_METRICS_ADDR", "none", "listen address of serve's GET /metrics on a port of its own, e.g. :9464; the API's port then answers /metrics 404 not_found. Unset (none): /metrics on the API's port"},
	{"NOTICES_DATA_DIR", "./data", "directory of the SQLite file (notices.db) and the collector state"},
	{"NOTICES_BACKEND", "embedded", "embedded (one SQLite file) or scale (Elasticsearch + Redis)"},
	{"NOTICES_ELASTICSEARCH_URL", "http://localhost:9200", "Elasticsearch node URL, or several comma-separated, with user:password@ for basic authentication (scale backend)"},
	{"NOTICES_ELASTICSEARCH_REPLICAS", "0", "replicas of each Elasticsearch index noticesd creates (scale backend)"},
	{"NOTICES_ELASTICSEARCH_API_KEY", "none", "Elasticsearch API key, encoded (the \"encoded\" field of the create API key answer), instead of user:password in the URL (scale backend)"},
	{"NOTICES_ELASTICSEARCH_API_KEY_FILE", "none", "file holding NOTICES_ELASTICSEARCH_API_KEY (trimmed), instead of the variable"},
	{"NOTICES_ELASTICSEARCH_PASSWORD_FILE", "none", "file holding the password of the user in NOTICES_ELASTICSEARCH_URL (given there as https://user@host:9200, without a password), e.g. a compose secret"},
	{"NOTICES_ELASTICSEARCH_CA_FILE", "none", "PEM file of the CA that signed the Elasticsearch nodes' HTTPS certificates (default: the system's roots)"},
	{"NOTICES_ELASTICSEARCH_CA_FINGERPRINT", "none", "SHA-256 fingerprint of the Elasticsearch CA certificate (hex, with or without colons, as Elasticsearch prints it), instead of NOTICES_ELASTICSEARCH_CA_FILE"},
	{"NOTICES_REDIS_URL", "redis://localhost:6379/0", "Redis URL (scale backend; it must run with appendonly yes): redis://user:password@host:port/db (ACL user), rediss:// for TLS; with Sentinels its host is ignored"},
	{"NOTICES_REDIS_PASSWORD_FILE", "none", "file holding the password of the ACL user in NOTICES_REDIS_URL (given there as rediss://user@host:6380/0, without a password), e.g. a compose secret"},
	{"NOTICES_REDIS_CA_FILE", "none", "PEM roots trusted for rediss:// (default: the system's roots)"},
	{"NOTICES_REDIS_SENTINELS", "none", "comma-separated host:port of Redis Sentinels; the client asks them for the primary of NOTICES_REDIS_MASTER and follows failovers"},
	{"NOTICES_REDIS_MASTER", "none", "master name the Sentinels monitor (required with NOTICES_REDIS_SENTINELS)"},
	{"NOTICES_REDIS_SENTINEL_PASSWORD", "none", "password of the Sentinels (the URL's user and password are those of the data nodes)"},
	{"NOTICES_NAMESPACE", "notices", "prefix of the Elasticsearch indices and aliases, the Redis keys and the queues (scale backend; docs/redis.md lists the keys it does not prefix)"},
	{"NOTICES_SCREEN_COPY", "on", "on/off: each serve process keeps an in-memory copy of the register and notice summaries the bulk screen reads (scale backend; memory: see the operating guide's sizing)"},
	{"NOTICES_AGG_CACHE", "1000", "answers of GET /v1/filters and /v1/stats each process keeps until the notices change (scale backend; 0 keeps none; docs/elasticsearch.md)"},
	{"NOTICES_SOURCE", "none", "collector source: a directory of *.jsonl(.gz) files or an http(s) JSON Lines feed"},
	{"NOTICES_COLLECT_INTERVAL", "15m", "time between collector runs"},
	{"NOTICES_COLLECTOR_LEASE", "30s", "scale backend: how long the collector lease outlives its holder's last renewal, so how soon another serve replica takes the collector over when the one running it dies"},
	{"NOTICES_PUBLISH_LOG_RETENTION", "24h", "how long the publish log in Redis keeps an entry (scale): a bulk-screen copy further behind than this reloads from its source; shorter keeps Redis smaller (at least 10s)"},
	{"NOTICES_WRITER_LEASE", "30s", "scale backend: how long the notice writer lease (one writer at a time: ingest, the collector) outlives its holder's last renewal, so how soon the next writer takes over from one that died"},
	{"NOTICES_WEBHOOKS", "on", "on/off: webhook registration and the delivery worker"},
	{"NOTICES_DELIVERY_RETRY_UNIT", "10m", "unit of the delivery retry schedule (tests shorten it)"},
	{"NOTICES_DELIVERY_TIMEOUT", "10s", "timeout of one webhook delivery attempt"},
	{"NOTICES_WEBHOOK_ALLOW_PRIVATE", "false", "allow webhook URLs on private, loopback and link-local addresses"},
	{"NOTICES_WEBHOOK_CA_FILE", "none", "extra PEM CA bundle trusted for webhook HTTPS"},
	{"NOTICES_WORKER_CONCURRENCY", "32", "delivery attempts in flight per noticesd worker process (scale backend)"},
	{"NOTICES_WORKER_METRICS_ADDR", "off", "listen address of each noticesd worker's GET /metrics (scale backend), e.g. :9464; off (or unset) serves none"},
	{"NOTICES_SMTP_URL", "none", "SMTP server of alert_email mail: smtp://user:pass@host:587 (STARTTLS when offered) or smtps://user:pass@host:465; unset turns mail off"},
	{"NOTICES_MAIL_FROM", "none", "From address of alert_email mail (required with NOTICES_SMTP_URL), e.g. 'noticesd <alerts@example.com>'"},
	{"NOTICES_DIGEST_TIME", "07:00 Australia/Sydney", "daily digest time of alert_email: HH:MM and an IANA time zone"},
	{"NOTICES_SECRET_KEY", "none", "base64 of 32 random bytes (openssl rand -base64 32) encrypting webhook secrets at rest; serve needs it while webhooks are on"},
	{"NOTICES_SECRET_KEY_FILE", "none", "a file holding NOTICES_SECRET_KEY (white space around it ignored), e.g. a compose secret at /run/secrets/...; not together with NOTICES_SECRET_KEY"},
	{"NOTICES_SECRET_KEY_PREVIOUS", "none", "the key before a rotation, still accepted for decryption until every secret is re-sealed"},
	{"NOTICES_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"NOTICES_LOG_FORMAT", "json", "json or text: format of the log lines on stderr"},
	{"NOTICES_MAX_BODY_BYTES", "8388608", "body cap of POST /v1/match and POST /v1/watches"},
	{"NOTICES_MAX_SMALL_BODY_BYTES", "65536", "body cap of every other route"},
	{"NOTICES_HEADER_TIMEOUT", "10s", "time to receive the request line and headers"},
	{"NOTICES_BODY_TIMEOUT", "60s", "time to receive the body once the headers are in"},
	{"NOTICES_WRITE_TIMEOUT", "60s", "time to send the response"},
	{"NOTICES_IDLE_TIMEOUT", "60s", "how long a kept-alive connection may wait for its next request"},
	{"NOTICES_MAX_CONNS", "2048", "open connections, all clients together"},
	{"NOTICES_MAX_CONNS_PER_IP", "256", "open connections from one client address"},
	{"NOTICES_HEAVY_CONCURRENCY", "half the CPUs, at least 1", "heavy requests (bulk screen, watch creation) running at once"},
	{"NOTICES_HEAVY_WAIT", "10s", "how long a heavy request queues for a slot before 429"},
	{"NOTICES_PLAN_<PLAN>_COMPANIES", "free 100, standard 10000, enterprise 1000000", "distinct companies an account of the plan may watch"},
	{"NOTICES_PLAN_<PLAN>_WATCHES", "free 1, standard 20, enterprise 500", "watches an account of the plan may have"},
	{"NOTICES_PLAN_<PLAN>_RPS", "free 10, standard 50, enterprise 200", "requests per second of one key of the plan"},
	{"NOTICES_PLAN_<PLAN>_BURST", "free 20, standard 100, enterprise 400", "burst of one key of the plan"},
	{"NOTICES_PLAN_<PLAN>_HEAVY", "free 1, standard 2, enterprise 4", "heavy requests at once of one key of the plan"},
}
