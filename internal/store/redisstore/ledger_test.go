package redisstore

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestOutboxSteps: the pump's claim hides the due outbox entries from other
// pumps; Scheduled takes out the ones whose tasks exist and moves the
// others to the given time, without putting back an entry no longer there;
// the sweep's Reschedule adds an entry due now and leaves one already there
// as it is. Real Redis, fake clock.
func TestOutboxSteps(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	now := f.clock.Now()
	a, b, gone := Ref{AccountID: "acc", WatchID: "w", DeliveryID: "a", NoticeSeq: 1}, Ref{AccountID: "acc", WatchID: "w", DeliveryID: "b", NoticeSeq: 2}, Ref{AccountID: "acc", WatchID: "w", DeliveryID: "c", NoticeSeq: 3}
	outbox := func() []redis.Z {
		zs, err := f.rdb.ZRangeWithScores(ctx, f.rs.akey("acc", outboxKey), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		return zs
	}
	at := func(r Ref, t time.Time) redis.Z { return redis.Z{Score: float64(t.UnixMilli()), Member: r.member()} }
	if err := f.rs.Reschedule(ctx, []Ref{a, b}, now); err != nil {
		t.Fatal(err)
	}
	if got, err := f.rs.ClaimDue(ctx, now, 10*time.Second, 10); err != nil || !reflect.DeepEqual(got, []Claimed{{a, now.UnixMilli()}, {b, now.UnixMilli()}}) {
		t.Fatalf("ClaimDue = %v, %v; want a and b", got, err)
	}
	if got, err := f.rs.ClaimDue(ctx, now, 10*time.Second, 10); err != nil || len(got) != 0 {
		t.Fatalf("ClaimDue again = %v, %v; want nothing (claimed for 10 s)", got, err)
	}
	later := now.Add(250 * time.Millisecond)
	if err := f.rs.Scheduled(ctx, []Ref{a}, []Ref{b, gone}, later); err != nil {
		t.Fatal(err)
	}
	if got, want := outbox(), []redis.Z{at(b, later)}; !reflect.DeepEqual(got, want) {
		t.Errorf("outbox after Scheduled = %v, want %v (a's task made, b's postponed, c never added)", got, want)
	}
	if err := f.rs.Reschedule(ctx, []Ref{a, b}, now); err != nil {
		t.Fatal(err)
	}
	if got, want := outbox(), []redis.Z{at(a, now), at(b, later)}; !reflect.DeepEqual(got, want) {
		t.Errorf("outbox after Reschedule = %v, want %v (a added due now, b kept as it was)", got, want)
	}
}
