package api

import "context"

// RedisStatus is the "redis" block of /health and /ready in scale mode:
// the Redis primary this process's connections go to (host:port only,
// never credentials; found through the Sentinels when
// NOTICES_REDIS_SENTINELS is set) and, since the process started, how
// often it reconnected and how often the primary changed. On a Redis
// Cluster (NOTICES_REDIS_CLUSTER_URL), the primary is the master holding
// the namespace's keys, and Masters lists every master of the cluster.
type RedisStatus struct {
	// Primary is the host:port of the Redis server answering this process
	// (on a cluster: the master of the namespace's hash slot).
	Primary string `json:"primary"`
	// Reconnects counts connections made after one was lost.
	Reconnects int64 `json:"reconnects"`
	// Failovers counts changes of primary this process has seen (on a
	// cluster, of the master owning the namespace's hash slot).
	Failovers int64 `json:"failovers"`
	// Masters are the masters of a Redis Cluster and whether each answers;
	// absent unless NOTICES_REDIS_CLUSTER_URL is set.
	Masters []RedisNode `json:"masters,omitempty"`
}

// RedisNode is one master of a Redis Cluster and whether it answers.
type RedisNode struct {
	// Node is the master's host:port, as the cluster reports it.
	Node      string `json:"node"`
	Reachable bool   `json:"reachable"`
}

// RedisSource reports RedisStatus for /health and /ready.
type RedisSource func(ctx context.Context) (RedisStatus, error)
