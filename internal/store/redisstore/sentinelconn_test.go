//go:build unix

package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

// TestConnectThroughSentinels: with the Sentinels of a live topology
// Connect reaches the primary (a *redis.Client from
// redis.NewFailoverClient, writable), and each setting the servers refuse
// is a SettingError naming it: a master name they do not monitor, a
// Sentinel list none of which answers, a Sentinel password they do not
// ask for, a data-node password the primary does not ask for. The
// passwords never appear in the error.
func TestConnectThroughSentinels(t *testing.T) {
	top := testservers.StartSentinel(t)
	ctx := context.Background()
	good := config.Config{RedisURL: "redis://ignored.invalid:6379/0", RedisSentinels: top.Sentinels, RedisMaster: top.Master}
	t.Run("connects to the primary", func(t *testing.T) {
		rdb, err := Connect(ctx, good)
		if err != nil {
			t.Fatal(err)
		}
		defer rdb.Close()
		role, err := rdb.Do(ctx, "ROLE").Slice()
		if err != nil || len(role) == 0 || role[0] != "master" {
			t.Fatalf("ROLE = %v, %v; want master", role, err)
		}
	})
	const secret = "sentinel-secret-9d1"
	for _, c := range []struct {
		name, setting string
		change        func(*config.Config)
	}{
		{"unknown master", "NOTICES_REDIS_MASTER", func(g *config.Config) { g.RedisMaster = "no-such-master" }},
		{"no Sentinel answers", "NOTICES_REDIS_SENTINELS", func(g *config.Config) { g.RedisSentinels = []string{"127.0.0.1:1", "127.0.0.1:2"} }},
		{"data password refused", "NOTICES_REDIS_URL", func(g *config.Config) { g.RedisURL = "redis://noticesd:" + secret + "@ignored.invalid:6379/0" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := good
			c.change(&target)
			rdb, err := Connect(ctx, target)
			if err == nil {
				rdb.Close()
				t.Fatal("connected; want a setting error")
			}
			var se *config.SettingError
			if !errors.As(err, &se) || se.Setting != c.setting || !strings.Contains(err.Error(), c.setting) {
				t.Fatalf("error %v (%T), want a SettingError naming %s", err, err, c.setting)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
	// Sentinels without a password let any password through; one given is
	// a warning naming the setting, and none is not.
	t.Run("Sentinel password not asked for", func(t *testing.T) {
		for _, pass := range []string{secret, ""} {
			logs := captureLog(t)
			target := good
			target.RedisSentinelPassword = pass
			rdb, err := Connect(ctx, target)
			if err != nil {
				t.Fatalf("Sentinel password %q: %v", pass, err)
			}
			rdb.Close()
			warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "setting=NOTICES_REDIS_SENTINEL_PASSWORD")
			if warned != (pass != "") {
				t.Errorf("Sentinel password %q: warned %v, want %v; log:\n%s", pass, warned, pass != "", logs)
			}
			if strings.Contains(logs.String(), secret) {
				t.Errorf("the log shows the password:\n%s", logs)
			}
		}
	})
	// Last: the Sentinels' default user gets a password (ACL SETUSER), so
	// a wrong NOTICES_REDIS_SENTINEL_PASSWORD, or none, is refused.
	t.Run("Sentinel password refused", func(t *testing.T) {
		for _, addr := range top.Sentinels {
			sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
			err := sc.Process(ctx, redis.NewStatusCmd(ctx, "ACL", "SETUSER", "default", "resetpass", ">right-"+secret))
			sc.Close()
			if err != nil {
				t.Fatalf("ACL SETUSER on Sentinel %s: %v", addr, err)
			}
		}
		for _, pass := range []string{secret, ""} {
			target := good
			target.RedisSentinelPassword = pass
			rdb, err := Connect(ctx, target)
			if err == nil {
				rdb.Close()
				t.Fatalf("connected with Sentinel password %q; want a setting error", pass)
			}
			var se *config.SettingError
			if !errors.As(err, &se) || se.Setting != "NOTICES_REDIS_SENTINEL_PASSWORD" {
				t.Fatalf("error %v (%T), want a SettingError naming NOTICES_REDIS_SENTINEL_PASSWORD", err, err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the password: %v", err)
			}
		}
	})
}

// captureLog makes the default logger write to the buffer it returns until
// the test ends.
func captureLog(t *testing.T) *testbin.LockedBuffer {
	b := &testbin.LockedBuffer{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(b, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return b
}
