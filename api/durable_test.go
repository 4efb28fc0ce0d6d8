//go:build unix

package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestAcknowledgedWriteIsOnReplica: with a Redis primary that has a
// replica, POST /v1/watches answers 201 only once the replica has the
// watch (read from the replica right after the answer), and with the
// replica stalled (SIGSTOP) it answers 503 backend_unavailable after
// redisstore.WaitTimeout, never a 201 the replica does not have. Writes
// go through once the replica is back.
func TestAcknowledgedWriteIsOnReplica(t *testing.T) {
	r := testservers.StartReplicated(t)
	scaleWatches, scaleRedisURL = true, r.PrimaryURL
	defer func() { scaleWatches, scaleRedisURL = false, "" }()
	f := newWatchFixture(t, nil)
	ctx := context.Background()
	replica := redis.NewClient(&redis.Options{Addr: r.Replica.Addr})
	defer replica.Close()
	body := `{"identifiers": ["123456780"], "name": "on the replica"}`
	onReplica := func(t *testing.T, res response) {
		t.Helper()
		if res.status != http.StatusCreated {
			t.Fatalf("status %d, want 201; body %s", res.status, res.body)
		}
		var w watchJSON
		decodeBody(t, res, &w)
		keys, err := replica.Keys(ctx, "*:w:"+w.ID).Result()
		if err != nil || len(keys) != 1 {
			t.Fatalf("the replica has %v (%v) for watch %s right after the 201; want its w:<id> hash", keys, err, w.ID)
		}
		doc, err := replica.HGet(ctx, keys[0], "doc").Result()
		if err != nil || doc == "" {
			t.Fatalf("the replica's %s has no doc (%v)", keys[0], err)
		}
	}
	t.Run("201 only once on the replica", func(t *testing.T) {
		for range 3 {
			onReplica(t, f.call(t, http.MethodPost, "/v1/watches", f.acct, body))
		}
	})
	t.Run("stalled replica: 503, not 201", func(t *testing.T) {
		r.Replica.Pause(t)
		paused := true
		defer func() {
			if paused {
				r.Replica.Resume(t)
			}
		}()
		start := time.Now()
		res := f.call(t, http.MethodPost, "/v1/watches", f.acct, body)
		took := time.Since(start)
		wantError(t, res, http.StatusServiceUnavailable, "backend_unavailable")
		if took < redisstore.WaitTimeout || took > redisstore.WaitTimeout+5*time.Second {
			t.Errorf("the 503 came after %s; want it once the WAIT of %s ran out", took, redisstore.WaitTimeout)
		}
		r.Replica.Resume(t)
		paused = false
		onReplica(t, f.call(t, http.MethodPost, "/v1/watches", f.acct, body))
	})
}
