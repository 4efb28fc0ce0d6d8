package redisstore

import (
	"context"
	"testing"

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
	// them from the records gives.
	ctx := context.Background()
	kept, err := last.rs.Gauges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := last.rs.RebuildGauges(ctx); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := last.rs.Gauges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if kept != rebuilt {
		t.Fatalf("kept by the scripts %+v, computed from the records %+v", kept, rebuilt)
	}
	if kept == (store.Gauges{}) {
		t.Fatal("the suite left no state to compare")
	}
}
