package main

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/api"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/metrics"
	"github.com/noticesd/noticesd/internal/store/scale"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestRedisClusterRedirects: on the live Redis Cluster, the namespace's
// hash slot moved to another master and back. The process's cluster client,
// with its view of the cluster from before the move, meets a MOVED; while
// the slot is migrating back, a key not on the master it leaves meets an
// ASK; /metrics counts both (noticesd_redis_redirects_total, counted by the
// hook Dial puts on every node client). Each move changes the master owning
// the namespace: /health's failovers and noticesd_redis_failovers_total
// count them.
func TestRedisClusterRedirects(t *testing.T) {
	st, cfg, url := openClusterScale(t)
	ctx := context.Background()
	m := metrics.New(nil, nil)
	source := trackRedis(st, cfg.Namespace, m)
	key := keyspace.Prefix(cfg.Namespace)
	if err := st.Client().Set(ctx, key+":redirect-test", "kept", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	status := func() api.RedisStatus {
		t.Helper()
		s, err := source(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// waitOwner probes until /health names addr as the namespace's master
	// (the other nodes learn a slot's move by gossip).
	waitOwner := func(addr string) api.RedisStatus {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if s := status(); s.Primary == addr || time.Now().After(deadline) {
				return s
			}
		}
	}
	first := status()
	if first.Failovers != 0 {
		t.Fatalf("failovers %d before any move", first.Failovers)
	}
	c := newSlotMover(t, url, key)
	home := first.Primary
	var away string
	for addr := range c.ids {
		if addr != home {
			away = addr
			break
		}
	}
	t.Cleanup(func() { c.restore(home) })

	moved0, ask0 := metrics.Redirects()
	c.begin(home, away)
	c.finish(home, away)
	// the client still sends the slot to home, which answers MOVED
	if got, err := st.Client().Get(ctx, key+":redirect-test").Result(); err != nil || got != "kept" {
		t.Fatalf("GET after the move: %q, %v", got, err)
	}
	if moved, _ := metrics.Redirects(); moved == moved0 {
		t.Errorf("no MOVED counted for a GET sent to %s after the slot moved to %s", home, away)
	}
	if s := waitOwner(away); s.Primary != away || s.Failovers != 1 {
		t.Errorf("after the move to %s: /health's primary %s, failovers %d; want %s and 1", away, s.Primary, s.Failovers, away)
	}

	c.begin(away, home)
	// away holds the slot but is migrating it to home: a key it does not
	// have is asked of home (ASK)
	if err := st.Client().Get(ctx, key+":absent").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET of an absent key while the slot migrates: %v, want redis.Nil", err)
	}
	if _, ask := metrics.Redirects(); ask == ask0 {
		t.Errorf("no ASK counted for a GET of an absent key while %s migrates the slot to %s", away, home)
	}
	c.finish(away, home)
	if s := waitOwner(home); s.Primary != home || s.Failovers < 2 {
		t.Errorf("after the move back to %s: /health's primary %s, failovers %d; want %s and 2", home, s.Primary, s.Failovers, home)
	}

	got := map[string]float64{}
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			name := f.GetName()
			for _, l := range mt.GetLabel() {
				name += ":" + l.GetValue()
			}
			got[name] = mt.GetCounter().GetValue()
		}
	}
	if got["noticesd_redis_redirects_total:moved"] < 1 || got["noticesd_redis_redirects_total:ask"] < 1 || got["noticesd_redis_failovers_total"] < 2 {
		t.Errorf("/metrics: redirects moved %v, ask %v, failovers %v; want at least 1, 1 and 2", got["noticesd_redis_redirects_total:moved"],
			got["noticesd_redis_redirects_total:ask"], got["noticesd_redis_failovers_total"])
	}
}

// openClusterScale opens the scale store on the live Redis Cluster in a
// namespace of the test's, and returns it, its settings and the cluster's
// URL.
func openClusterScale(t *testing.T) (*scale.Store, config.Config, string) {
	t.Helper()
	url := testservers.RedisCluster(t)
	cfg, st := scaleEnvOn(t, "NOTICES_REDIS_CLUSTER_URL", url)
	return st, cfg, url
}

// slotMover moves one hash slot between the masters of a live cluster, as
// redis-cli --cluster reshard does: IMPORTING and MIGRATING, MIGRATE of its
// keys, then SETSLOT NODE on every master.
type slotMover struct {
	t       *testing.T
	admin   *redis.ClusterClient
	slot    int64
	ids     map[string]string        // master address: node id
	masters map[string]*redis.Client // master address: its client
}

func newSlotMover(t *testing.T, url, key string) *slotMover {
	o, err := redis.ParseClusterURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := &slotMover{t: t, admin: redis.NewClusterClient(o), ids: map[string]string{}, masters: map[string]*redis.Client{}}
	t.Cleanup(func() { _ = c.admin.Close() })
	ctx := context.Background()
	if c.slot, err = c.admin.ClusterKeySlot(ctx, key).Result(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	err = c.admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		id, err := m.Do(ctx, "CLUSTER", "MYID").Text()
		mu.Lock()
		defer mu.Unlock()
		c.ids[m.Options().Addr], c.masters[m.Options().Addr] = id, m
		return err
	})
	if err != nil || len(c.ids) < 2 {
		t.Fatalf("the cluster's masters: %v, %v", c.ids, err)
	}
	return c
}

// begin marks the slot migrating from one master to another.
func (c *slotMover) begin(from, to string) {
	c.t.Helper()
	c.do(to, "CLUSTER", "SETSLOT", c.slot, "IMPORTING", c.ids[from])
	c.do(from, "CLUSTER", "SETSLOT", c.slot, "MIGRATING", c.ids[to])
}

// finish moves the slot's keys and gives the slot to to.
func (c *slotMover) finish(from, to string) {
	c.t.Helper()
	ctx := context.Background()
	host, port, _ := net.SplitHostPort(to)
	for {
		keys, err := c.masters[from].ClusterGetKeysInSlot(ctx, int(c.slot), 100).Result()
		if err != nil {
			c.t.Fatal(err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		c.do(from, args...)
	}
	c.do(to, "CLUSTER", "SETSLOT", c.slot, "NODE", c.ids[to])
	c.do(from, "CLUSTER", "SETSLOT", c.slot, "NODE", c.ids[to])
	for addr := range c.masters {
		if addr != from && addr != to {
			c.do(addr, "CLUSTER", "SETSLOT", c.slot, "NODE", c.ids[to])
		}
	}
}

// restore gives the slot back to home with its keys, whatever state a
// failed test left it in.
func (c *slotMover) restore(home string) {
	ctx := context.Background()
	for addr, m := range c.masters {
		if addr == home {
			continue
		}
		_ = m.Do(ctx, "CLUSTER", "SETSLOT", c.slot, "STABLE").Err()
		if n, _ := m.ClusterCountKeysInSlot(ctx, int(c.slot)).Result(); n > 0 {
			c.begin(addr, home)
			c.finish(addr, home)
		}
	}
	_ = c.masters[home].Do(ctx, "CLUSTER", "SETSLOT", c.slot, "STABLE").Err()
	for _, m := range c.masters {
		_ = m.Do(ctx, "CLUSTER", "SETSLOT", c.slot, "NODE", c.ids[home]).Err()
	}
}

func (c *slotMover) do(addr string, args ...any) {
	c.t.Helper()
	if err := c.masters[addr].Do(context.Background(), args...).Err(); err != nil {
		c.t.Fatalf("%s: %v: %v", addr, args, err)
	}
}
