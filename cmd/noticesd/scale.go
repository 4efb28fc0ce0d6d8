package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/api"
	"github.com/noticesd/noticesd/internal/collector"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/lease"
	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/metrics"
	"github.com/noticesd/noticesd/internal/store/elastic"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/store/scale"
	"github.com/noticesd/noticesd/worker/scheduler"
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
// Webhooks: registrations and delivery records are the Redis store's; the
// deliveries are made by `noticesd worker` (asynq). The collector, when
// NOTICES_SOURCE is set, is started by wireScaleParts.
func wireScale(ctx context.Context, cfg config.Config, deps *api.Deps) (*scale.Store, error) {
	if cfg.Backend != "scale" {
		return nil, fmt.Errorf("this command needs NOTICES_BACKEND=scale (it is %s)", cfg.Backend)
	}
	// The bulk screen answers from this replica's in-memory copy of the
	// notices (and, with NOTICES_SCREEN_COPY, of the register), started by
	// wireScaleParts.
	st, err := scale.Open(ctx, cfg, redisstore.Options{ScreenCopy: cfg.ScreenCopy})
	if err != nil {
		return nil, err
	}
	deps.Notices = st.Elastic
	deps.Accounts = st.Redis
	deps.Watches = st.Redis
	deps.Checks = map[string]api.Check{
		"search": st.Elastic.Ping,
		"store":  redisProbe(st, keyspace.Prefix(cfg.Namespace)),
		"queue":  redisProbe(st, "asynq:{"+scheduler.QueueName(cfg.Namespace)+"}"),
	}
	deps.Search = searchStatus(st.Elastic)
	deps.SearchNodes = searchNodes(st.Elastic)
	limiter := limit.NewRedis(st.Client(), cfg.Namespace, cfg.HeavyConcurrency, limit.DefaultLease)
	deps.Limiter = limiter
	// A known key's check and its rate token (and a heavy request's slot)
	// in one Redis script call, on the limiter's buckets and slots (same
	// Redis, same namespace).
	deps.Gate = st.Redis.AuthenticateAndAllow
	deps.HeavyGate = st.Redis.SlotGate(limiter)
	if cfg.Webhooks {
		// Registrations and delivery records live in Redis; the deliveries
		// themselves are made by `noticesd worker` processes.
		deps.Webhooks = st.Redis
		// Test deliveries are made by serve itself, while the client waits.
		if deps.TestSender, err = newTestSender(cfg); err != nil {
			st.Close()
			return nil, err
		}
	}
	// Request and collector counters; the stored counts (accounts,
	// watches, deliveries, queue depth, retry backlog, mail) are read from
	// Redis at each scrape, the same from every replica. Delivery attempts
	// are counted by the workers that make them (their own /metrics).
	deps.Metrics = metrics.New(st.Redis, deps.Logger)
	deps.Metrics.CountAggCache(st.Elastic.AggCacheReads)
	deps.Redis = trackRedis(st, cfg.Namespace, deps.Metrics)
	deps.Metrics.CountElasticsearchNodes(st.Elastic.NodeCounts)
	deps.Mail = newMailHealth(cfg, st.Redis, deps.Logger)
	return st, nil
}

// collectorLeaseKey is the Redis key of the lease that lets one serve
// replica of a namespace run the collector.
func collectorLeaseKey(ns string) string { return keyspace.Prefix(ns) + "collector:lease" }

// collectorStateKey is the Redis key of the collector's feed state (ETag,
// Last-Modified, since cursor), written only by the lease holder.
func collectorStateKey(ns string) string { return keyspace.Prefix(ns) + "collector:state" }

// collectorState is the feed state of a scale-mode collector: a Redis
// record only the collector lease's holder writes, so every serve
// replica resumes from one cursor.
type collectorState struct{ rec lease.Record }

// Load implements collector.StateStore.
func (s collectorState) Load(ctx context.Context) ([]byte, error) { return s.rec.Load(ctx) }

// Save implements collector.StateStore: a replica whose lease lapsed is
// refused (collector.ErrLeaseLost) and its successor's cursor stands.
func (s collectorState) Save(ctx context.Context, b []byte) error {
	err := s.rec.Save(ctx, b)
	if errors.Is(err, lease.ErrNotHeld) {
		return collector.ErrLeaseLost
	}
	return err
}

// newCollectorLease is the collector lease of the namespace
// (NOTICES_COLLECTOR_LEASE), not yet started.
func newCollectorLease(cfg config.Config, st *scale.Store) *lease.Lease {
	return lease.New(st.Client(), collectorLeaseKey(cfg.Namespace), cfg.CollectorLease)
}

// wireScaleParts starts what a scale-mode serve runs beside the API: the
// sweeper that undoes, within seconds, a watch create or delete a dead
// replica left half made (redisstore.Sweeper), the bulk screen's in-memory
// copy (loaded in the background: screens wait for its notices and read
// the register from Redis until its register is loaded) and, with
// NOTICES_SOURCE set, the collector, gated by a lease in Redis so that only
// one replica collects at a time (another takes over within
// lease.DefaultTTL when the holder dies). Parts stop in reverse order: the
// collector, then the lease (given up at once).
func wireScaleParts(ctx context.Context, cfg config.Config, st *scale.Store, log *slog.Logger, deps *api.Deps, start func(part) error) error {
	if err := start(st.Redis.Sweeper(log.With("part", "sweeper"))); err != nil {
		return err
	}
	if c := st.Redis.ScreenCopy(); c != nil {
		deps.Metrics.CountScreenCopy(func() metrics.ScreenCopyCounts {
			fromCopy, fromRedis := c.Counts()
			loads, behind := c.Loads()
			return metrics.ScreenCopyCounts{FromCopy: fromCopy, FromRedis: fromRedis, Loads: loads, Behind: behind}
		})
		if err := start(c); err != nil {
			return err
		}
	}
	if cfg.Source == "" {
		return nil
	}
	l := newCollectorLease(cfg, st)
	if err := start(l); err != nil {
		return err
	}
	c, err := newCollector(cfg, st.Writer(), log, deps.Metrics, l.Held, collectorState{l.Record(collectorStateKey(cfg.Namespace))})
	if err != nil {
		return err
	}
	if err := start(collectorPart{c}); err != nil {
		return err
	}
	deps.Health = collectorHealth{c}
	return nil
}

// searchStatus is /health's search block from the Elasticsearch store.
func searchStatus(es *elastic.Store) api.SearchSource {
	return func(ctx context.Context) (api.SearchStatus, error) {
		h, err := es.Health(ctx)
		if err != nil {
			return api.SearchStatus{}, err
		}
		out := api.SearchStatus{Cluster: h.Cluster, Indices: make([]api.SearchIndex, 0, len(h.Indices))}
		for _, ix := range h.Indices {
			out.Indices = append(out.Indices, api.SearchIndex{Alias: ix.Alias, Index: ix.Index, MappingVersion: ix.Version, Docs: ix.Docs})
		}
		if h.NewestCollectedAt != "" {
			at, age := h.NewestCollectedAt, h.NewestAge
			out.NewestCollectedAt, out.NewestAgeSeconds = &at, &age
		}
		return out, nil
	}
}

// searchNodes is /health's and /ready's search_nodes: which Elasticsearch
// nodes of NOTICES_ELASTICSEARCH_URL answer (host:port only).
func searchNodes(es *elastic.Store) api.SearchNodesSource {
	return func(ctx context.Context) []api.SearchNode {
		ns := es.Nodes(ctx)
		out := make([]api.SearchNode, len(ns))
		for i, n := range ns {
			out[i] = api.SearchNode{Node: n.Node, Reachable: n.Reachable}
		}
		return out
	}
}

// sealSecrets seals anew, under NOTICES_SECRET_KEY, every webhook secret
// still sealed under NOTICES_SECRET_KEY_PREVIOUS: what the embedded store
// does when it opens, so after one start of serve or worker the previous
// key can be dropped in scale mode too.
func sealSecrets(ctx context.Context, rs *redisstore.Store, log *slog.Logger) error {
	n, err := rs.SealSecrets(ctx)
	if err != nil {
		return fmt.Errorf("seal webhook secrets under NOTICES_SECRET_KEY: %w", err)
	}
	if n > 0 {
		log.Info("webhook secrets sealed under the current NOTICES_SECRET_KEY; NOTICES_SECRET_KEY_PREVIOUS may now be dropped", "secrets", n)
	}
	return nil
}

// warnWithoutAOF logs a warning when Redis (any master of a Redis
// Cluster) runs without its append-only file: accounts, keys, watches and
// match logs live only there, and without AOF a Redis restart loses what
// changed since its last snapshot (docs/redis.md). A Redis that refuses
// CONFIG (managed services) is not checked.
func warnWithoutAOF(ctx context.Context, rdb redis.UniversalClient, log *slog.Logger) {
	var mu sync.Mutex
	var without []string
	err := redisstore.ForEachMaster(ctx, rdb, func(ctx context.Context, m *redis.Client) error {
		v, err := m.ConfigGet(ctx, "appendonly").Result()
		if err != nil {
			return err
		}
		if v["appendonly"] == "no" {
			mu.Lock()
			without = append(without, m.Options().Addr)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		log.Info("could not check Redis persistence (CONFIG GET appendonly refused); make sure it runs with appendonly yes", "err", err)
		return
	}
	if len(without) == 0 {
		return
	}
	var which []any
	if _, cluster := rdb.(*redis.ClusterClient); cluster {
		which = []any{"masters", without}
	}
	log.Warn("Redis runs with appendonly no: a Redis restart loses every account, key, watch and delivery change since its last snapshot; set appendonly yes (docs/redis.md)", which...)
}
