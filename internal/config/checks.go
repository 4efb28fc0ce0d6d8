package config

import (
	"crypto/x509"
	"fmt"
	"net"
	netmail "net/mail"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/noticesd/noticesd/internal/mail"
	"github.com/noticesd/noticesd/internal/secretbox"
)

// The checks of one setting (the table's rows name them): each gets the
// setting's name and its value, and says what to fix.

// optional skips check when the value is empty (the setting is unset).
func optional(check func(name, v string) error) func(name, v string) error {
	return func(name, v string) error {
		if v == "" {
			return nil
		}
		return check(name, v)
	}
}

// listenAddr checks a listen address such as :8080.
func listenAddr(name, v string) error {
	if err := checkListenAddr(v); err != nil {
		return fmt.Errorf("config: %s=%q %v", name, v, err)
	}
	return nil
}

// nonEmpty refuses an empty value.
func nonEmpty(name, v string) error {
	if v == "" {
		return fmt.Errorf("config: %s must not be empty", name)
	}
	return nil
}

// oneOf accepts one of choices.
func oneOf(choices ...string) func(name, v string) error {
	return func(name, v string) error {
		for _, c := range choices {
			if v == c {
				return nil
			}
		}
		return fmt.Errorf("config: %s=%q must be %s", name, v, sayList(choices, "or"))
	}
}

// atLeast refuses a duration under min; why says what min is for.
func atLeast(min time.Duration, why string) func(name string, d time.Duration) error {
	return func(name string, d time.Duration) error {
		if d < min {
			return fmt.Errorf("config: %s=%s must be at least %s (%s)", name, d, formatDuration(min), why)
		}
		return nil
	}
}

// checkNamespace checks that the namespace can prefix Elasticsearch index
// names and Redis keys.
func checkNamespace(name, ns string) error {
	if !validNamespace(ns) {
		return fmt.Errorf("config: %s=%q must be 1 to 64 of a-z, 0-9, '-' and '_', starting with a letter or digit (it prefixes Elasticsearch indices and Redis keys)", name, ns)
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

// secretKey checks a key of the secret box; the message never shows it.
func secretKey(name, v string) error {
	if _, err := secretbox.ParseKey(v); err != nil {
		return fmt.Errorf("config: %s: %w", name, err)
	}
	return nil
}

// digestTime checks a daily digest time, "HH:MM Zone".
func digestTime(name, v string) error {
	if _, err := mail.ParseSchedule(v); err != nil {
		return fmt.Errorf("config: %s: %w", name, err)
	}
	return nil
}

// pemFile checks that a file is readable and holds PEM certificates.
func pemFile(name, path string) error {
	pem, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %s: %w; point it at a readable PEM file or unset it", name, err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return fmt.Errorf("config: %s=%s holds no PEM certificate; it must contain one or more -----BEGIN CERTIFICATE----- blocks", name, path)
	}
	return nil
}

// checkSource checks the collector's source: none, an http(s) URL or a
// readable directory. Messages show it without a password.
func checkSource(name, src string) error {
	shown := redactURL(src)
	switch {
	case src == "":
	case strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://"):
		if u, err := url.Parse(src); err != nil || u.Host == "" {
			return fmt.Errorf("config: %s=%q is not a valid URL", name, shown)
		}
	case strings.Contains(src, "://"):
		return fmt.Errorf("config: %s=%q must be a directory path or an http(s) URL", name, shown)
	default:
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			return fmt.Errorf("config: %s=%q is not a directory this process can read (a directory of *.jsonl or *.jsonl.gz files, or an http(s) URL)", name, shown)
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

// crossChecks are the checks of settings together, run by Validate after
// each setting's own check, in this order; each says what it checks.
var crossChecks = []func(Config) error{
	scaleOnly(Config.checkElasticsearch),
	scaleOnly(Config.validateRedis),
	checkBodyCaps,
	checkConnCaps,
	checkHeavyWait,
	checkPlans,
	checkPreviousKey,
	checkMail,
	checkMetricsPort,
}

// scaleOnly runs check with the scale backend only.
func scaleOnly(check func(Config) error) func(Config) error {
	return func(c Config) error {
		if c.Backend != "scale" {
			return nil
		}
		return check(c)
	}
}

// checkBodyCaps: the small body cap is not above the large one.
func checkBodyCaps(c Config) error {
	if c.MaxSmallBodyBytes > c.MaxBodyBytes {
		return fmt.Errorf("config: NOTICES_MAX_SMALL_BODY_BYTES=%d must not exceed NOTICES_MAX_BODY_BYTES=%d", c.MaxSmallBodyBytes, c.MaxBodyBytes)
	}
	return nil
}

// checkConnCaps: one client's connections are not above everyone's.
func checkConnCaps(c Config) error {
	if c.MaxConnsPerIP > c.MaxConns {
		return fmt.Errorf("config: NOTICES_MAX_CONNS_PER_IP=%d must not exceed NOTICES_MAX_CONNS=%d", c.MaxConnsPerIP, c.MaxConns)
	}
	return nil
}

// checkHeavyWait: a queued heavy request still has time for its body.
func checkHeavyWait(c Config) error {
	if c.HeavyWait >= c.BodyTimeout {
		return fmt.Errorf("config: NOTICES_HEAVY_WAIT=%s must be shorter than NOTICES_BODY_TIMEOUT=%s (a queued request still has to receive its body)", c.HeavyWait, c.BodyTimeout)
	}
	return nil
}

// checkPreviousKey: the key before a rotation comes with the new one.
func checkPreviousKey(c Config) error {
	if c.SecretKey == "" && c.SecretKeyPrevious != "" {
		return fmt.Errorf("config: NOTICES_SECRET_KEY_PREVIOUS is set without NOTICES_SECRET_KEY; set the new key as NOTICES_SECRET_KEY")
	}
	return nil
}

// checkMail: with an SMTP server, a valid one and a From address.
func checkMail(c Config) error {
	if c.SMTPURL == "" {
		return nil
	}
	if _, err := mail.ParseURL(c.SMTPURL); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if c.MailFrom == "" {
		return fmt.Errorf("config: NOTICES_SMTP_URL is set and NOTICES_MAIL_FROM is not; set the From address of alert emails, e.g. NOTICES_MAIL_FROM='noticesd <alerts@example.com>'")
	}
	if _, err := netmail.ParseAddress(c.MailFrom); err != nil {
		return fmt.Errorf("config: NOTICES_MAIL_FROM=%q is not an email address such as alerts@example.com or 'noticesd <alerts@example.com>'", c.MailFrom)
	}
	return nil
}

// checkMetricsPort: serve's /metrics listener has a port of its own.
func checkMetricsPort(c Config) error {
	if c.MetricsAddr != "" && samePort(c.MetricsAddr, c.Addr) {
		return fmt.Errorf("config: NOTICES_METRICS_ADDR=%q has the port of NOTICES_ADDR=%q; give /metrics a port of its own (e.g. :9464), or unset NOTICES_METRICS_ADDR to serve it on the API's port", c.MetricsAddr, c.Addr)
	}
	return nil
}
