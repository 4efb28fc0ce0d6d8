package redisstore

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/errs"
)

// WaitTimeout is how long an acknowledged write waits for a replica to
// confirm it (Redis WAIT 1 <ms>) before the API answers 503
// backend_unavailable instead of 201/200. A replica on the same network
// confirms in well under a millisecond (docs/redis.md, "Durability"); a
// second is long enough for a busy one and short enough for a client.
const WaitTimeout = time.Second

// replicasTTL is how long the primary's replica count (INFO replication,
// connected_slaves) is taken as known: a replica that attaches is waited
// for from at most this long after.
const replicasTTL = 2 * time.Second

// replicaCount caches the number of replicas connected to the primary.
type replicaCount struct {
	mu sync.Mutex
	at time.Time // when n was read; zero: never
	n  int
}

// replicated makes the change the caller has just written durable before
// it is acknowledged: when the primary has replicas, it waits until at
// least one has everything written so far, or fails with
// backend_unavailable ("the write is not yet on a replica; retry"). With
// no replica (a single Redis) it costs nothing.
//
// Redis WAIT waits for the replication offset of the calling
// connection's last write. The change itself may have been written on
// several pooled connections (a create is several steps), so replicated
// makes one write of its own on one connection (INCR of the wait mark)
// and sends WAIT on that same connection in the same round trip (one
// pipeline). The replication stream is one
// ordered log: the mark was written after every write of the change had
// been answered, so a replica that has the mark has the change.
func (s *Store) replicated(ctx context.Context, what string) error {
	n, err := s.replicas(ctx, false)
	if err != nil {
		return s.fail(what, err)
	}
	if n == 0 {
		return nil
	}
	var acked *redis.Cmd
	// A pipeline of a *redis.Client (single node or Sentinel failover) is
	// written and read on one connection; a retry sends both again
	// together, on another one.
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, s.key(waitMarkKey))
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
	s.replicaCache.at = time.Time{}
	s.replicaCache.mu.Unlock()
	return errs.New(errs.BackendUnavailable,
		"Redis has a replica but it did not confirm the %s within %s, so the write is not yet on a replica; retry (a repeated create may add a second watch: list them first)", what, WaitTimeout)
}

// replicas returns the number of replicas connected to the primary, read
// with INFO replication at most every replicasTTL (fresh forces a read).
func (s *Store) replicas(ctx context.Context, fresh bool) (int, error) {
	c := &s.replicaCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if !fresh && !c.at.IsZero() && time.Since(c.at) < replicasTTL {
		return c.n, nil
	}
	info, err := s.rdb.Info(ctx, "replication").Result()
	if err != nil {
		return 0, err
	}
	c.n, c.at = connectedReplicas(info), time.Now()
	return c.n, nil
}

// connectedReplicas reads connected_slaves from an INFO replication
// answer (0 when absent, as on a replica).
func connectedReplicas(info string) int {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}
