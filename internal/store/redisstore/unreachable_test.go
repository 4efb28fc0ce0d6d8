package redisstore

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestHungRedisIsUnavailable: a Redis that accepts connections and never
// answers (a hang) is backend_unavailable whichever way the client gives
// up, its read timeout or, under concurrent requests, its pool timeout;
// never a server_error.
func TestHungRedisIsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accept and say nothing
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), PoolSize: 1, PoolTimeout: 100 * time.Millisecond,
		ReadTimeout: 2 * time.Second, MaxRetries: -1, DisableIdentity: true, Protocol: 2})
	defer rdb.Close()
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { first <- rdb.Get(ctx, "k").Err() }() // holds the one connection
	time.Sleep(300 * time.Millisecond)
	second := rdb.Get(ctx, "k").Err()
	if !errors.Is(second, redis.ErrPoolTimeout) {
		t.Fatalf("second request: %v, want the pool timeout (the test's premise)", second)
	}
	s := &Store{}
	for name, err := range map[string]error{"pool timeout": second, "read timeout": <-first} {
		if got := s.fail("read", err); !errs.Is(got, errs.BackendUnavailable) {
			t.Errorf("%s (%v) maps to %v, want backend_unavailable", name, err, got)
		}
	}
}

// TestClusterDownIsUnavailable: a Redis Cluster node that answers
// CLUSTERDOWN (a master lost, its replica not yet promoted: every node
// refuses every command) is an outage, 503 backend_unavailable, not a
// server error (TestRedisClusterMasterLoss saw 500s from it once the
// killed master no longer held every key of a request).
func TestClusterDownIsUnavailable(t *testing.T) {
	s := &Store{}
	if err := s.fail("authenticate", errors.New("CLUSTERDOWN The cluster is down")); !errs.Is(err, errs.BackendUnavailable) {
		t.Errorf("CLUSTERDOWN: %v, want backend_unavailable", err)
	}
}

// TestRedirectIsUnavailable: a Redis Cluster answer that says a slot's
// owner or role is changing (MOVED or ASK past go-redis's redirects
// during a failover or reshard, TRYAGAIN, READONLY from a demoted
// primary, MASTERDOWN) is an outage, 503 backend_unavailable, not a
// server error. The MOVED is a real cluster master's, asked for a key of
// another master's slot.
func TestRedirectIsUnavailable(t *testing.T) {
	ctx := context.Background()
	rdb, err := Dial(config.Config{RedisClusterURL: testservers.RedisCluster(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	key := testservers.Namespace(t) + ":k"
	owner, err := MasterFor(ctx, rdb, key)
	if err != nil {
		t.Fatal(err)
	}
	masters, err := Masters(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	var other string
	for _, m := range masters {
		if m.Addr != owner.Options().Addr {
			other = m.Addr
		}
	}
	if other == "" {
		t.Fatalf("no master other than %s among %v", owner.Options().Addr, masters)
	}
	node := redis.NewClient(&redis.Options{Addr: other, Username: owner.Options().Username, Password: owner.Options().Password})
	defer node.Close()
	moved := node.Get(ctx, key).Err()
	if moved == nil || !strings.HasPrefix(moved.Error(), "MOVED ") {
		t.Fatalf("GET of another master's key on %s: %v; want MOVED (the test's premise)", other, moved)
	}
	s := &Store{}
	for _, err := range []error{moved, errors.New("ASK 3999 127.0.0.1:6381"), errors.New("TRYAGAIN Multiple keys request during rehashing of slot"),
		errors.New("READONLY You can't write against a read only replica."), errors.New("MASTERDOWN Link with MASTER is down")} {
		if got := s.fail("authenticate", err); !errs.Is(got, errs.BackendUnavailable) {
			t.Errorf("%v maps to %v, want backend_unavailable", err, got)
		}
	}
}
