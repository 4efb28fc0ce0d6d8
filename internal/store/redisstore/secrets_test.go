package redisstore

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/secretbox"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
)

// TestSealSecretsUnderNewKey: after a key rotation (new key current, old
// one previous) SealSecrets seals every stored secret under the new key,
// so a store holding only the new key reads them; a second run has
// nothing to do, and a secret no key opens is reported by watch.
func TestSealSecretsUnderNewKey(t *testing.T) {
	ctx := context.Background()
	oldKey, newKey := bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{9}, 32)
	box := func(cur, prev []byte) *secretbox.Box {
		b, err := secretbox.New(cur, prev)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	f := newFixture(t, Options{Secrets: box(oldKey, nil)})
	acc, err := f.rs.CreateAccount(ctx, "Sealed", "enterprise")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < 3; i++ {
		w, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: idsOf(t, storetest.ACNAlpha)}, acc.AccountID, f.clock.Now()),
			account.DefaultPlans()["enterprise"])
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID)
		if i < 2 { // the third has no webhook
			if _, err := f.rs.SetWebhook(ctx, acc.AccountID, w.ID, "https://hooks.example.com/"+w.ID, "whsec_"+w.ID, f.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	open := func(b *secretbox.Box) *Store {
		rs, err := New(f.rdb, f.rs.name, f.notices, Options{Secrets: b, Clock: f.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	rotated := open(box(newKey, oldKey))
	if n, err := rotated.SealSecrets(ctx); err != nil || n != 2 {
		t.Fatalf("SealSecrets after the rotation = %d, %v; want 2", n, err)
	}
	if n, err := rotated.SealSecrets(ctx); err != nil || n != 0 {
		t.Fatalf("second SealSecrets = %d, %v; want nothing left", n, err)
	}
	onlyNew := open(box(newKey, nil))
	for _, id := range ids[:2] {
		_, secret, err := onlyNew.Signing(ctx, store.Job{WatchID: id})
		if err != nil || secret != "whsec_"+id {
			t.Fatalf("watch %s with only the new key: %q, %v", id, secret, err)
		}
	}
	stranger := open(box(bytes.Repeat([]byte{3}, 32), nil))
	if _, err := stranger.SealSecrets(ctx); err == nil || !strings.Contains(err.Error(), "NOTICES_SECRET_KEY_PREVIOUS") {
		t.Fatalf("SealSecrets under an unrelated key = %v; want the error naming NOTICES_SECRET_KEY_PREVIOUS", err)
	}
}
