//go:build unix

package redisstore

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestSecuredRedis: against a redis-server with TLS only and an ACL user
// (testservers.StartSecured), Connect accepts the right settings, names
// NOTICES_REDIS_URL for a refused password and NOTICES_REDIS_CA_FILE for a
// certificate the CA does not verify (never printing the password), and
// a representative set of the live suite (the accounts, watches, gauges
// and mail contracts, quotas, webhooks, reconcile, the screen copy) passes
// with every fixture connected that way.
func TestSecuredRedis(t *testing.T) {
	sec := testservers.StartSecured(t)
	good := config.Config{RedisURL: sec.URL, RedisCAFile: sec.CAFile}
	ctx := context.Background()
	withPassword := func(pass string) string {
		u, _ := url.Parse(sec.URL)
		u.User = url.UserPassword(testservers.SecuredUser, pass)
		return u.String()
	}
	t.Run("connect", func(t *testing.T) {
		rdb, err := Connect(ctx, good)
		if err != nil {
			t.Fatal(err)
		}
		defer rdb.Close()
		who, err := rdb.Do(ctx, "ACL", "WHOAMI").Text()
		if err != nil || who != testservers.SecuredUser {
			t.Fatalf("ACL WHOAMI = %q, %v; want %s", who, err, testservers.SecuredUser)
		}
	})
	for _, c := range []struct {
		name, setting string
		target        config.Config
	}{
		{"wrong password", "NOTICES_REDIS_URL", config.Config{RedisURL: withPassword("not-the-password"), RedisCAFile: sec.CAFile}},
		{"no password", "NOTICES_REDIS_URL", config.Config{RedisURL: "rediss://" + sec.Proc.Addr + "/0", RedisCAFile: sec.CAFile}},
		{"wrong CA", "NOTICES_REDIS_CA_FILE", config.Config{RedisURL: sec.URL, RedisCAFile: sec.OtherCAFile}},
		{"system roots", "NOTICES_REDIS_CA_FILE", config.Config{RedisURL: sec.URL}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rdb, err := Connect(ctx, c.target)
			if err == nil {
				rdb.Close()
				t.Fatal("connected; want a setting error")
			}
			var se *config.SettingError
			if !errors.As(err, &se) || se.Setting != c.setting || !strings.Contains(err.Error(), c.setting) {
				t.Fatalf("error %v (%T), want a SettingError naming %s", err, err, c.setting)
			}
			for _, secret := range []string{testservers.SecuredPassword, "not-the-password"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows a password: %v", err)
				}
			}
		})
	}
	t.Run("down", func(t *testing.T) {
		_, err := Connect(ctx, config.Config{RedisURL: "rediss://u:p@127.0.0.1:1/0", RedisCAFile: sec.CAFile})
		var se *config.SettingError
		if errors.As(err, &se) || !errs.Is(err, errs.BackendUnavailable) {
			t.Fatalf("error %v, want backend_unavailable (a server that is down is no setting error)", err)
		}
	})
	// The contract suites, every fixture connected over TLS as the ACL user.
	runOn(t, good,
		suite{"AccountsContract", TestAccountsContract},
		suite{"WatchesContract", TestWatchesContract},
		suite{"WatchesContractScreenCopy", TestWatchesContractScreenCopy},
		suite{"GaugesContract", TestGaugesContract},
		suite{"MailContract", TestMailContract},
		suite{"QuotaAcrossProcesses", TestQuotaAcrossProcesses},
		suite{"WebhookRecords", TestWebhookRecords},
		suite{"DeliveryRecordAsEmbedded", TestDeliveryRecordAsEmbedded},
		suite{"ReconcileFinishesHalfDoneChanges", TestReconcileFinishesHalfDoneChanges})
}
