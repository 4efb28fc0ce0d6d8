// Package scale is the scale-out backend (NOTICES_BACKEND=scale) put
// together: notices and the register in Elasticsearch (store/elastic), the
// publish log and its writer lease in Redis (store/publog), and accounts,
// watches, identifier sets, match logs and delivery records in Redis
// (store/redisstore), which reads notices through Elasticsearch. The
// composition root opens it with Open and hands its parts out through the
// seams of package store.
package scale

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/store/elastic"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/store/redisstore"
)

// Store is the scale backend: one Elasticsearch store and one Redis store
// in the configured namespace.
type Store struct {
	// Elastic holds notices and the register.
	Elastic *elastic.Store
	// Redis holds accounts, watches, identifier sets, match logs and
	// delivery records; it reads notices through Elastic.
	Redis *redisstore.Store
	rdb   redis.UniversalClient
}

// Compile-time checks of what redisstore finds by type assertion (the
// other seams are checked where the parts are handed out).
var (
	_ redisstore.StoredWriter    = (*elastic.Store)(nil)
	_ redisstore.RegisterIndexer = (*elastic.Store)(nil)
)

// Open connects to NOTICES_ELASTICSEARCH_URL and NOTICES_REDIS_URL and
// opens both stores in NOTICES_NAMESPACE (creating the indices behind
// their aliases on first use). The Redis store's Log, Plans and Secrets
// are cfg's (opts gives the rest).
func Open(ctx context.Context, cfg config.Config, opts redisstore.Options) (_ *Store, err error) {
	if cfg.Backend != "scale" {
		return nil, fmt.Errorf("scale: NOTICES_BACKEND is %q, not scale", cfg.Backend)
	}
	// Redis first: every later step reads it, and its failure would name
	// that step (sealing webhook secrets, say) rather than the server.
	rdb, err := redisstore.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = rdb.Close()
		}
	}()
	// Keys of an older version's layout move to this one's first (as
	// `noticesd migrate-keys` does; docs/redis.md, "Upgrading to the
	// sharded layout"): one GET once done.
	if _, err := redisstore.UpgradeKeys(ctx, rdb, cfg.Namespace, redisstore.UpgradeOptions{}); err != nil {
		return nil, err
	}
	plog := publog.New(rdb, cfg.Namespace, publog.Options{Retention: cfg.PublishLogRetention, LeaseTTL: cfg.WriterLease, Who: writerName(),
		Waiting: func(who string) {
			slog.Info("waiting for the notice writer lease (one writer at a time)", "held_by", who)
		}})
	opts.Log = plog
	aggCache := cfg.AggCache
	if aggCache == 0 {
		aggCache = -1 // NOTICES_AGG_CACHE=0: none
	}
	ca, err := cfg.ElasticsearchCACert()
	if err != nil {
		return nil, settingError("NOTICES_ELASTICSEARCH_CA_FILE", strings.TrimPrefix(err.Error(), "config: NOTICES_ELASTICSEARCH_CA_FILE: "))
	}
	es, err := elastic.Open(ctx, elastic.Config{
		URL:           cfg.ElasticsearchURL,
		Replicas:      cfg.ElasticsearchReplicas,
		APIKey:        cfg.ElasticsearchAPIKey,
		CACert:        ca,
		CAFingerprint: cfg.ElasticsearchCAFingerprint,
		Namespace:     cfg.Namespace,
		Log:           plog,
		AggCache:      aggCache,
	})
	if err != nil {
		var ae *elastic.AccessError
		if errors.As(err, &ae) {
			return nil, accessSetting(cfg, ae)
		}
		return nil, fmt.Errorf("open Elasticsearch at %s: %w", esHosts(cfg.ElasticsearchURLs()), err)
	}
	opts.Plans = cfg.Plans
	// Webhook secrets are sealed with NOTICES_SECRET_KEY, as embedded.
	if opts.Secrets, err = cfg.SecretBox(); err != nil {
		return nil, err
	}
	rs, err := redisstore.New(rdb, cfg.Namespace, es, opts)
	if err != nil {
		return nil, err
	}
	// A register load whose process died between its Elasticsearch and
	// its Redis commit is finished here, so both are on one register.
	if _, err := rs.CompleteRegister(ctx); err != nil {
		return nil, err
	}
	return &Store{Elastic: es, Redis: rs, rdb: rdb}, nil
}

// Writer is the write path of ingest and the collector: notices and
// register loads go to Elasticsearch, and what Redis keeps of them (the
// screen's identifier sets, match keys) follows.
func (s *Store) Writer() redisstore.Ingest {
	return redisstore.Ingest{Notices: s.Elastic, Redis: s.Redis}
}

// Client is the Redis connection, for parts that keep state of their own
// in the same Redis and namespace (the shared request limiter, asynq).
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Close closes the Redis connection.
func (s *Store) Close() error { return s.rdb.Close() }

// writerName names this process in the writer lease, for a writer that
// waits for it: host, pid and command.
func writerName() string {
	host, _ := os.Hostname()
	cmd := filepath.Base(os.Args[0])
	if len(os.Args) > 1 {
		cmd += " " + os.Args[1]
	}
	return fmt.Sprintf("%s on %s, pid %d", cmd, host, os.Getpid())
}

// esHosts names the nodes of NOTICES_ELASTICSEARCH_URL in a message: their
// host:port only, never a user:password.
func esHosts(urls []string) string {
	hosts := make([]string, 0, len(urls))
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil {
			hosts = append(hosts, u.Host)
		}
	}
	return strings.Join(hosts, ",")
}

// accessSetting names the setting to fix for a refusal of Elasticsearch at
// start (a config.SettingError: exit status 2).
func accessSetting(cfg config.Config, ae *elastic.AccessError) error {
	creds := cfg.ElasticsearchCredentials()
	switch ae.Problem {
	case elastic.ProblemTLS:
		switch {
		case cfg.ElasticsearchCAFingerprint != "":
			return settingError("NOTICES_ELASTICSEARCH_CA_FINGERPRINT", ae.Detail+"; give the SHA-256 fingerprint of the cluster's CA certificate, as Elasticsearch printed it at its first start")
		case cfg.ElasticsearchCAFile != "":
			return settingError("NOTICES_ELASTICSEARCH_CA_FILE", ae.Detail+fmt.Sprintf("; %s is not the CA that signed the node's certificate", cfg.ElasticsearchCAFile))
		default:
			return settingError("NOTICES_ELASTICSEARCH_CA_FILE", ae.Detail+"; set NOTICES_ELASTICSEARCH_CA_FILE (the cluster's CA, PEM) or NOTICES_ELASTICSEARCH_CA_FINGERPRINT")
		}
	case elastic.ProblemNotTLS:
		return settingError("NOTICES_ELASTICSEARCH_URL", ae.Detail+"; use http:// for a node without TLS")
	case elastic.ProblemWantsTLS:
		return settingError("NOTICES_ELASTICSEARCH_URL", ae.Detail+"; use https:// for it, with the cluster's CA in NOTICES_ELASTICSEARCH_CA_FILE or NOTICES_ELASTICSEARCH_CA_FINGERPRINT")
	case elastic.ProblemCredentials:
		switch creds {
		case "":
			return settingError("NOTICES_ELASTICSEARCH_URL", ae.Detail+"; the cluster needs credentials: user:password@ in NOTICES_ELASTICSEARCH_URL or NOTICES_ELASTICSEARCH_API_KEY")
		case "NOTICES_ELASTICSEARCH_URL":
			return settingError(creds, ae.Detail+"; check the user:password in NOTICES_ELASTICSEARCH_URL")
		default:
			return settingError(creds, ae.Detail+"; check the API key (the \"encoded\" value of the create API key answer) and that it is neither expired nor invalidated")
		}
	default:
		if creds == "" {
			creds = "NOTICES_ELASTICSEARCH_URL"
		}
		return settingError(creds, ae.Detail+fmt.Sprintf("; grant them to its role (docs/operating.md, \"Secured Elasticsearch\": cluster monitor, and manage, read, write on %s-*)", cfg.Namespace))
	}
}

// settingError is a config.SettingError naming setting, its message in
// the form config errors take ("config: NAME: what is wrong").
func settingError(setting, msg string) *config.SettingError {
	return &config.SettingError{Setting: setting, Message: "config: " + setting + ": " + msg}
}
