package config

import (
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// ElasticsearchURLs returns the node URLs of NOTICES_ELASTICSEARCH_URL, a
// comma-separated list (spaces around the commas ignored).
func (c Config) ElasticsearchURLs() []string {
	return SplitURLs(c.ElasticsearchURL)
}

// SplitURLs splits a comma-separated list of URLs, trimming spaces and
// dropping empty entries.
func SplitURLs(list string) []string {
	var out []string
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// ElasticsearchCACert returns the PEM of NOTICES_ELASTICSEARCH_CA_FILE, or
// nil when it is not set.
func (c Config) ElasticsearchCACert() ([]byte, error) {
	if c.ElasticsearchCAFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(c.ElasticsearchCAFile)
	if err != nil {
		return nil, fmt.Errorf("config: NOTICES_ELASTICSEARCH_CA_FILE: %w; point it at a readable PEM file of the cluster's CA (config/certs/http_ca.crt on a node Elasticsearch set up itself)", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("config: NOTICES_ELASTICSEARCH_CA_FILE=%s holds no PEM certificate; it must contain one or more -----BEGIN CERTIFICATE----- blocks", c.ElasticsearchCAFile)
	}
	return pem, nil
}

// ElasticsearchCredentials says which setting holds the credentials noticesd
// presents to Elasticsearch, for messages: NOTICES_ELASTICSEARCH_API_KEY
// (or its _FILE), NOTICES_ELASTICSEARCH_PASSWORD_FILE (the URL's user with
// that file's password), NOTICES_ELASTICSEARCH_URL (user:password@), or ""
// for none.
func (c Config) ElasticsearchCredentials() string {
	for _, f := range []string{"NOTICES_ELASTICSEARCH_PASSWORD_FILE", "NOTICES_ELASTICSEARCH_API_KEY_FILE"} {
		if c.files[f] != "" {
			return f
		}
	}
	if c.ElasticsearchAPIKey != "" {
		return "NOTICES_ELASTICSEARCH_API_KEY"
	}
	for _, raw := range c.ElasticsearchURLs() {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			return "NOTICES_ELASTICSEARCH_URL"
		}
	}
	return ""
}

// NormalFingerprint returns a SHA-256 fingerprint as lower-case hex
// without colons or spaces (Elasticsearch prints it upper case, with or
// without colons), or an error when it is not 32 bytes of hex.
func NormalFingerprint(fp string) (string, error) {
	s := strings.ToLower(strings.NewReplacer(":", "", " ", "").Replace(strings.TrimSpace(fp)))
	if b, err := hex.DecodeString(s); err != nil || len(b) != 32 {
		return "", errors.New("is not a SHA-256 fingerprint: 64 hex digits, with or without colons, as Elasticsearch prints it at its first start (or `openssl x509 -fingerprint -sha256 -noout -in http_ca.crt`)")
	}
	return s, nil
}

// checkElasticsearch checks the Elasticsearch settings together (scale).
func (c Config) checkElasticsearch() error {
	urls := c.ElasticsearchURLs()
	if err := checkElasticsearchURLs(urls); err != nil {
		return err
	}
	u, _ := url.Parse(urls[0])
	if c.ElasticsearchAPIKey != "" && u.User != nil {
		return errors.New("config: NOTICES_ELASTICSEARCH_URL has a user:password and an API key is set (NOTICES_ELASTICSEARCH_API_KEY or _FILE); give one of the two")
	}
	if c.ElasticsearchCAFile != "" && c.ElasticsearchCAFingerprint != "" {
		return errors.New("config: NOTICES_ELASTICSEARCH_CA_FILE and NOTICES_ELASTICSEARCH_CA_FINGERPRINT are both set; set one")
	}
	for name, v := range map[string]string{"NOTICES_ELASTICSEARCH_CA_FILE": c.ElasticsearchCAFile, "NOTICES_ELASTICSEARCH_CA_FINGERPRINT": c.ElasticsearchCAFingerprint} {
		if v != "" && u.Scheme != "https" {
			return fmt.Errorf("config: %s is set but NOTICES_ELASTICSEARCH_URL is %s://, not https://; the CA settings apply to HTTPS", name, u.Scheme)
		}
	}
	if c.ElasticsearchCAFingerprint != "" {
		if _, err := NormalFingerprint(c.ElasticsearchCAFingerprint); err != nil {
			return fmt.Errorf("config: NOTICES_ELASTICSEARCH_CA_FINGERPRINT=%q %v", c.ElasticsearchCAFingerprint, err)
		}
	}
	if _, err := c.ElasticsearchCACert(); err != nil {
		return err
	}
	return nil
}

// redactURL is a URL fit for a message: its password, if any, replaced by
// xxxxx (when it does not parse, everything before its last @ is dropped).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if at := strings.LastIndex(raw, "@"); at >= 0 {
			return "(credentials)@" + raw[at+1:]
		}
		return raw
	}
	return u.Redacted()
}

// checkElasticsearchURLs checks the nodes of NOTICES_ELASTICSEARCH_URL:
// each an http(s) URL with a host, all of one scheme and with the same
// user:password (or none), since one client talks to all of them.
func checkElasticsearchURLs(urls []string) error {
	const name = "NOTICES_ELASTICSEARCH_URL"
	if len(urls) == 0 {
		return fmt.Errorf("config: %s is empty; give one or more node URLs, comma-separated, such as http://localhost:9200", name)
	}
	var first *url.URL
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("config: %s: %q must be an http(s) URL such as http://localhost:9200 (several nodes: comma-separated)", name, redactURL(raw))
		}
		if first == nil {
			first = u
			continue
		}
		if u.Scheme != first.Scheme {
			return fmt.Errorf("config: %s: the nodes %s and %s differ in scheme; every node must be http or every node https", name, u.Host, first.Host)
		}
		if u.User.String() != first.User.String() {
			return fmt.Errorf("config: %s: the nodes %s and %s have different user:password; give the same credentials (or none) on every node", name, u.Host, first.Host)
		}
	}
	return nil
}
