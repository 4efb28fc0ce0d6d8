package redisstore

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/testservers"
)

// replyErr is an error reply of the server, as go-redis returns one.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

func TestConnectionLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		lost bool
	}{
		{"no error", nil, false},
		{"missing key", redis.Nil, false},
		{"cancelled", fmt.Errorf("call: %w", context.Canceled), false},
		{"error reply", replyErr("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{"demoted primary", replyErr("READONLY You can't write against a read only replica."), true},
		{"loading", replyErr("LOADING Redis is loading the dataset in memory"), true},
		{"closed connection", io.EOF, true},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("connection refused")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := connectionLost(tc.err); got != tc.lost {
				t.Fatalf("connectionLost(%v) = %v, want %v", tc.err, got, tc.lost)
			}
		})
	}
}

// Primary follows a failover client through a Sentinel failover: the
// primary's address before, then the new one, one failover and at least
// one reconnect counted.
func TestPrimaryFollowsFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Sentinel topology and kills its primary")
	}
	top := testservers.StartSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first, err := top.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: top.Master, SentinelAddrs: top.Sentinels})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil { // a connection made before tracking
		t.Fatal(err)
	}
	p := TrackPrimary(rdb)
	if addr, err := p.Addr(ctx, rdb); err != nil || addr != first {
		t.Fatalf("Addr before any dial = %q, %v; want %s (from CLIENT INFO)", addr, err, first)
	}
	if c := p.Counts(); c.Failovers != 0 || c.Reconnects != 0 {
		t.Fatalf("before the failover: %+v", c)
	}

	old := top.KillPrimary(t)
	now := top.WaitFailover(t, old, 30*time.Second)
	testbinWait(t, 30*time.Second, func() bool { return rdb.Set(ctx, "k", "v", 0).Err() == nil })
	c := p.Counts()
	if c.Failovers != 1 || c.Reconnects < 1 {
		t.Fatalf("after the failover from %s to %s: %+v; want 1 failover, a reconnect", old, now, c)
	}
	if addr, err := p.Addr(ctx, rdb); err != nil || addr != now {
		t.Fatalf("Addr after the failover = %q, %v; want %s (the last connection's)", addr, err, now)
	}
	t.Logf("%s -> %s: %+v", old, now, c)
}

// testbinWait polls cond every 50 ms until it holds, failing t after limit.
func testbinWait(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", limit)
		}
	}
}
