package metrics

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/testservers"
)

// TestRedirectHook: RedirectHook counts each MOVED and ASK error reply of a
// real Redis (a script answering one, as a cluster node answers a key it
// does not hold), to a command and to each command of a pipeline, and no
// other reply; CountRedis shows the counts on /metrics.
func TestRedirectHook(t *testing.T) {
	opt, err := redis.ParseURL(testservers.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	rdb.AddHook(RedirectHook)
	ctx := context.Background()
	const script = "return redis.error_reply(ARGV[1])"
	m := New(nil, nil)
	m.CountRedis(func() RedisCounts { return RedisCounts{} })
	for _, tc := range []struct {
		name       string
		replies    []string
		moved, ask int64
	}{
		{"moved", []string{"MOVED 3999 127.0.0.1:7002"}, 1, 0},
		{"ask", []string{"ASK 3999 127.0.0.1:7002"}, 0, 1},
		{"another error", []string{"ERR not a redirect", "MOVEDX 1 a:1"}, 0, 0},
		{"pipeline", []string{"MOVED 1 127.0.0.1:7001", "ASK 2 127.0.0.1:7001", "ERR no", "MOVED 3 127.0.0.1:7003"}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			moved0, ask0 := Redirects()
			if len(tc.replies) == 1 {
				if err := rdb.Eval(ctx, script, nil, tc.replies[0]).Err(); err == nil {
					t.Fatal("the script answered no error")
				}
			} else {
				_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
					for _, r := range tc.replies {
						p.Eval(ctx, script, nil, r)
					}
					return nil
				})
			}
			moved, ask := Redirects()
			if moved-moved0 != tc.moved || ask-ask0 != tc.ask {
				t.Errorf("counted %d MOVED and %d ASK, want %d and %d", moved-moved0, ask-ask0, tc.moved, tc.ask)
			}
			got := scrape(t, m)
			if got["noticesd_redis_redirects_total{redirect=moved}"] != float64(moved) || got["noticesd_redis_redirects_total{redirect=ask}"] != float64(ask) {
				t.Errorf("/metrics: moved %v, ask %v; want %d and %d", got["noticesd_redis_redirects_total{redirect=moved}"], got["noticesd_redis_redirects_total{redirect=ask}"], moved, ask)
			}
		})
	}
}
