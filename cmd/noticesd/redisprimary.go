package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/api"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/metrics"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/store/scale"
)

// trackRedis follows the Redis primary of st's connection (every part of
// the process shares it: the stores, the limiter, asynq): m counts dials,
// reconnects and failovers on /metrics, and the returned source reports
// the primary in use for /health and /ready. On a Redis Cluster the
// primary is the master of namespace ns's hash slot (every key of the
// namespace is in it), and the source lists every master and whether it
// answers.
func trackRedis(st *scale.Store, ns string, m *metrics.Metrics) api.RedisSource {
	p := redisstore.TrackPrimary(st.Client())
	m.CountRedis(func() metrics.RedisCounts {
		c := p.Counts()
		return metrics.RedisCounts{Dials: c.Dials, DialErrors: c.DialErrors, Reconnects: c.Reconnects, Failovers: c.Failovers}
	})
	return func(ctx context.Context) (api.RedisStatus, error) {
		masters, err := redisstore.Masters(ctx, st.Client())
		if err != nil {
			return api.RedisStatus{}, err
		}
		var addr string
		if masters == nil {
			addr, err = p.Addr(ctx, st.Client())
		} else if owner, ferr := redisstore.MasterFor(ctx, st.Client(), keyspace.Prefix(ns)); ferr == nil {
			addr = owner.Options().Addr
		} else {
			err = ferr
		}
		if err != nil {
			return api.RedisStatus{}, err
		}
		c := p.Counts()
		out := api.RedisStatus{Primary: addr, Reconnects: c.Reconnects, Failovers: c.Failovers}
		for _, n := range masters {
			out.Masters = append(out.Masters, api.RedisNode{Node: n.Addr, Reachable: n.Reachable})
		}
		return out, nil
	}
}

// redisProbe is a check of /health and /ready: the Redis store's PING, and
// on a Redis Cluster a PING of the master holding key's slot (the cluster
// client sends a keyless PING to the next master round the cluster, so a
// lost master would make the check answer one time in three).
func redisProbe(st *scale.Store, key string) api.Check {
	if _, cluster := st.Client().(*redis.ClusterClient); !cluster {
		return st.Redis.Ping
	}
	return func(ctx context.Context) error {
		m, err := redisstore.MasterFor(ctx, st.Client(), key)
		if err != nil {
			return err
		}
		return m.Ping(ctx).Err()
	}
}
