package main

import (
	"context"
	"fmt"

	"noticesd/api"
	"noticesd/internal/config"
	"noticesd/internal/limit"
	"noticesd/internal/store/redisstore"
	"noticesd/internal/store/scale"
)

// openScale opens the scale backend of NOTICES_NAMESPACE: notices and the
// register in NOTICES_ELASTICSEARCH_URL, accounts, watches, identifier
// sets, notice_seq and the arrival watermark in NOTICES_REDIS_URL.
func openScale(ctx context.Context, cfg config.Config) (*scale.Store, error) {
	if cfg.Backend != "scale" {
		return nil, fmt.Errorf("this command needs NOTICES_BACKEND=scale (it is %s)", cfg.Backend)
	}
	return scale.Open(ctx, cfg, redisstore.Options{})
}

// wireScale fills deps for serve in scale mode: reads from Elasticsearch,
// accounts, watches, matches and the bulk screen from Redis, and the
// request limits shared by every replica through Redis. No data directory
// lock applies: any number of serve replicas may run on one namespace.
//
// Watch matches: the Redis store matches arrived notices when a watch's
// matches are read (redisstore.Options.NoMatchOnRead unset), so serve
// alone keeps every match log complete.
//
// Webhooks: delivery in scale mode belongs to `noticesd worker` (asynq),
// which this build does not have yet; serve leaves deps.Webhooks unset and
// the caller turns cfg.Webhooks off (see serve), so the webhook routes
// answer webhook_unavailable.
func wireScale(ctx context.Context, cfg config.Config, deps *api.Deps) (*scale.Store, error) {
	st, err := openScale(ctx, cfg)
	if err != nil {
		return nil, err
	}
	deps.Notices = st.Elastic
	deps.Accounts = st.Redis
	deps.Watches = st.Redis
	deps.Checks = map[string]api.Check{
		"search": st.Elastic.Ping,
		"store":  st.Redis.Ping,
		"queue":  st.Redis.Ping,
	}
	deps.Limiter = limit.NewRedis(st.Client(), cfg.Namespace, cfg.HeavyConcurrency, limit.DefaultLease)
	if cfg.Webhooks {
		// Registrations and delivery records live in Redis; the deliveries
		// themselves are made by `noticesd worker` processes.
		deps.Webhooks = st.Redis
	}
	if cfg.Source != "" {
		st.Close()
		return nil, fmt.Errorf("NOTICES_SOURCE is set: in scale mode the collector does not run inside serve (several replicas would collect the same feed); load with `noticesd ingest` or `noticesd collect --once` instead, and unset NOTICES_SOURCE for serve")
	}
	return st, nil
}
