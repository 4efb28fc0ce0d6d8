package redisstore

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/metrics"
)

// Primary follows the Redis server a client's connections go to, through
// go-redis hooks (every part of the process shares the client: the store,
// asynq, the limiter), and counts dials, reconnects and failovers as
// docs/operating.md "Metrics" defines them. Safe for concurrent use. On a
// Redis Cluster each node client gets the hooks, but connections to
// several masters at once are its normal state: Failovers stays 0 and Addr
// is not the cluster's (see Masters).
type Primary struct {
	cluster bool
	mu      sync.Mutex
	addr    string // of the last connection made ("" before the first)
	c       metrics.RedisCounts
	lost    bool // a connection was lost since the last one made
}

// TrackPrimary adds a Primary's hooks to rdb (on a Redis Cluster, to each
// of its node clients) and returns it. Connections rdb already holds are
// not seen; Addr learns the first of them from the server (CLIENT INFO)
// when asked before any dial.
func TrackPrimary(rdb redis.UniversalClient) *Primary {
	p := &Primary{}
	if c, ok := rdb.(*redis.ClusterClient); ok {
		p.cluster = true
		c.OnNewNode(func(node *redis.Client) { node.AddHook(p) })
		return p
	}
	rdb.AddHook(p)
	return p
}

// DialHook implements redis.Hook: it notes each connection made.
func (p *Primary) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.c.DialErrors++
			p.lost = true
			return conn, err
		}
		p.c.Dials++
		at := conn.RemoteAddr().String()
		moved := !p.cluster && p.addr != "" && at != p.addr
		if p.lost || moved {
			p.c.Reconnects++
			p.lost = false
		}
		if moved {
			p.c.Failovers++
		}
		if !p.cluster {
			p.addr = at
		}
		return conn, err
	}
}

// ProcessHook implements redis.Hook: a command that failed for want of a
// connection marks it lost.
func (p *Primary) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		p.noteErr(err)
		return err
	}
}

// ProcessPipelineHook implements redis.Hook, as ProcessHook.
func (p *Primary) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		p.noteErr(err)
		return err
	}
}

// noteErr marks the connection lost when err is not Redis's answer (an
// error reply, a missing key) nor the caller giving up.
func (p *Primary) noteErr(err error) {
	if !connectionLost(err) {
		return
	}
	p.mu.Lock()
	p.lost = true
	p.mu.Unlock()
}

// connectionLost reports whether err says the connection to Redis failed
// (reset, refused, closed, timed out, the server gone read-only after a
// failover) rather than being the server's answer or a cancelled call.
func connectionLost(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		// An error reply: the server answered. READONLY comes from a
		// demoted primary, LOADING from one still reading its AOF.
		msg := reply.Error()
		return strings.HasPrefix(msg, "READONLY") || strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "MASTERDOWN")
	}
	return true
}

// Counts returns what p has counted since it started: Failovers, a
// connection made to another address than the one before (a new primary).
func (p *Primary) Counts() metrics.RedisCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.c
}

// Addr returns the host:port of the Redis server rdb's connections go to:
// the last connection made, or, before any was seen, the server's own
// address for the connection that answers CLIENT INFO (laddr).
func (p *Primary) Addr(ctx context.Context, rdb redis.UniversalClient) (string, error) {
	p.mu.Lock()
	addr := p.addr
	p.mu.Unlock()
	if addr != "" {
		return addr, nil
	}
	info, err := rdb.Do(ctx, "CLIENT", "INFO").Text()
	if err != nil {
		return "", err
	}
	for _, f := range strings.Fields(info) {
		if v, ok := strings.CutPrefix(f, "laddr="); ok {
			if i := strings.LastIndexByte(v, ':'); i > 0 {
				v = net.JoinHostPort(strings.Trim(v[:i], "[]"), v[i+1:])
			}
			p.mu.Lock()
			if p.addr == "" {
				p.addr = v
			}
			addr = p.addr
			p.mu.Unlock()
			return addr, nil
		}
	}
	return "", errors.New("CLIENT INFO named no laddr")
}

// Node is one master of a Redis Cluster and whether it answers.
type Node struct {
	// Addr is the master's host:port as the cluster reports it.
	Addr string
	// Reachable says whether it answered PING.
	Reachable bool
}

// Masters lists the masters of the Redis Cluster rdb is a client of (as
// its view of the cluster has them, reloaded first), each with whether it
// answers a PING within a second, sorted by address; nil for any other client. A cluster
// no node of which answers is an error.
func Masters(ctx context.Context, rdb redis.UniversalClient) ([]Node, error) {
	c, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return nil, nil
	}
	var mu sync.Mutex
	var out []Node
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		up := m.Ping(pctx).Err() == nil
		mu.Lock()
		out = append(out, Node{Addr: m.Options().Addr, Reachable: up})
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Addr, b.Addr) })
	return out, nil
}
