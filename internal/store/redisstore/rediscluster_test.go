package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestRedisCluster: against a Redis Cluster of 3 masters with a replica
// each (testservers.RedisCluster), Connect gives a cluster client; an
// acknowledged write sends its WAIT to the master owning the namespace's
// hash slot and to no other master (INFO commandstats of each); and the
// Redis contract suites (accounts, watches, with the screen copy too,
// gauges, mail), the webhook records and half-done changes, and the
// register's (loads, their switch and settle, the screen and its copy)
// pass with every fixture connected to the cluster: every script's keys
// are under one hash tag, so it runs in one slot; a loaded register's ids
// strings are on every master (testRegisterSpread).
func TestRedisCluster(t *testing.T) {
	target := config.Config{RedisClusterURL: testservers.RedisCluster(t)}
	ctx := context.Background()
	t.Run("connect", func(t *testing.T) {
		rdb, err := Connect(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		defer rdb.Close()
		if _, ok := rdb.(*redis.ClusterClient); !ok {
			t.Fatalf("Connect gave a %T, want a *redis.ClusterClient", rdb)
		}
		masters, err := Masters(ctx, rdb)
		if err != nil || len(masters) != 3 {
			t.Fatalf("Masters = %v, %v; want 3", masters, err)
		}
		for _, m := range masters {
			if !m.Reachable {
				t.Errorf("master %s does not answer", m.Addr)
			}
		}
	})
	t.Run("WAIT on the namespace's master", func(t *testing.T) {
		f := newFixtureOn(t, target, Options{})
		owner, err := MasterFor(ctx, f.rdb, keyspace.Prefix(f.ns))
		if err != nil {
			t.Fatal(err)
		}
		before := testservers.CommandCalls(t, f.rdb.(*redis.ClusterClient), "wait")
		const writes = 5
		for i := range writes {
			if _, err := f.rs.CreateAccount(ctx, "cluster "+strconv.Itoa(i), "standard"); err != nil {
				t.Fatal(err)
			}
		}
		after := testservers.CommandCalls(t, f.rdb.(*redis.ClusterClient), "wait")
		for addr, n := range after {
			got := n - before[addr]
			switch {
			case addr == owner.Options().Addr && got < writes:
				t.Errorf("the namespace's master %s ran WAIT %d times for %d acknowledged writes", addr, got, writes)
			case addr != owner.Options().Addr && got > 0:
				t.Errorf("master %s, which holds none of the namespace's keys, ran WAIT %d times", addr, got)
			}
		}
	})
	runOn(t, target,
		suite{"AccountsContract", TestAccountsContract},
		suite{"WatchesContract", TestWatchesContract},
		suite{"WatchesContractScreenCopy", TestWatchesContractScreenCopy},
		suite{"GaugesContract", TestGaugesContract},
		suite{"MailContract", TestMailContract},
		suite{"WebhookRecords", TestWebhookRecords},
		suite{"ReconcileFinishesHalfDoneChanges", TestReconcileFinishesHalfDoneChanges},
		// The register: its ids strings in 64 slot groups, the switch and
		// its settle, the screen copy and the screen reading them.
		suite{"RegisterSpread", testRegisterSpread},
		suite{"RegisterSwapIsAtomic", TestRegisterSwapIsAtomic},
		suite{"KilledRegisterLoadExpires", TestKilledRegisterLoadExpires},
		suite{"RegisterNamesAsRowByRow", TestRegisterNamesAsRowByRow},
		suite{"RegisterSettlesAfterSwitch", TestRegisterSettlesAfterSwitch},
		suite{"StaleSettlerPutsBack", TestStaleSettlerPutsBack},
		suite{"RegisterLoadIsOneGeneration", TestRegisterLoadIsOneGeneration},
		suite{"ResumedLoaderDoesNotSwitchToDroppedGeneration", TestResumedLoaderDoesNotSwitchToDroppedGeneration},
		suite{"StalledLoaderDoesNotSwapElasticsearch", TestStalledLoaderDoesNotSwapElasticsearch},
		suite{"ScreenCopyRegisterReplacement", TestScreenCopyRegisterReplacement},
		suite{"ScreenCopyExpandAgreesWithRedis", TestScreenCopyExpandAgreesWithRedis},
		suite{"ScreenCopyOddRegister", TestScreenCopyOddRegister},
		suite{"ScreenCopyNotLoadedReadsRedis", TestScreenCopyNotLoadedReadsRedis},
		suite{"SharedABNMatchesEmbedded", TestSharedABNMatchesEmbedded},
		suite{"ScreenNoticeCarryingBoth", TestScreenNoticeCarryingBoth})
}

// newFixtureOn is newFixture connected to target.
func newFixtureOn(t *testing.T, target config.Config, o Options) fixture {
	liveTarget = &target
	defer func() { liveTarget = nil }()
	return newFixture(t, o)
}

// TestClusterTargetErrors: a cluster URL go-redis refuses is a setting
// error naming NOTICES_REDIS_CLUSTER_URL (exit 2) without its password,
// and a cluster none of whose nodes answers is backend_unavailable saying
// to correct NOTICES_REDIS_CLUSTER_URL.
func TestClusterTargetErrors(t *testing.T) {
	_, err := Dial(config.Config{RedisClusterURL: "redis://u:hunter2@127.0.0.1:1?addr=127.0.0.1:2&pool=3"})
	var se *config.SettingError
	if !errors.As(err, &se) || se.Setting != "NOTICES_REDIS_CLUSTER_URL" || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Dial with an unknown option: %v; want a setting error naming NOTICES_REDIS_CLUSTER_URL, no password", err)
	}
	_, err = Connect(context.Background(), config.Config{RedisClusterURL: "redis://u:hunter2@127.0.0.1:1?addr=127.0.0.1:2"})
	if !errs.Is(err, errs.BackendUnavailable) || !strings.Contains(err.Error(), "NOTICES_REDIS_CLUSTER_URL") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Connect to no cluster: %v; want backend_unavailable naming NOTICES_REDIS_CLUSTER_URL, no password", err)
	}
}
