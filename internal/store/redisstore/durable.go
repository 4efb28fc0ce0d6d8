package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/keyspace"
)

// WaitTimeout is how long an acknowledged write waits for a replica to
// confirm it (Redis WAIT 1 <ms>) before the API answers 503
// backend_unavailable instead of 201/200. A replica on the same network
// confirms in well under a millisecond (docs/redis.md, "Durability"); a
// second is long enough for a busy one and short enough for a client.
const WaitTimeout = time.Second

// replicasTTL is how long a master's replica count (INFO replication,
// connected_slaves) is taken as known: a replica that attaches is waited
// for from at most this long after.
const replicasTTL = 2 * time.Second

// replicaCount caches the number of replicas connected to each master,
// by address (one: the primary; on a Redis Cluster, each master a write
// went to).
type replicaCount struct {
	mu sync.Mutex
	by map[string]replicasRead
}

// replicasRead is one master's replica count and when it was read.
type replicasRead struct {
	at time.Time
	n  int
}

// tags are the hash tags a change of account writes under: the
// namespace's and the account's (replicated waits on each one's master).
func (s *Store) tags(account string) []string {
	return []string{s.ns, keyspace.Account(s.name, account)}
}

// replicated makes the change the caller has just written durable before
// it is acknowledged: on each master the change went to that has
// replicas, it waits until at least one has everything written there so
// far, or fails with backend_unavailable. tags are the hash-tag prefixes
// of the keys written (keyspace.Prefix, keyspace.Account; none: the
// namespace's, s.ns). WAIT covers only its own connection's writes, and a
// change is written on several, so for each tag it writes a mark
// (INCR <tag>wait) and sends WAIT after it in one pipeline, on the
// connection of the master owning the tag's slot, once per distinct
// master (tags on one master share its WAIT). Why that suffices:
// docs/redis.md "Durability".
func (s *Store) replicated(ctx context.Context, what string, tags ...string) error {
	if len(tags) == 0 {
		tags = []string{s.ns}
	}
	done := map[string]bool{}
	for _, tag := range tags {
		mark := tag + waitMarkKey
		node, err := MasterFor(ctx, s.rdb, mark)
		if err != nil {
			return s.fail(what, err)
		}
		if addr := node.Options().Addr; !done[addr] {
			done[addr] = true
			if err := s.waitOn(ctx, what, node, mark); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitOn writes mark on master node and waits for a replica to have it,
// when node has replicas.
func (s *Store) waitOn(ctx context.Context, what string, node *redis.Client, mark string) error {
	n, err := s.replicas(ctx, node)
	if err != nil {
		return s.fail(what, err)
	}
	if n == 0 {
		return nil
	}
	var acked *redis.Cmd
	// A pipeline of a *redis.Client (single node, Sentinel failover, or
	// one master of a cluster) is written and read on one connection; a
	// retry sends both again together, on another one.
	_, err = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, mark)
		acked = p.Do(ctx, "WAIT", 1, WaitTimeout.Milliseconds())
		return nil
	})
	if err != nil {
		return s.fail(what, err)
	}
	if n, err := acked.Int64(); err == nil && n >= 1 {
		return nil
	}
	// Read the count again at the next write: the replica may be gone for
	// good (then writes go on without it) or only slow.
	s.replicaCache.mu.Lock()
	delete(s.replicaCache.by, node.Options().Addr)
	s.replicaCache.mu.Unlock()
	return errs.New(errs.BackendUnavailable,
		"Redis has a replica but it did not confirm the %s within %s, so the write is not yet on a replica; retry (a repeated create may add a second watch: list them first)", what, WaitTimeout)
}

// MasterFor is the client of the server that owns key: rdb itself unless
// it is a Redis Cluster client, then the master of key's hash slot (as the
// cluster client knows it; a command refused with MOVED makes it learn the
// new owner for the next call).
func MasterFor(ctx context.Context, rdb redis.UniversalClient, key string) (*redis.Client, error) {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, key)
	case *redis.Client:
		return c, nil
	}
	return nil, fmt.Errorf("redisstore: a Redis client of type %T is not supported", rdb)
}

// replicas returns the number of replicas connected to the master node,
// read with INFO replication at most every replicasTTL.
func (s *Store) replicas(ctx context.Context, node *redis.Client) (int, error) {
	c := &s.replicaCache
	addr := node.Options().Addr
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.by[addr]; ok && time.Since(r.at) < replicasTTL {
		return r.n, nil
	}
	info := node.InfoMap(ctx, "replication")
	if err := info.Err(); err != nil {
		return 0, err
	}
	if c.by == nil {
		c.by = map[string]replicasRead{}
	}
	// connected_slaves is absent on a replica: 0.
	n, _ := strconv.Atoi(info.Item("Replication", "connected_slaves"))
	c.by[addr] = replicasRead{at: time.Now(), n: n}
	return n, nil
}
