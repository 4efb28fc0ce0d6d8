package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/secretbox"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
)

func TestWebhookRecords(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	writer := composite{notices: f.notices, rs: f.rs}
	tmpl := storetest.Notices(t)[0]
	published, err := time.Parse(time.RFC3339Nano, tmpl.PublishedAt)
	if err != nil {
		t.Fatal(err)
	}
	now := published.Add(time.Hour)
	// One notice before the watch (history, never delivered), two after.
	if _, err := writer.UpsertNotices(ctx, []notice.Notice{genNotice(t, tmpl, "BEFORE", 1)}); err != nil {
		t.Fatal(err)
	}
	acc, err := f.rs.CreateAccount(ctx, "Hooked", "standard")
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, acn(1))}, acc.AccountID, now),
		account.DefaultPlans()["standard"])
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"AFTER-1", "AFTER-2"} {
		if _, err := writer.UpsertNotices(ctx, []notice.Notice{genNotice(t, tmpl, src, 1)}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("no webhook yet", func(t *testing.T) {
		_, err := f.rs.RotateSecret(ctx, acc.AccountID, w.ID, "s", now)
		if !errs.Is(err, errs.NotFound) {
			t.Errorf("rotate without a webhook: %v, want not_found", err)
		}
		if err := f.rs.DeleteWebhook(ctx, acc.AccountID, w.ID, now); !errs.Is(err, errs.NotFound) {
			t.Errorf("delete without a webhook: %v, want not_found", err)
		}
	})
	got, err := f.rs.SetWebhook(ctx, acc.AccountID, w.ID, "https://example.com/hook", "secret-1", now)
	if err != nil || got.WebhookURL == nil || *got.WebhookURL != "https://example.com/hook" {
		t.Fatalf("set webhook: %+v, %v", got, err)
	}
	if _, err := f.rs.SetWebhook(ctx, acc.AccountID, w.ID, "https://example.com/hook2", "secret-2", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	t.Run("deliveries for arrivals since creation, once each, newest first", func(t *testing.T) {
		list, err := f.rs.Deliveries(ctx, acc.AccountID, w.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].NoticeID != notice.IDFor("AFTER-2") || list[1].NoticeID != notice.IDFor("AFTER-1") {
			t.Fatalf("deliveries %+v, want AFTER-2 then AFTER-1", list)
		}
		for _, r := range list {
			if r.Status != delivery.Pending || r.NextAttemptAt == nil || r.Attempts != 0 {
				t.Errorf("record %+v, want pending and due", r)
			}
		}
		if one, _ := f.rs.Deliveries(ctx, acc.AccountID, w.ID, 1); len(one) != 1 {
			t.Errorf("limit 1 gave %d records", len(one))
		}
	})
	t.Run("another account sees nothing", func(t *testing.T) {
		other, _ := f.rs.CreateAccount(ctx, "Other", "standard")
		if _, err := f.rs.Deliveries(ctx, other.AccountID, w.ID, 10); !errs.Is(err, errs.NotFound) {
			t.Errorf("deliveries of another account's watch: %v", err)
		}
		if _, err := f.rs.SetWebhook(ctx, other.AccountID, w.ID, "https://x", "s", now); !errs.Is(err, errs.NotFound) {
			t.Errorf("set webhook on another account's watch: %v", err)
		}
	})
	t.Run("rotate", func(t *testing.T) {
		if _, err := f.rs.RotateSecret(ctx, acc.AccountID, w.ID, "secret-3", now); err != nil {
			t.Fatal(err)
		}
		stored, _ := f.rdb.HGet(ctx, f.rs.akey(acc.AccountID, watchKey, w.ID), "secret").Result()
		if strings.Contains(stored, "secret-3") || !secretbox.IsSealed(stored) {
			t.Errorf("stored secret %q after rotation: want it sealed, never in the clear", stored)
		}
		if plain, err := f.rs.openSecret(w.ID, stored); err != nil || plain != "secret-3" {
			t.Errorf("stored secret opens to %q, %v; want secret-3", plain, err)
		}
	})
	t.Run("delete: pending become dead", func(t *testing.T) {
		if err := f.rs.DeleteWebhook(ctx, acc.AccountID, w.ID, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		list, _ := f.rs.Deliveries(ctx, acc.AccountID, w.ID, 10)
		for _, r := range list {
			if r.Status != delivery.Dead || r.LastError == nil || *r.LastError != delivery.WebhookRemoved || r.NextAttemptAt != nil {
				t.Errorf("record %+v after the webhook was removed", r)
			}
		}
		got, _ := f.rs.Watch(ctx, acc.AccountID, w.ID)
		if got.WebhookURL != nil {
			t.Errorf("webhook still set: %v", *got.WebhookURL)
		}
	})
}
