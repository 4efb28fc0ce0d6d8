package config

import (
	"fmt"
	"net/url"
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

// redactURL is a URL fit for a message: its password, if any, replaced by
// xxxxx (raw when it does not parse, which then holds no user:password@ the
// parser could find either).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if at := strings.LastIndex(raw, "@"); at >= 0 {
			return "(unparsable URL with credentials)@" + raw[at+1:]
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
