package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/limit"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestRedisCluster: against a Redis Cluster of 3 masters with a replica
// each (testservers.RedisCluster), Connect gives a cluster client; an
// acknowledged write sends its WAIT to each master owning a slot it wrote
// (an account create: the namespace's and the account's) and to no other
// master (INFO commandstats of each); and the Redis contract suites
// (accounts, watches, with the screen copy too, gauges, mail), the webhook
// records and half-done changes, the gate (key check, rate token, heavy
// slot) and the account changes stopped half way pass with every fixture
// connected to the cluster: every script takes keys of one hash tag (the
// namespace's, or one account's), so it runs in one slot; and so do the
// register's (loads, their switch and settle, the screen and its copy),
// whose ids strings are on every master (testRegisterSpread).
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
	t.Run("WAIT on the masters written", func(t *testing.T) {
		f := newFixtureOn(t, target, Options{})
		owner := func(tag string) string {
			m, err := MasterFor(ctx, f.rdb, tag+waitMarkKey)
			if err != nil {
				t.Fatal(err)
			}
			return m.Options().Addr
		}
		before := testservers.CommandCalls(t, f.rdb.(*redis.ClusterClient), "wait")
		want := map[string]int64{}
		for i := range 5 { // each writes the namespace's slot and its account's
			c, err := f.rs.CreateAccount(ctx, "cluster "+strconv.Itoa(i), "standard")
			if err != nil {
				t.Fatal(err)
			}
			ns, acct := owner(f.rs.ns), owner(keyspace.Account(f.rs.name, c.AccountID))
			want[ns]++
			if acct != ns {
				want[acct]++
			}
		}
		after := testservers.CommandCalls(t, f.rdb.(*redis.ClusterClient), "wait")
		for addr, n := range after {
			got := n - before[addr]
			switch {
			case got < want[addr]:
				t.Errorf("master %s ran WAIT %d times for %d acknowledged writes to its slots", addr, got, want[addr])
			case want[addr] == 0 && got > 0:
				t.Errorf("master %s, which holds none of the keys written, ran WAIT %d times", addr, got)
			}
		}
		t.Logf("WAITs wanted per master: %v", want)
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
		suite{"ScreenDuringRegisterCommitIsOneRegister", TestScreenDuringRegisterCommitIsOneRegister},
		suite{"ScreenCopyExpandAgreesWithRedis", TestScreenCopyExpandAgreesWithRedis},
		suite{"ScreenCopyOddRegister", TestScreenCopyOddRegister},
		suite{"ScreenCopyNotLoadedReadsRedis", TestScreenCopyNotLoadedReadsRedis},
		suite{"SharedABNMatchesEmbedded", TestSharedABNMatchesEmbedded},
		suite{"ScreenNoticeCarryingBoth", TestScreenNoticeCarryingBoth},
		suite{"AuthenticateAndAllow", TestAuthenticateAndAllow},
		suite{"SlotGate", TestSlotGate},
		suite{"AccountStepsInterrupted", TestAccountStepsInterrupted},
		// The delivery ledger, arrival matching, the wake sets and the
		// sweeps of stalled creates and deletes: their scripts and their
		// steps across the namespace's and the accounts' slots.
		suite{"OutboxSteps", TestOutboxSteps},
		suite{"GaplessMatches", TestGaplessMatches},
		suite{"StaleBatchCommitsNothing", TestStaleBatchCommitsNothing},
		suite{"CreateFailingLateWritesNothing", TestCreateFailingLateWritesNothing},
		suite{"AttemptLeaseLapsesToRecovery", TestAttemptLeaseLapsesToRecovery},
		suite{"RefWithoutAccount", TestRefWithoutAccount},
		suite{"WakeNoteWrittenDuringClaim", TestWakeNoteWrittenDuringClaim},
		suite{"MatchCommitNotesAgain", TestMatchCommitNotesAgain},
		suite{"WebhookRetryNotesAgain", TestWebhookRetryNotesAgain},
		suite{"SweeperUndoesDeadCreate", TestSweeperUndoesDeadCreate},
		suite{"SweeperFinishesDeadDelete", TestSweeperFinishesDeadDelete},
		suite{"InterruptedDeleteIsSwept", TestInterruptedDeleteIsSwept},
		suite{"ReconcileUndoesStalledCreates", TestReconcileUndoesStalledCreates},
		suite{"DeliveryRecordAsEmbedded", TestDeliveryRecordAsEmbedded},
		suite{"SealSecretsUnderNewKey", TestSealSecretsUnderNewKey},
		suite{"CreateOutlivesItsLease", TestCreateOutlivesItsLease},
		suite{"StalledCreateFreesItsPlaceQuickly", TestStalledCreateFreesItsPlaceQuickly},
		suite{"QuotaAcrossProcesses", TestQuotaAcrossProcesses},
		suite{"CreateDeliveriesJudgesAtArrival", TestCreateDeliveriesJudgesAtArrival},
		suite{"ConcurrentClaimsTakeEachJobOnce", TestConcurrentClaimsTakeEachJobOnce},
		suite{"FinishedMailExpires", TestFinishedMailExpires},
		suite{"DeliveryRetentionContract", TestDeliveryRetentionContract},
		suite{"MatchesFollowChangesAsEmbedded", TestMatchesFollowChangesAsEmbedded},
		suite{"IndexByACNMatchesArrivalsAsEmbedded", TestIndexByACNMatchesArrivalsAsEmbedded})
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

// TestGateSpreadsOverMasters: with each account's keys under its own hash
// tag, the per-request gate script runs in the account's slot, so a
// cluster's masters share the request load. On a cluster of the test's
// own (3 masters with a replica each; no other client adds script calls),
// 30 accounts read for 20 s (AuthenticateAndAllow, the scale mode's key
// check and rate token, each account every 20 ms), and each master serves
// between 20% and 50% of the script calls (INFO commandstats,
// cmdstat_evalsha and cmdstat_eval deltas per master, logged). Account
// ids are random, so to be deterministic the test creates accounts until
// 10 land on each master (keyspace.Slot of the account's tag against
// CLUSTER SHARDS, CLUSTER SLOTS's successor) and reads with those 30.
func TestGateSpreadsOverMasters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster of its own and reads for 20 s")
	}
	ctx := context.Background()
	top := testservers.StartRedisCluster(t)
	f := newFixtureOn(t, config.Config{RedisClusterURL: top.URL}, Options{})
	rdb := f.rdb.(*redis.ClusterClient)
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	masterOf := func(id string) string {
		slot := int64(keyspace.Slot(keyspace.Account(f.ns, id)))
		for _, sh := range shards {
			for _, r := range sh.Slots {
				for _, n := range sh.Nodes {
					if slot >= r.Start && slot <= r.End && n.Role == "master" {
						return n.IP + ":" + strconv.FormatInt(n.Port, 10)
					}
				}
			}
		}
		t.Fatalf("no master serves slot %d", slot)
		return ""
	}
	const perMaster = 10
	type reader struct {
		key  string
		want account.Principal
	}
	var readers []reader
	placed := map[string]int{}
	for created := 0; len(readers) < 3*perMaster; created++ {
		if created == 300 {
			t.Fatalf("300 accounts created, placed %v: the accounts' tags do not spread over the masters", placed)
		}
		c, err := f.rs.CreateAccount(ctx, "spread "+strconv.Itoa(created), "standard")
		if err != nil {
			t.Fatal(err)
		}
		if m := masterOf(c.AccountID); placed[m] < perMaster {
			placed[m]++
			p, err := f.rs.Authenticate(ctx, c.ReadKey)
			if err != nil {
				t.Fatal(err)
			}
			readers = append(readers, reader{c.ReadKey, p})
		}
	}
	calls := func() map[string]int64 {
		out := testservers.CommandCalls(t, rdb, "evalsha")
		for addr, n := range testservers.CommandCalls(t, rdb, "eval") {
			out[addr] += n
		}
		return out
	}
	before := calls()
	rate := limit.Rate{PerSecond: 100, Burst: 100}
	stop := time.Now().Add(20 * time.Second)
	var wg sync.WaitGroup
	for _, r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if _, taken, _, err := f.rs.AuthenticateAndAllow(ctx, r.key, r.want, "read", rate); err != nil || !taken {
					t.Errorf("a read of %s: taken %v, %v", r.want.Account.ID, taken, err)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	after := calls()
	var total int64
	for addr := range after {
		total += after[addr] - before[addr]
	}
	if len(after) != 3 || total < 3*perMaster*100 {
		t.Fatalf("%d masters ran %d script calls, want 3 masters and at least %d", len(after), total, 3*perMaster*100)
	}
	for addr := range after {
		n := after[addr] - before[addr]
		share := float64(n) / float64(total)
		t.Logf("master %s (%d accounts): %d gate script calls, %.1f%%", addr, placed[addr], n, 100*share)
		if share < 0.2 || share > 0.5 {
			t.Errorf("master %s served %.1f%% of the gate script calls, want 20-50%%", addr, 100*share)
		}
	}
}
