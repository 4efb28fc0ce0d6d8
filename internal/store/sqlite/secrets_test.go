package sqlite

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/secretbox"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/webhook"
)

// testKey and testKey2 are keys of these tests only.
var (
	testKey  = bytes.Repeat([]byte{7}, secretbox.KeySize)
	testKey2 = bytes.Repeat([]byte{9}, secretbox.KeySize)
)

func testBox(t testing.TB, cur, prev []byte) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(cur, prev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fileHolds reports whether the database file or its WAL contains s.
func fileHolds(t *testing.T, dbPath, s string) bool {
	t.Helper()
	for _, p := range []string{dbPath, dbPath + "-wal"} {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// TestWebhookSecretsEncryptedAtRest: registered and rotated secrets never
// reach the database file or its WAL in the clear, and attempts are still
// signed with the plaintext secret.
func TestWebhookSecretsEncryptedAtRest(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "data", "notices.db")
	clock := storetest.NewClock(storetest.Start)
	s, err := Open(ctx, dbPath, WithClock(clock.Now), WithSecretBox(testBox(t, testKey, nil)))
	if err != nil {
		t.Fatal(err)
	}
	f := &qfix{t: t, ctx: ctx, s: s, clock: clock}
	created, err := s.CreateAccount(ctx, "Acme", "enterprise")
	if err != nil {
		t.Fatal(err)
	}
	f.account = created.AccountID
	w := f.watch(watchA)
	first := f.hook(w)
	rotated := webhook.NewSecret()
	if _, err := s.RotateSecret(ctx, f.account, w, rotated, clock.Now()); err != nil {
		t.Fatal(err)
	}
	f.enqueue([]notice.Notice{f.notice(acnA, 0)}, w)
	jobs := f.claim()
	if len(jobs) != 1 || jobs[0].Secret != rotated {
		t.Fatalf("claimed %+v; want one job signed with the rotated secret", jobs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{first, rotated} {
		if fileHolds(t, dbPath, secret) || fileHolds(t, dbPath, strings.TrimPrefix(secret, webhook.SecretPrefix)) {
			t.Errorf("the database file holds webhook secret %s in the clear", secret)
		}
	}
}

// TestPlaintextSecretsSealedAtOpen: a database written before encryption
// (plaintext secrets) is sealed when opened with a key, leaving no copy in
// the file; rotation to a new key re-seals; a key that is neither the
// current nor the previous one is refused with a message.
func TestPlaintextSecretsSealedAtOpen(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "data", "notices.db")
	clock := storetest.NewClock(storetest.Start)
	open := func(box *secretbox.Box) (*Store, error) {
		return Open(ctx, dbPath, WithClock(clock.Now), WithSecretBox(box))
	}
	s, err := open(testBox(t, testKey, nil))
	if err != nil {
		t.Fatal(err)
	}
	f := &qfix{t: t, ctx: ctx, s: s, clock: clock}
	created, _ := s.CreateAccount(ctx, "Acme", "enterprise")
	f.account = created.AccountID
	w := f.watch(watchA)
	f.hook(w)
	plain := webhook.NewSecret()
	// What a database of an older release holds.
	if _, err := s.write.ExecContext(ctx, "UPDATE watches SET webhook_secret = ? WHERE id = ?", plain, w); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !fileHolds(t, dbPath, plain) {
		t.Fatal("the old-release plaintext secret did not reach the file; the test proves nothing")
	}

	s, err = open(testBox(t, testKey, nil))
	if err != nil {
		t.Fatal(err)
	}
	f.s = s
	f.enqueue([]notice.Notice{f.notice(acnA, 0)}, w)
	if jobs := f.claim(); len(jobs) != 1 || jobs[0].Secret != plain {
		t.Fatalf("after sealing, claimed %+v; want the same secret", jobs)
	}
	s.Close()
	if fileHolds(t, dbPath, plain) {
		t.Fatal("the plaintext secret is still in the database file after it was sealed")
	}

	// Rotation: the new key current, the old one previous.
	s, err = open(testBox(t, testKey2, testKey))
	if err != nil {
		t.Fatalf("open with the previous key: %v", err)
	}
	var sealed string
	s.read.QueryRowContext(ctx, "SELECT webhook_secret FROM watches WHERE id = ?", w).Scan(&sealed)
	if !testBox(t, testKey2, nil).Current(sealed) {
		t.Errorf("after opening with a new key the secret is not re-sealed under it: %q", sealed)
	}
	s.Close()
	// The old key alone no longer opens it.
	if _, err := open(testBox(t, testKey, nil)); err == nil || !strings.Contains(err.Error(), "NOTICES_SECRET_KEY") {
		t.Fatalf("open with a key that sealed nothing here: %v; want an error naming NOTICES_SECRET_KEY", err)
	}
}

// TestSetWebhookNeedsKey: a store opened without a key refuses to store a
// secret rather than keep it in the clear.
func TestSetWebhookNeedsKey(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, WithSecretBox(nil))
	created, _ := s.CreateAccount(ctx, "Acme", "enterprise")
	f := &qfix{t: t, ctx: ctx, s: s, clock: storetest.NewClock(storetest.Start), account: created.AccountID}
	w := f.watch(watchA)
	if _, err := s.SetWebhook(ctx, f.account, w, "https://hooks.example.com/x", webhook.NewSecret(), time.Now()); err == nil {
		t.Fatal("SetWebhook without a key stored the secret")
	}
	_ = store.Job{}
}
