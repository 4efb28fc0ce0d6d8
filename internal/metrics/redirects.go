package metrics

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// RedirectHook is a go-redis hook for the node clients of a Redis Cluster
// client (redis.ClusterClient.OnNewNode): it counts the MOVED and ASK
// error replies the nodes answer this process with, which the cluster
// client then follows (sending the command again to the node named) and
// never returns. go-redis has no event for a redirect: the node client's
// hooks are where its reply is seen. Counted are the replies to single
// commands and scripts (ProcessHook) and to each command of a pipeline
// (ProcessPipelineHook); a redirect answered inside MULTI/EXEC is followed
// by go-redis before any command's error is set, so it is not counted.
// The counts are the process's: every cluster client it makes shares them.
var RedirectHook redis.Hook = redirectHook{}

// redirects counts the redirects RedirectHook saw, for the whole process.
var redirects struct{ moved, ask atomic.Int64 }

// Redirects returns the MOVED and ASK redirects counted since the process
// started.
func Redirects() (moved, ask int64) { return redirects.moved.Load(), redirects.ask.Load() }

type redirectHook struct{}

// DialHook implements redis.Hook.
func (redirectHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

// ProcessHook implements redis.Hook: it counts a redirect answered to cmd.
func (redirectHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		countRedirect(err)
		return err
	}
}

// ProcessPipelineHook implements redis.Hook: it counts the redirects
// answered to the pipeline's commands, one per command.
func (redirectHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			countRedirect(cmd.Err())
		}
		return err
	}
}

// countRedirect counts err when it is a MOVED or ASK error reply.
func countRedirect(err error) {
	var reply redis.Error
	if err == nil || !errors.As(err, &reply) {
		return
	}
	switch msg := reply.Error(); {
	case strings.HasPrefix(msg, "MOVED "):
		redirects.moved.Add(1)
	case strings.HasPrefix(msg, "ASK "):
		redirects.ask.Add(1)
	}
}

var descRedisRedirects = prometheus.NewDesc(namespace+"_redis_redirects_total",
	"Redirects Redis Cluster nodes answered this process with (the cluster client followed them), by redirect: moved or ask.",
	[]string{"redirect"}, nil)
