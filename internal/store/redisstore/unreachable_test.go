package redisstore

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/errs"
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
