//go:build unix

package testservers

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The topology fails over when its primary is killed: the replica becomes
// the primary within seconds, and a go-redis failover client through the
// Sentinels finds it and reads what was written (and replicated) before.
func TestSentinelTopology(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five redis-server processes and kills one")
	}
	top := StartSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: top.Master, SentinelAddrs: top.Sentinels})
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d replicas, %v", n, err)
	}
	start := time.Now()
	old := top.KillPrimary(t)
	now := top.WaitFailover(t, old, 30*time.Second)
	t.Logf("failover from %s to %s in %s", old, now, time.Since(start).Round(time.Millisecond))
	var v string
	var err error
	for time.Since(start) < 30*time.Second {
		if v, err = rdb.Get(ctx, "k").Result(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || v != "before" {
		t.Fatalf("after the failover GET k = %q, %v; want before", v, err)
	}
	if got, err := top.Primary(ctx); err != nil || got != now {
		t.Fatalf("Primary() = %s, %v; want %s", got, err, now)
	}
}
