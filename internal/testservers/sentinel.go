//go:build unix

package testservers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the master name the Sentinels of StartSentinel monitor
// (NOTICES_REDIS_MASTER).
const SentinelMaster = "noticesd"

// Sentinel timings: short, so that a failover takes seconds. A Sentinel
// calls the primary down after SentinelDownAfter without an answer; a
// failover that stalls is retried after twice SentinelFailoverTimeout.
const (
	SentinelDownAfter       = 1000 * time.Millisecond
	SentinelFailoverTimeout = 4000 * time.Millisecond
)

// SentinelTopology is a Redis primary (appendonly yes), one replica of it
// and three Sentinels monitoring it as SentinelMaster with quorum 2, each a
// redis-server process on a free loopback port in a directory of its own.
// StartSentinel starts it for one test; every process is stopped when the
// test ends, and (Linux) when the test binary dies, as each is started with
// the parent-death signal SIGKILL, in a process group of its own.
type SentinelTopology struct {
	// Sentinels are the host:port of the three Sentinels
	// (NOTICES_REDIS_SENTINELS, comma-joined).
	Sentinels []string
	// Master is the name they monitor (NOTICES_REDIS_MASTER).
	Master string

	redisProcs        // the primary, the replica and the Sentinels
	first      string // the primary's address at the start
}

// StartSentinel starts a SentinelTopology, waits until the replica has
// synced and every Sentinel knows the replica and the two other Sentinels
// (so that a failover can be authorised), and returns it. Without
// redis-server on PATH the test fails under CI=true and is skipped loudly
// otherwise; redis-sentinel is the same binary, run with --sentinel.
func StartSentinel(t testing.TB) *SentinelTopology {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server (for a Sentinel topology)", "no redis-server on PATH: apt-get install redis-server (scripts/services.sh install does)")
		return nil
	}
	top := &SentinelTopology{Master: SentinelMaster, redisProcs: newRedisProcs(t)}
	t.Cleanup(top.stopAll)

	primary := top.start(t, bin, "primary", nil, "", freeLoopback)
	top.first = primary.addr
	top.start(t, bin, "replica", []string{"replicaof " + strings.Replace(primary.addr, ":", " ", 1)}, "", freeLoopback)
	for i := 1; i <= 3; i++ {
		host, port, _ := net.SplitHostPort(primary.addr)
		s := top.start(t, bin, "sentinel"+strconv.Itoa(i), []string{
			fmt.Sprintf("sentinel monitor %s %s %s 2", SentinelMaster, host, port),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMaster, SentinelDownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", SentinelMaster, SentinelFailoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s 1", SentinelMaster),
		}, "--sentinel", freeLoopback)
		top.Sentinels = append(top.Sentinels, s.addr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := top.settled(ctx); err != nil {
		t.Fatalf("Sentinel topology did not settle within 60 s: %v\n%s", err, top.logs())
	}
	return top
}

// waitPing waits until p answers PING to rdb, a client of it, which it
// closes.
func waitPing(rdb *redis.Client, p *redisProc, limit time.Duration) error {
	defer rdb.Close()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited: %w", err)
		default:
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// settled checks, until ctx ends, that the replica's link to the primary is
// up and that each Sentinel sees the primary, the replica and two other
// Sentinels.
func (top *SentinelTopology) settled(ctx context.Context) error {
	var last error
	for {
		if last = top.settledOnce(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (top *SentinelTopology) settledOnce(ctx context.Context) error {
	for _, s := range top.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s, MaxRetries: -1})
		primary, err := sc.GetMasterAddrByName(ctx, top.Master).Result()
		if err != nil {
			sc.Close()
			return fmt.Errorf("sentinel %s: master: %w", s, err)
		}
		replicas, err := sc.Replicas(ctx, top.Master).Result()
		if err != nil {
			sc.Close()
			return fmt.Errorf("sentinel %s: replicas: %w", s, err)
		}
		others, err := sc.Sentinels(ctx, top.Master).Result()
		sc.Close()
		if err != nil {
			return fmt.Errorf("sentinel %s: sentinels: %w", s, err)
		}
		if got := net.JoinHostPort(primary[0], primary[1]); got != top.first {
			return fmt.Errorf("sentinel %s names %s as primary, not %s", s, got, top.first)
		}
		up := 0
		for _, r := range replicas {
			if !strings.Contains(r["flags"], "down") && r["master-link-status"] == "ok" {
				up++
			}
		}
		if up != 1 || len(others) != 2 {
			return fmt.Errorf("sentinel %s sees %d replica(s) in sync and %d other Sentinel(s), want 1 and 2", s, up, len(others))
		}
	}
	return nil
}

// Primary asks the Sentinels (the first that answers) which address is the
// primary now.
func (top *SentinelTopology) Primary(ctx context.Context) (string, error) {
	var errs []error
	for _, s := range top.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s, MaxRetries: -1})
		a, err := sc.GetMasterAddrByName(ctx, top.Master).Result()
		sc.Close()
		if err == nil {
			return net.JoinHostPort(a[0], a[1]), nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", s, err))
	}
	return "", errors.Join(errs...)
}

// KillPrimary sends SIGKILL to the current primary (kill -9) and returns
// its address.
func (top *SentinelTopology) KillPrimary(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addr, err := top.Primary(ctx)
	if err != nil {
		t.Fatalf("which primary: %v", err)
	}
	top.mu.Lock()
	p := top.servers[addr]
	top.mu.Unlock()
	if p == nil {
		t.Fatalf("the Sentinels name %s as primary, which this topology did not start", addr)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %s: %v", p.name, err)
	}
	<-p.done
	return addr
}

// WaitFailover waits until every Sentinel names a primary other than old,
// and that primary answers as a master; it returns the new address.
func (top *SentinelTopology) WaitFailover(t testing.TB, old string, limit time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		addr, err := top.agreedPrimary(ctx)
		if err == nil && addr != old {
			rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
			info, err := rdb.Info(ctx, "replication").Result()
			rdb.Close()
			if err == nil && strings.Contains(info, "role:master") {
				return addr
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no failover away from %s within %s (last: %s, %v)\n%s", old, limit, addr, err, top.logs())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// agreedPrimary is the primary all three Sentinels name, or an error.
func (top *SentinelTopology) agreedPrimary(ctx context.Context) (string, error) {
	seen := ""
	for _, s := range top.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s, MaxRetries: -1})
		a, err := sc.GetMasterAddrByName(ctx, top.Master).Result()
		sc.Close()
		if err != nil {
			return "", err
		}
		addr := net.JoinHostPort(a[0], a[1])
		if seen != "" && addr != seen {
			return "", fmt.Errorf("the Sentinels disagree: %s and %s", seen, addr)
		}
		seen = addr
	}
	return seen, nil
}

// freeLoopback returns a 127.0.0.1 address with a port free at the time
// of the call.
func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
