package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/mail"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/internal/webhook"
)

func TestMailContract(t *testing.T) {
	storetest.RunMail(t, func(t *testing.T) storetest.MailBackend {
		f := newFixture(t, Options{})
		return storetest.MailBackend{WatchBackend: f.backend(), Mail: f.rs, FailDeliveries: f.failDeliveries}
	})
}

// failDeliveries registers a webhook on the watch and makes
// delivery.DeactivateAfter new notices of it dead through the ledger, as
// the asynq handler would record them.
func (f fixture) failDeliveries(t *testing.T, accountID, watchID string) string {
	t.Helper()
	if _, err := f.rs.SetWebhook(context.Background(), accountID, watchID, "https://hooks.example.com/"+watchID, webhook.NewSecret(), f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	fail := make([]bool, delivery.MaxAttempts)
	for i := 0; i < delivery.DeactivateAfter; i++ {
		f.deliver(t, watchID, fmt.Sprintf("FAIL-%s-%02d", watchID, i), fail...)
		f.clock.Advance(time.Second)
	}
	return failedDelivery
}

// failedDelivery is the last_error of the failed attempts deliver records.
const failedDelivery = "HTTP 503 from hooks.example.com"

// deliver stores a new notice of storetest.ACNAlpha, creates its delivery
// to the watch and records one attempt per outcome through the ledger, as
// the asynq handler would (storetest.GaugeBackend.Deliver).
func (f fixture) deliver(t *testing.T, watchID, source string, outcomes ...bool) {
	t.Helper()
	ctx := context.Background()
	n := storetest.AlphaNotice(source, f.clock.Now())
	if _, err := (composite{notices: f.notices, rs: f.rs}).UpsertNotices(ctx, []notice.Notice{n}); err != nil {
		t.Fatal(err)
	}
	seq, err := f.notices.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref := Ref{WatchID: watchID, DeliveryID: webhook.DeliveryID(watchID, n.ID), NoticeSeq: seq}
	if k, err := f.rs.CreateDeliveries(ctx, []Ref{ref}, f.clock.Now()); err != nil || k != 1 {
		t.Fatalf("%s: created %d deliveries (%v)", source, k, err)
	}
	for a, ok := range outcomes {
		if a > 0 {
			f.clock.Advance(time.Second)
		}
		b, err := f.rs.Begin(ctx, ref, f.clock.Now(), Hold{})
		if err != nil || b.State != BeginAttempt {
			t.Fatalf("%s attempt %d: begin %+v (%v)", source, a+1, b, err)
		}
		out := store.Outcome{OK: ok, RetryUnit: storetest.DeliverRetryUnit}
		if !ok {
			out.LastError = failedDelivery
		}
		if err := f.rs.Complete(ctx, b.Job, out, f.clock.Now()); err != nil && !errors.Is(err, errKilled) { // killAt's test checks it
			t.Fatal(err)
		}
	}
}

// TestFinishedMailExpires: a sent job's hash expires after mail.Retention
// (Redis keeps time here; the fake clock cannot move it).
func TestFinishedMailExpires(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	b := f.backend()
	acc, err := b.Accounts.CreateAccount(ctx, "Acme", "enterprise")
	if err != nil {
		t.Fatal(err)
	}
	w := createAlphaWatch(t, f, acc.AccountID)
	job := mail.Job{ID: mail.DigestID(w, f.clock.Now()), Kind: mail.KindDigest, WatchID: w, To: "a@b.example",
		Digest: &mail.Digest{Total: 1, ThroughSeq: 7}}
	if ok, err := f.rs.QueueDigest(ctx, job, f.clock.Now()); err != nil || !ok {
		t.Fatalf("queue: %v %v", ok, err)
	}
	if ttl := f.rdb.PTTL(ctx, f.rs.akey(acc.AccountID, mailKey, job.ID)).Val(); ttl != -1 {
		t.Fatalf("a pending job has a TTL of %v; it must not expire", ttl)
	}
	jobs, err := f.rs.ClaimMail(ctx, f.clock.Now(), 10, time.Minute)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	if err := f.rs.CompleteMail(ctx, jobs[0], mail.Outcome{}, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if ttl := f.rdb.PTTL(ctx, f.rs.akey(acc.AccountID, mailKey, job.ID)).Val(); ttl <= mail.Retention-time.Minute || ttl > mail.Retention {
		t.Fatalf("a sent job's TTL is %v, want about %v", ttl, mail.Retention)
	}
	if seq := f.rdb.HGet(ctx, f.rs.akey(acc.AccountID, watchKey, w), "dseq").Val(); seq != "7" {
		t.Fatalf("dseq after the digest was sent = %q, want 7", seq)
	}
}

// createAlphaWatch creates a watch of ACNAlpha with an alert_email.
func createAlphaWatch(t *testing.T, f fixture, accountID string) string {
	t.Helper()
	req, err := watch.ParseCreate([]byte(`{"identifiers": ["` + storetest.ACNAlpha + `"], "alert_email": "a@b.example"}`))
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.rs.CreateWatch(context.Background(), watch.New(req, accountID, f.clock.Now()), account.DefaultPlans()["enterprise"])
	if err != nil {
		t.Fatal(err)
	}
	return w.ID
}

// TestConcurrentClaimsTakeEachJobOnce: workers claiming at the same moment
// (each reads the due set, then claims in a script) take each due job
// once: a job another claim took between the read and the script is left
// alone.
func TestConcurrentClaimsTakeEachJobOnce(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	acc, err := f.backend().Accounts.CreateAccount(ctx, "Acme", "enterprise")
	if err != nil {
		t.Fatal(err)
	}
	w := createAlphaWatch(t, f, acc.AccountID)
	// The clock stands still: each round's jobs stay leased through the
	// next rounds.
	for round := range 10 {
		const jobs, workers = 8, 6
		for i := range jobs {
			job := mail.Job{ID: fmt.Sprintf("race.%d.%d", round, i), Kind: mail.KindDigest, WatchID: w, To: "a@b.example"}
			f.rdb.Del(ctx, f.rs.akey(acc.AccountID, digestKey, w)) // one digest pending per watch: let the next in
			if ok, err := f.rs.QueueDigest(ctx, job, f.clock.Now()); err != nil || !ok {
				t.Fatalf("queue %s: %v %v", job.ID, ok, err)
			}
		}
		claimed := make(chan string, jobs*workers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				<-start
				js, err := f.rs.ClaimMail(ctx, f.clock.Now(), jobs, time.Minute)
				if err != nil {
					t.Error(err)
				}
				for _, j := range js {
					claimed <- j.ID
				}
			})
		}
		close(start)
		wg.Wait()
		close(claimed)
		seen := map[string]int{}
		for id := range claimed {
			seen[id]++
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("round %d: job %s claimed %d times by concurrent workers", round, id, n)
			}
		}
		if len(seen) != jobs {
			t.Fatalf("round %d: %d of %d due jobs claimed", round, len(seen), jobs)
		}
	}
}
