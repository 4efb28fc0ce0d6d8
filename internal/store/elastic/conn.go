package elastic

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/elastic/go-elasticsearch/v8"
)

// nodeURLs splits Config.URL, one node URL or several comma-separated.
func nodeURLs(list string) []string {
	var out []string
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// newClient makes the Elasticsearch client of cfg: every node of cfg.URL
// in its pool, requests retried on another node on a connection error or
// an overloaded node's answer.
func newClient(cfg Config) (*elasticsearch.Client, error) {
	urls := nodeURLs(cfg.URL)
	if len(urls) == 0 {
		return nil, fmt.Errorf("elastic: no Elasticsearch URL")
	}
	// net/http's default transport keeps 2 idle connections per host:
	// an API replica under concurrent reads, or a load with its bulk
	// workers and two batches in flight, would open and close a
	// connection for most requests. And it asks for gzip, which on a
	// local network costs both ends more CPU than the bytes it saves
	// (measured: an aggregation answer about 6% sooner without).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = maxIdleConns, maxIdleConns
	tr.DisableCompression = true
	es, err := elasticsearch.NewClient(elasticsearch.Config{
		Addresses:     urls,
		MaxRetries:    max(2, len(urls)),
		RetryOnStatus: []int{502, 503, 504, 429},
		Transport:     tr,
	})
	if err != nil {
		return nil, fmt.Errorf("elastic: client for %s: %w", redacted(urls), err)
	}
	return es, nil
}

// redacted lists node URLs for a message, with any password masked.
func redacted(urls []string) string {
	out := make([]string, len(urls))
	for i, raw := range urls {
		if u, err := url.Parse(raw); err == nil {
			out[i] = u.Redacted()
		} else {
			out[i] = "(unparsable URL)"
		}
	}
	return strings.Join(out, ",")
}
