package api

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// TestRedisStatus covers the redis block of /health and /ready: the
// primary in use and the counts when a source is wired (scale mode),
// absent without one (embedded) and when the source fails, which makes
// neither probe fail (the store checks say whether Redis answers).
func TestRedisStatus(t *testing.T) {
	primary := RedisStatus{Primary: "127.0.0.1:26380", Reconnects: 3, Failovers: 1}
	cluster := RedisStatus{Primary: "127.0.0.1:7001", Reconnects: 1, Masters: []RedisNode{
		{Node: "127.0.0.1:7000", Reachable: true}, {Node: "127.0.0.1:7001", Reachable: true}, {Node: "127.0.0.1:7002", Reachable: false}}}
	tests := []struct {
		name  string
		redis RedisSource
		want  *RedisStatus
	}{
		{"embedded: no block", nil, nil},
		{"scale: the primary in use", func(context.Context) (RedisStatus, error) { return primary, nil }, &primary},
		{"cluster: its masters, one silent", func(context.Context) (RedisStatus, error) { return cluster, nil }, &cluster},
		{"unreadable: no block, still ready", func(context.Context) (RedisStatus, error) {
			return RedisStatus{}, errors.New("ERR unknown command 'CLIENT'")
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{redis: tt.redis})
			for _, path := range []string{"/health", "/ready"} {
				res := f.do(t, "GET", path, "")
				if res.status != 200 {
					t.Fatalf("%s: status %d, body %s", path, res.status, res.body)
				}
				var body struct {
					Redis *RedisStatus `json:"redis"`
				}
				if err := json.Unmarshal(res.body, &body); err != nil {
					t.Fatal(err)
				}
				switch {
				case tt.want == nil && body.Redis != nil:
					t.Errorf("%s: redis block %+v, want none; body %s", path, *body.Redis, res.body)
				case tt.want != nil && (body.Redis == nil || !reflect.DeepEqual(*body.Redis, *tt.want)):
					t.Errorf("%s: redis block %+v, want %+v; body %s", path, body.Redis, *tt.want, res.body)
				}
			}
		})
	}
}
