package api

import "context"

// RedisStatus is the "redis" block of /health and /ready in scale mode:
// the Redis primary this process's connections go to (host:port only,
// never credentials; found through the Sentinels when
// NOTICES_REDIS_SENTINELS is set) and, since the process started, how
// often it reconnected and how often the primary changed.
type RedisStatus struct {
	// Primary is the host:port of the Redis server answering this process.
	Primary string `json:"primary"`
	// Reconnects counts connections made after one was lost.
	Reconnects int64 `json:"reconnects"`
	// Failovers counts changes of primary this process has seen.
	Failovers int64 `json:"failovers"`
}

// RedisSource reports RedisStatus for /health and /ready.
type RedisSource func(ctx context.Context) (RedisStatus, error)
