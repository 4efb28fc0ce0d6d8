package redisstore

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

func TestGaugesContract(t *testing.T) {
	var last fixture
	storetest.RunGauges(t, func(t *testing.T) storetest.GaugeBackend {
		// The suite records each delivery itself (Deliver); matching on
		// read would also record those of every other hooked watch of
		// the same company, which the suite does not count.
		f := newFixture(t, Options{NoMatchOnRead: true})
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
	accts, err := rs.accounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	due := func() []redis.Z {
		t.Helper()
		var all []redis.Z
		for _, a := range accts {
			z, err := last.rdb.ZRangeWithScores(ctx, rs.akey(a, ddueKey), 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, z...)
		}
		return all
	}
	keptDue := due()
	// The sweep's list (Pending, read from ddue) is what scanning every
	// delivery record gives (every one due by the end of time).
	pending, err := rs.Pending(ctx, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if scanned := pendingByScan(t, last); !sameRefs(pending, scanned) || len(scanned) == 0 {
		t.Fatalf("Pending %v, the records' pending deliveries not held %v", pending, scanned)
	}
	drop := []string{rs.key(lapsedKey), rs.key(gaugesKey)}
	for _, a := range accts {
		drop = append(drop, rs.akey(a, winactiveKey), rs.akey(a, dstatKey), rs.akey(a, ddueKey))
	}
	for _, k := range drop {
		if err := last.rdb.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
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

// pendingByScan lists the pending deliveries that are not held by
// reading every delivery record of every watch.
func pendingByScan(t *testing.T, f fixture) []Ref {
	t.Helper()
	ctx := context.Background()
	ws, err := f.rs.allWatches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []Ref
	for _, w := range ws {
		recs, err := f.rdb.HVals(ctx, f.rs.akey(w.acct, recordsKey, w.id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range recs {
			var r delivery.Record
			if err := json.Unmarshal([]byte(raw), &r); err != nil {
				t.Fatal(err)
			}
			if r.Status == delivery.Pending && r.NextAttemptAt != nil {
				out = append(out, Ref{AccountID: w.acct, WatchID: w.id, DeliveryID: r.ID, NoticeSeq: r.NoticeSeq})
			}
		}
	}
	return out
}

// sameRefs reports whether a and b hold the same refs, in any order.
func sameRefs(a, b []Ref) bool {
	key := func(rs []Ref) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.member()
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

// TestDeliveryRetentionContract: storetest.RunDeliveryRetention on the
// Redis store.
func TestDeliveryRetentionContract(t *testing.T) {
	storetest.RunDeliveryRetention(t, func(t *testing.T) storetest.GaugeBackend {
		f := newFixture(t, Options{})
		return storetest.GaugeBackend{
			MailBackend: storetest.MailBackend{WatchBackend: f.backend(), Mail: f.rs},
			Webhooks:    f.rs,
			Gauges:      f.rs,
			Deliver:     f.deliver,
			Pend:        func(t *testing.T, watchID, source string) { f.deliver(t, watchID, source) },
		}
	})
}
