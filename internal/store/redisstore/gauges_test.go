package redisstore

import (
	"context"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

func TestGaugesContract(t *testing.T) {
	var last fixture
	storetest.RunGauges(t, func(t *testing.T) storetest.GaugeBackend {
		f := newFixture(t, Options{})
		last = f
		return storetest.GaugeBackend{
			MailBackend: storetest.MailBackend{WatchBackend: f.backend(), Mail: f.rs, FailDeliveries: f.failDeliveries},
			Webhooks:    f.rs,
			Gauges:      f.rs,
			Deliver:     f.deliver,
		}
	})
	if t.Failed() {
		return
	}
	// The counts the scripts kept as the state changed are what computing
	// them from the records gives: drop the gauge keys, as in a namespace
	// written before they existed, and read again.
	ctx := context.Background()
	rs := last.rs
	kept, err := rs.Gauges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	due := func() []redis.Z {
		t.Helper()
		z, err := last.rdb.ZRangeWithScores(ctx, rs.key(ddueKey), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		return z
	}
	keptDue := due()
	if err := last.rdb.Del(ctx, rs.key(lapsedKey), rs.key(winactiveKey), rs.key(dstatKey), rs.key(ddueKey)).Err(); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := rs.Gauges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if kept != rebuilt {
		t.Fatalf("kept by the scripts %+v, computed from the records %+v", kept, rebuilt)
	}
	if kept == (store.Gauges{}) || len(keptDue) == 0 {
		t.Fatal("the suite left no state to compare")
	}
	if got := due(); !reflect.DeepEqual(got, keptDue) {
		t.Fatalf("due deliveries kept %v, computed %v", keptDue, got)
	}
}
