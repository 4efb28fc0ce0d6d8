package main

import (
	"context"

	"github.com/noticesd/noticesd/api"
	"github.com/noticesd/noticesd/internal/metrics"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/store/scale"
)

// trackRedis follows the Redis primary of st's connection (every part of
// the process shares it: the stores, the limiter, asynq): m counts dials,
// reconnects and failovers on /metrics, and the returned source reports
// the primary in use for /health and /ready.
func trackRedis(st *scale.Store, m *metrics.Metrics) api.RedisSource {
	p := redisstore.TrackPrimary(st.Client())
	m.CountRedis(func() metrics.RedisCounts {
		c := p.Counts()
		return metrics.RedisCounts{Dials: c.Dials, DialErrors: c.DialErrors, Reconnects: c.Reconnects, Failovers: c.Failovers}
	})
	return func(ctx context.Context) (api.RedisStatus, error) {
		addr, err := p.Addr(ctx, st.Client())
		if err != nil {
			return api.RedisStatus{}, err
		}
		c := p.Counts()
		return api.RedisStatus{Primary: addr, Reconnects: c.Reconnects, Failovers: c.Failovers}, nil
	}
}
