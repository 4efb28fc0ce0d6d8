package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"noticesd/internal/config"
	"noticesd/internal/store/arrival"
	"noticesd/internal/store/elastic"
)

// scaleStore is the scale backend's notice and register store with the
// Redis client it allocates notice_seq through.
type scaleStore struct {
	*elastic.Store
	rdb *redis.Client
}

// Close closes the Redis client.
func (s *scaleStore) Close() error { return s.rdb.Close() }

// openScale opens the Elasticsearch notice store of NOTICES_NAMESPACE, with
// notice_seq and the arrival watermark in NOTICES_REDIS_URL.
func openScale(ctx context.Context, cfg config.Config) (*scaleStore, error) {
	if cfg.Backend != "scale" {
		return nil, fmt.Errorf("this command needs NOTICES_BACKEND=scale (it is %s)", cfg.Backend)
	}
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("NOTICES_REDIS_URL=%q: %w", cfg.RedisURL, err)
	}
	rdb := redis.NewClient(opt)
	st, err := elastic.Open(ctx, elastic.Config{
		URL:       cfg.ElasticsearchURL,
		Namespace: cfg.Namespace,
		Arrivals:  arrival.New(rdb, cfg.Namespace, 0),
	})
	if err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("open Elasticsearch at %s: %w", cfg.ElasticsearchURL, err)
	}
	return &scaleStore{Store: st, rdb: rdb}, nil
}
