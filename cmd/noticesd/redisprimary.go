package main

import (
	"context"
	"sync"
	"time"

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
// primary is the master of namespace ns's hash slot (its shared keys),
// and the source lists every master and whether it answers; a failover
// there is any master replaced (each account's keys are on one of them)
// or the namespace's slot moved to another master, as the client's view
// of the cluster shows it at each probe and each scrape (masterSet).
func trackRedis(st *scale.Store, ns string, m *metrics.Metrics) api.RedisSource {
	p := redisstore.TrackPrimary(st.Client())
	owner := &masterSet{}
	cc, cluster := st.Client().(*redis.ClusterClient)
	m.CountRedis(func() metrics.RedisCounts {
		if cluster {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			var mu sync.Mutex
			var addrs []string
			err := cc.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
				mu.Lock()
				defer mu.Unlock()
				addrs = append(addrs, m.Options().Addr)
				return nil
			})
			if mc, ferr := redisstore.MasterFor(ctx, st.Client(), keyspace.Prefix(ns)); err == nil && ferr == nil {
				owner.seen(mc.Options().Addr, addrs)
			}
			cancel()
		}
		c := p.Counts()
		c.Failovers += owner.count()
		return c
	})
	return func(ctx context.Context) (api.RedisStatus, error) {
		masters, err := redisstore.Masters(ctx, st.Client())
		if err != nil {
			return api.RedisStatus{}, err
		}
		var addr string
		if masters == nil {
			addr, err = p.Addr(ctx, st.Client())
		} else if mc, ferr := redisstore.MasterFor(ctx, st.Client(), keyspace.Prefix(ns)); ferr == nil {
			addr = mc.Options().Addr
			var addrs []string
			for _, n := range masters {
				addrs = append(addrs, n.Addr)
			}
			owner.seen(addr, addrs)
		} else {
			err = ferr
		}
		if err != nil {
			return api.RedisStatus{}, err
		}
		c := p.Counts()
		out := api.RedisStatus{Primary: addr, Reconnects: c.Reconnects, Failovers: c.Failovers + owner.count()}
		for _, n := range masters {
			out.Masters = append(out.Masters, api.RedisNode{Node: n.Addr, Reachable: n.Reachable})
		}
		return out, nil
	}
}

// masterSet counts the failovers of a Redis Cluster: a view of its
// masters that has one the view before had not (a replica promoted after
// its master failed, a manual CLUSTER FAILOVER, a master added), or in
// which the namespace's slot is another master's (a reshard moved it).
// Only the changes seen are counted: several between two views count
// once, or not at all when the view came back. Safe for concurrent use.
type masterSet struct {
	mu      sync.Mutex
	owner   string // of the namespace's slot
	last    map[string]bool
	changes int64
}

// seen notes that owner holds the namespace's slot and addrs are the
// masters now.
func (o *masterSet) seen(owner string, addrs []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	changed := o.owner != "" && owner != o.owner
	now := map[string]bool{}
	for _, a := range addrs {
		changed = changed || o.last != nil && !o.last[a]
		now[a] = true
	}
	if changed {
		o.changes++
	}
	o.owner, o.last = owner, now
}

// count returns the changes seen.
func (o *masterSet) count() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changes
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
