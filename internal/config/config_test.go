package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFromLookup(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{"defaults", nil, "", func(t *testing.T, c Config) {
			if c.Addr != ":8080" || c.DataDir != "./data" || c.Backend != "embedded" || !c.Webhooks ||
				c.DeliveryRetryUnit != 10*time.Minute || c.DeliveryTimeout != 10*time.Second || c.CollectInterval != 15*time.Minute {
				t.Errorf("defaults: %+v", c)
			}
			if c.Plans["free"].Companies != 100 || c.Plans["standard"].Watches != 20 || c.Plans["enterprise"].Companies != 1000000 {
				t.Errorf("plans: %+v", c.Plans)
			}
		}},
		{"overrides", map[string]string{"NOTICES_WEBHOOKS": "off", "NOTICES_DELIVERY_RETRY_UNIT": "1s", "NOTICES_SOURCE": "none"}, "", func(t *testing.T, c Config) {
			if c.Webhooks || c.DeliveryRetryUnit != time.Second || c.Source != "" {
				t.Errorf("got %+v", c)
			}
		}},
		{"limits", map[string]string{"NOTICES_MAX_CONNS": "100", "NOTICES_MAX_CONNS_PER_IP": "10", "NOTICES_PLAN_FREE_RPS": "3",
			"NOTICES_PLAN_FREE_HEAVY": "2", "NOTICES_HEADER_TIMEOUT": "2s", "NOTICES_HEAVY_CONCURRENCY": "3"}, "", func(t *testing.T, c Config) {
			if c.MaxConns != 100 || c.MaxConnsPerIP != 10 || c.HeaderTimeout != 2*time.Second || c.HeavyConcurrency != 3 {
				t.Errorf("got %+v", c)
			}
			if f := c.Plans["free"]; f.RequestsPerSecond != 3 || f.Heavy != 2 || f.Burst != 20 || f.Companies != 100 {
				t.Errorf("free plan: %+v", f)
			}
			if d := Default().Plans["free"]; d.RequestsPerSecond != 10 {
				t.Errorf("overriding a plan changed the defaults: %+v", d)
			}
		}},
		{"limit defaults", nil, "", func(t *testing.T, c Config) {
			if c.MaxBodyBytes != 8<<20 || c.MaxSmallBodyBytes != 64<<10 || c.MaxConns != 2048 || c.MaxConnsPerIP != 256 ||
				c.HeaderTimeout != 10*time.Second || c.BodyTimeout != time.Minute || c.IdleTimeout != time.Minute || c.HeavyConcurrency < 1 {
				t.Errorf("defaults: %+v", c)
			}
			if s := c.Plans["standard"]; s.RequestsPerSecond != 50 || s.Burst != 100 || s.Heavy != 2 {
				t.Errorf("standard plan: %+v", s)
			}
		}},
		{"heavy wait beyond body timeout", map[string]string{"NOTICES_HEAVY_WAIT": "2m"}, "NOTICES_HEAVY_WAIT", nil},
		{"bad plan rate", map[string]string{"NOTICES_PLAN_STANDARD_RPS": "0"}, "NOTICES_PLAN_STANDARD_RPS", nil},
		{"plan quotas", map[string]string{"NOTICES_PLAN_FREE_COMPANIES": "5", "NOTICES_PLAN_FREE_WATCHES": "2"}, "", func(t *testing.T, c Config) {
			if f := c.Plans["free"]; f.Companies != 5 || f.Watches != 2 || f.RequestsPerSecond != 10 {
				t.Errorf("free plan: %+v", f)
			}
		}},
		{"bad plan quota", map[string]string{"NOTICES_PLAN_ENTERPRISE_WATCHES": "0"}, "NOTICES_PLAN_ENTERPRISE_WATCHES", nil},
		{"per ip above total", map[string]string{"NOTICES_MAX_CONNS": "10", "NOTICES_MAX_CONNS_PER_IP": "20"}, "NOTICES_MAX_CONNS_PER_IP", nil},
		{"small body above large", map[string]string{"NOTICES_MAX_BODY_BYTES": "2048", "NOTICES_MAX_SMALL_BODY_BYTES": "4096"}, "NOTICES_MAX_SMALL_BODY_BYTES", nil},
		{"bad duration", map[string]string{"NOTICES_DELIVERY_TIMEOUT": "soon"}, "NOTICES_DELIVERY_TIMEOUT", nil},
		{"bad bool", map[string]string{"NOTICES_WEBHOOKS": "maybe"}, "NOTICES_WEBHOOKS", nil},
		{"bad backend", map[string]string{"NOTICES_BACKEND": "mongo"}, "NOTICES_BACKEND", nil},
		{"bad log format", map[string]string{"NOTICES_LOG_FORMAT": "yaml"}, "NOTICES_LOG_FORMAT", nil},
		{"mail off by default", nil, "", func(t *testing.T, c Config) {
			if c.MailOn() || c.DigestTime != "07:00 Australia/Sydney" || c.DigestSchedule().String() != "07:00 Australia/Sydney" {
				t.Errorf("mail defaults: on=%v digest %q", c.MailOn(), c.DigestTime)
			}
			if s, err := c.MailSender(); s != nil || err != nil {
				t.Errorf("a sender with mail off: %v %v", s, err)
			}
		}},
		{"mail on", map[string]string{"NOTICES_SMTP_URL": "smtps://u:p@mail.example.com:465", "NOTICES_MAIL_FROM": "noticesd <alerts@example.com>",
			"NOTICES_DIGEST_TIME": "18:30 UTC"}, "", func(t *testing.T, c Config) {
			if s, err := c.MailSender(); !c.MailOn() || err != nil || s.Address() != "mail.example.com:465" || s.Domain() != "example.com" {
				t.Errorf("mail on: %v %v", s, err)
			}
			if c.DigestSchedule().String() != "18:30 UTC" {
				t.Errorf("digest %v", c.DigestSchedule())
			}
		}},
		{"smtp url without from", map[string]string{"NOTICES_SMTP_URL": "smtp://mail.example.com"}, "NOTICES_MAIL_FROM", nil},
		{"bad from", map[string]string{"NOTICES_SMTP_URL": "smtp://mail.example.com", "NOTICES_MAIL_FROM": "not an address"}, "NOTICES_MAIL_FROM", nil},
		{"bad smtp scheme", map[string]string{"NOTICES_SMTP_URL": "http://u:hunter2@mail.example.com", "NOTICES_MAIL_FROM": "a@b.example"}, "NOTICES_SMTP_URL=http://u:xxxxx@", nil},
		{"bad digest time", map[string]string{"NOTICES_DIGEST_TIME": "7am"}, "NOTICES_DIGEST_TIME", nil},
		{"scale defaults", map[string]string{"NOTICES_BACKEND": "scale"}, "", func(t *testing.T, c Config) {
			if c.ElasticsearchURL != "http://localhost:9200" || c.RedisURL != "redis://localhost:6379/0" {
				t.Errorf("scale URLs %q %q, want API.md's defaults", c.ElasticsearchURL, c.RedisURL)
			}
		}},
		{"scale bad elasticsearch url", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "localhost:9200"}, "NOTICES_ELASTICSEARCH_URL", nil},
		{"elasticsearch nodes", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "https://u:p@es1:9200, https://u:p@es2:9200,", "NOTICES_ELASTICSEARCH_REPLICAS": "1"}, "", func(t *testing.T, c Config) {
			if got := c.ElasticsearchURLs(); len(got) != 2 || got[0] != "https://u:p@es1:9200" || got[1] != "https://u:p@es2:9200" {
				t.Errorf("ElasticsearchURLs = %q", got)
			}
			if c.ElasticsearchReplicas != 1 {
				t.Errorf("replicas %d, want 1", c.ElasticsearchReplicas)
			}
		}},
		{"elasticsearch replicas default", map[string]string{"NOTICES_BACKEND": "scale"}, "", func(t *testing.T, c Config) {
			if c.ElasticsearchReplicas != 0 {
				t.Errorf("replicas %d, want 0", c.ElasticsearchReplicas)
			}
		}},
		{"elasticsearch negative replicas", map[string]string{"NOTICES_ELASTICSEARCH_REPLICAS": "-1"}, "NOTICES_ELASTICSEARCH_REPLICAS", nil},
		{"elasticsearch no node", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": " , "}, "NOTICES_ELASTICSEARCH_URL is empty", nil},
		{"elasticsearch bad second node", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "http://es1:9200,es2:9200"}, "NOTICES_ELASTICSEARCH_URL", nil},
		{"elasticsearch bad node hides its password", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "ftp://elastic:hunter2@es1:9200"}, "NOTICES_ELASTICSEARCH_URL: \"ftp://elastic:xxxxx@es1:9200\"", nil},
		{"elasticsearch mixed schemes", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "https://es1:9200,http://es2:9200"}, "differ in scheme", nil},
		{"elasticsearch mixed users", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "https://a:hunter2@es1:9200,https://a:hunter3@es2:9200"}, "different user:password", nil},
		{"elasticsearch api key file", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_API_KEY_FILE": keyFile(t, " a2V5OnNlY3JldA==\n")}, "", func(t *testing.T, c Config) {
			if c.ElasticsearchAPIKey != "a2V5OnNlY3JldA==" || c.ElasticsearchCredentials() != "NOTICES_ELASTICSEARCH_API_KEY_FILE" {
				t.Errorf("API key %q from %s, want it trimmed from the file", c.ElasticsearchAPIKey, c.ElasticsearchCredentials())
			}
		}},
		{"elasticsearch api key file missing", map[string]string{"NOTICES_ELASTICSEARCH_API_KEY_FILE": "/nonexistent/key"}, "NOTICES_ELASTICSEARCH_API_KEY_FILE", nil},
		{"elasticsearch api key file empty", map[string]string{"NOTICES_ELASTICSEARCH_API_KEY_FILE": keyFile(t, "\n")}, "NOTICES_ELASTICSEARCH_API_KEY_FILE", nil},
		{"elasticsearch api key twice", map[string]string{"NOTICES_ELASTICSEARCH_API_KEY": "a2V5", "NOTICES_ELASTICSEARCH_API_KEY_FILE": keyFile(t, "a2V5")}, "set one", nil},
		{"elasticsearch api key and password", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_API_KEY": "a2V5", "NOTICES_ELASTICSEARCH_URL": "https://u:p@es1:9200"}, "give one of the two", nil},
		{"elasticsearch credentials", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "https://u:p@es1:9200"}, "", func(t *testing.T, c Config) {
			if got := c.ElasticsearchCredentials(); got != "NOTICES_ELASTICSEARCH_URL" {
				t.Errorf("credentials in %q", got)
			}
		}},
		{"elasticsearch fingerprint", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "https://es1:9200",
			"NOTICES_ELASTICSEARCH_CA_FINGERPRINT": strings.Repeat("AB:", 31) + "AB"}, "", func(t *testing.T, c Config) {
			if fp, err := NormalFingerprint(c.ElasticsearchCAFingerprint); err != nil || fp != strings.Repeat("ab", 32) {
				t.Errorf("NormalFingerprint = %q, %v", fp, err)
			}
		}},
		{"elasticsearch short fingerprint", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "https://es1:9200", "NOTICES_ELASTICSEARCH_CA_FINGERPRINT": "abcd"}, "NOTICES_ELASTICSEARCH_CA_FINGERPRINT", nil},
		{"elasticsearch ca on http", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "http://es1:9200", "NOTICES_ELASTICSEARCH_CA_FINGERPRINT": strings.Repeat("ab", 32)}, "not https://", nil},
		{"elasticsearch ca file missing", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "https://es1:9200", "NOTICES_ELASTICSEARCH_CA_FILE": "/nonexistent/ca.pem"}, "NOTICES_ELASTICSEARCH_CA_FILE", nil},
		{"elasticsearch ca file not pem", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "https://es1:9200", "NOTICES_ELASTICSEARCH_CA_FILE": keyFile(t, "not a certificate")}, "holds no PEM certificate", nil},
		{"elasticsearch ca twice", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "https://es1:9200", "NOTICES_ELASTICSEARCH_CA_FILE": "/x.pem", "NOTICES_ELASTICSEARCH_CA_FINGERPRINT": strings.Repeat("ab", 32)}, "set one", nil},
		{"scale bad redis url", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_URL": "localhost:6379"}, "NOTICES_REDIS_URL", nil},
		{"scale redis url password masked", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_URL": "http://u:hunter2@redis:6379"}, "NOTICES_REDIS_URL=\"http://u:xxxxx@", nil},
		{"redis sentinels", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_SENTINELS": " 10.0.0.1:26379,10.0.0.2:26379 ",
			"NOTICES_REDIS_MASTER": "noticesd", "NOTICES_REDIS_SENTINEL_PASSWORD": "pw"}, "", func(t *testing.T, c Config) {
			if want := []string{"10.0.0.1:26379", "10.0.0.2:26379"}; !slices.Equal(c.RedisSentinels, want) || c.RedisMaster != "noticesd" || c.RedisSentinelPassword != "pw" {
				t.Errorf("sentinels %q master %q password %q, want %q noticesd pw", c.RedisSentinels, c.RedisMaster, c.RedisSentinelPassword, want)
			}
		}},
		{"redis sentinels without master", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_SENTINELS": "10.0.0.1:26379"}, "NOTICES_REDIS_MASTER", nil},
		{"redis master without sentinels", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_MASTER": "noticesd"}, "NOTICES_REDIS_SENTINELS", nil},
		{"redis sentinel password without sentinels", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_SENTINEL_PASSWORD": "pw"}, "NOTICES_REDIS_SENTINELS", nil},
		{"redis sentinel not host:port", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_SENTINELS": "10.0.0.1", "NOTICES_REDIS_MASTER": "m"}, "NOTICES_REDIS_SENTINELS", nil},
		{"redis cluster", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_CLUSTER_URL": "redis://u:pw@10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000"}, "", func(t *testing.T, c Config) {
			if c.RedisClusterURL != "redis://u:pw@10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000" {
				t.Errorf("RedisClusterURL %q", c.RedisClusterURL)
			}
		}},
		{"redis cluster and url", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_CLUSTER_URL": "redis://10.0.0.1:7000", "NOTICES_REDIS_URL": "redis://10.0.0.9:6379/0"}, "NOTICES_REDIS_CLUSTER_URL and NOTICES_REDIS_URL are both set", nil},
		{"redis cluster and url at its default", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_CLUSTER_URL": "redis://10.0.0.1:7000", "NOTICES_REDIS_URL": "redis://localhost:6379/0"}, "NOTICES_REDIS_CLUSTER_URL and NOTICES_REDIS_URL are both set", nil},
		{"redis cluster and sentinels", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_CLUSTER_URL": "redis://10.0.0.1:7000", "NOTICES_REDIS_SENTINELS": "10.0.0.1:26379", "NOTICES_REDIS_MASTER": "m"}, "NOTICES_REDIS_CLUSTER_URL and NOTICES_REDIS_SENTINELS are both set", nil},
		{"redis cluster and master", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_CLUSTER_URL": "redis://10.0.0.1:7000", "NOTICES_REDIS_MASTER": "m"}, "NOTICES_REDIS_CLUSTER_URL and NOTICES_REDIS_MASTER are both set", nil},
		{"redis cluster bad addr", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_CLUSTER_URL": "redis://10.0.0.1:7000?addr=10.0.0.2"}, `addr="10.0.0.2" is not host:port`, nil},
		{"redis cluster not a url", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_CLUSTER_URL": "http://u:hunter2@10.0.0.1:7000"}, `NOTICES_REDIS_CLUSTER_URL="http://u:xxxxx@`, nil},
		{"redis cluster CA file without TLS", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_CLUSTER_URL": "redis://10.0.0.1:7000", "NOTICES_REDIS_CA_FILE": "config_test.go"}, "NOTICES_REDIS_CLUSTER_URL=", nil},
		{"redis cluster password file", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_CLUSTER_URL": "rediss://noticesd@10.0.0.1:7000?addr=10.0.0.2:7000", "NOTICES_REDIS_CLUSTER_PASSWORD_FILE": keyFile(t, "s3cret\n")}, "", func(t *testing.T, c Config) {
			if c.RedisClusterURL != "rediss://noticesd:s3cret@10.0.0.1:7000?addr=10.0.0.2:7000" {
				t.Errorf("RedisClusterURL %q", c.RedisClusterURL)
			}
		}},
		{"redis cluster ignored when embedded", map[string]string{"NOTICES_REDIS_CLUSTER_URL": "redis://10.0.0.1:7000", "NOTICES_REDIS_URL": "redis://10.0.0.9:6379/0"}, "", func(*testing.T, Config) {}},
		{"redis CA file without TLS", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_CA_FILE": "config_test.go"}, "NOTICES_REDIS_CA_FILE", nil},
		{"redis CA file not PEM", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_URL": "rediss://redis:6380/0", "NOTICES_REDIS_CA_FILE": "config_test.go"}, "NOTICES_REDIS_CA_FILE", nil},
		{"redis CA file missing", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_URL": "rediss://redis:6380/0", "NOTICES_REDIS_CA_FILE": "no-such.pem"}, "NOTICES_REDIS_CA_FILE", nil},
		{"secret keys", map[string]string{"NOTICES_SECRET_KEY": DevelopmentSecretKey, "NOTICES_SECRET_KEY_PREVIOUS": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}, "", func(t *testing.T, c Config) {
			if b, err := c.SecretBox(); err != nil || b == nil {
				t.Errorf("SecretBox = %v, %v", b, err)
			}
			if err := c.RequireSecretKey(); err != nil {
				t.Error(err)
			}
		}},
		{"short secret key", map[string]string{"NOTICES_SECRET_KEY": "c2hvcnQ="}, "NOTICES_SECRET_KEY", nil},
		{"previous key alone", map[string]string{"NOTICES_SECRET_KEY_PREVIOUS": DevelopmentSecretKey}, "NOTICES_SECRET_KEY_PREVIOUS", nil},
		{"webhooks on without a key", nil, "", func(t *testing.T, c Config) {
			if err := c.RequireSecretKey(); err == nil || !strings.Contains(err.Error(), "openssl rand -base64 32") {
				t.Errorf("RequireSecretKey = %v; want a refusal saying how to generate a key", err)
			}
			if b, err := c.SecretBox(); b != nil || err != nil {
				t.Errorf("SecretBox without a key = %v, %v; want nil, nil", b, err)
			}
		}},
		{"webhooks off without a key", map[string]string{"NOTICES_WEBHOOKS": "off"}, "", func(t *testing.T, c Config) {
			if err := c.RequireSecretKey(); err != nil {
				t.Error(err)
			}
		}},
		{"default namespace", nil, "", func(t *testing.T, c Config) {
			if c.Namespace != "notices" {
				t.Errorf("namespace %q, want notices", c.Namespace)
			}
		}},
		{"metrics addr", map[string]string{"NOTICES_METRICS_ADDR": "127.0.0.1:9464"}, "", func(t *testing.T, c Config) {
			if c.MetricsAddr != "127.0.0.1:9464" {
				t.Errorf("MetricsAddr %q", c.MetricsAddr)
			}
		}},
		{"metrics addr unset", map[string]string{"NOTICES_METRICS_ADDR": "none"}, "", func(t *testing.T, c Config) {
			if c.MetricsAddr != "" {
				t.Errorf("MetricsAddr %q, want none (the API's port)", c.MetricsAddr)
			}
		}},
		{"metrics addr bad", map[string]string{"NOTICES_METRICS_ADDR": "9464"}, "NOTICES_METRICS_ADDR", nil},
		{"metrics addr on the api port", map[string]string{"NOTICES_ADDR": ":8080", "NOTICES_METRICS_ADDR": "127.0.0.1:8080"}, "port of its own", nil},
		{"elasticsearch password file", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_ELASTICSEARCH_URL": "https://noticesd@es1:9200,https://noticesd@es2:9200",
			"NOTICES_ELASTICSEARCH_PASSWORD_FILE": keyFile(t, " p@ss:w/rd\n")}, "", func(t *testing.T, c Config) {
			want := []string{"https://noticesd:p%40ss%3Aw%2Frd@es1:9200", "https://noticesd:p%40ss%3Aw%2Frd@es2:9200"}
			if got := c.ElasticsearchURLs(); !slices.Equal(got, want) {
				t.Errorf("ElasticsearchURLs = %q, want %q", got, want)
			}
			if c.ElasticsearchCredentials() != "NOTICES_ELASTICSEARCH_PASSWORD_FILE" {
				t.Errorf("credentials from %s", c.ElasticsearchCredentials())
			}
		}},
		{"elasticsearch password file without user", map[string]string{"NOTICES_ELASTICSEARCH_URL": "https://es1:9200", "NOTICES_ELASTICSEARCH_PASSWORD_FILE": keyFile(t, "pw")}, "names no user", nil},
		{"elasticsearch password twice", map[string]string{"NOTICES_ELASTICSEARCH_URL": "https://u:hunter2@es1:9200", "NOTICES_ELASTICSEARCH_PASSWORD_FILE": keyFile(t, "pw")}, "has a password too", nil},
		{"elasticsearch password file empty", map[string]string{"NOTICES_ELASTICSEARCH_URL": "https://u@es1:9200", "NOTICES_ELASTICSEARCH_PASSWORD_FILE": keyFile(t, "\n")}, "is empty", nil},
		{"redis password file", map[string]string{"NOTICES_BACKEND": "scale", "NOTICES_REDIS_URL": "rediss://noticesd@redis:6380/0", "NOTICES_REDIS_PASSWORD_FILE": keyFile(t, "s3cret\n")}, "", func(t *testing.T, c Config) {
			if c.RedisURL != "rediss://noticesd:s3cret@redis:6380/0" {
				t.Errorf("RedisURL %q", c.RedisURL)
			}
		}},
		{"redis password file missing", map[string]string{"NOTICES_REDIS_URL": "redis://u@redis:6379/0", "NOTICES_REDIS_PASSWORD_FILE": "/nonexistent/pw"}, "NOTICES_REDIS_PASSWORD_FILE", nil},
		{"redis password twice", map[string]string{"NOTICES_REDIS_URL": "redis://u:hunter2@redis:6379/0", "NOTICES_REDIS_PASSWORD_FILE": keyFile(t, "pw")}, "has a password too", nil},
		{"namespace", map[string]string{"NOTICES_NAMESPACE": "staging-2"}, "", func(t *testing.T, c Config) {
			if c.Namespace != "staging-2" {
				t.Errorf("namespace %q, want staging-2", c.Namespace)
			}
		}},
		{"namespace upper case", map[string]string{"NOTICES_NAMESPACE": "Prod"}, "NOTICES_NAMESPACE", nil},
		{"namespace wildcard", map[string]string{"NOTICES_NAMESPACE": "a*"}, "NOTICES_NAMESPACE", nil},
		{"namespace leading dash", map[string]string{"NOTICES_NAMESPACE": "-a"}, "NOTICES_NAMESPACE", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := fromLookup(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want mention of %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

// TestUnknownPlanSetting: a NOTICES_PLAN_ name that is not a setting (a
// typo, a plan that does not exist) is refused, not ignored.
func TestUnknownPlanSetting(t *testing.T) {
	for _, tt := range []struct {
		name    string
		environ []string
		bad     string
	}{
		{"all known", []string{"NOTICES_PLAN_FREE_WATCHES=2", "NOTICES_PLAN_ENTERPRISE_HEAVY=8", "HOME=/root"}, ""},
		{"misspelt suffix", []string{"NOTICES_PLAN_FREE_WATCH=2"}, "NOTICES_PLAN_FREE_WATCH"},
		{"unknown plan", []string{"NOTICES_PLAN_GOLD_RPS=5"}, "NOTICES_PLAN_GOLD_RPS"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := unknownPlanSettings(tt.environ)
			if tt.bad == "" && err != nil || tt.bad != "" && (err == nil || !strings.Contains(err.Error(), tt.bad)) {
				t.Fatalf("unknownPlanSettings(%v) = %v, want an error naming %q", tt.environ, err, tt.bad)
			}
		})
	}
}

// keyFile writes content to a new file and returns its path.
func keyFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSecretKeyFile checks NOTICES_SECRET_KEY_FILE: the key read from the
// file without its surrounding white space, and clear errors for a missing
// or empty file and for setting it together with NOTICES_SECRET_KEY.
func TestSecretKeyFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "key")
	if err := os.WriteFile(good, []byte("  "+DevelopmentSecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("c2hvcnQ=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(env map[string]string) (Config, error) {
		return fromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	}
	c, err := load(map[string]string{"NOTICES_SECRET_KEY_FILE": good})
	if err != nil {
		t.Fatal(err)
	}
	if c.SecretKey != DevelopmentSecretKey {
		t.Errorf("SecretKey from the file = %q, want %q (trimmed)", c.SecretKey, DevelopmentSecretKey)
	}
	if b, err := c.SecretBox(); err != nil || b == nil {
		t.Errorf("SecretBox from the file's key = %v, %v", b, err)
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"both set", map[string]string{"NOTICES_SECRET_KEY": DevelopmentSecretKey, "NOTICES_SECRET_KEY_FILE": good}, []string{"NOTICES_SECRET_KEY and NOTICES_SECRET_KEY_FILE"}},
		{"missing file", map[string]string{"NOTICES_SECRET_KEY_FILE": filepath.Join(dir, "nope")}, []string{"NOTICES_SECRET_KEY_FILE", "nope", "no such file"}},
		{"empty file", map[string]string{"NOTICES_SECRET_KEY_FILE": empty}, []string{"NOTICES_SECRET_KEY_FILE", "empty"}},
		{"short key in the file", map[string]string{"NOTICES_SECRET_KEY_FILE": short}, []string{"NOTICES_SECRET_KEY"}},
	} {
		_, err := load(tt.env)
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want one mentioning %q", tt.name, err, w)
			}
		}
	}
}
