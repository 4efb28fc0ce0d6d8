package redisstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

// TestRepairRecords: notices an ingest stored in the notice store but died
// before recording in Redis (the second step of Ingest) are missing from
// the bulk screen; RepairRecords, run by the workers' sweep (Reconcile) and
// at the start of every ingest, records them, and only them, and moves its
// cursor so the next run asks about nothing it has seen.
func TestRepairRecords(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	tmpl := storetest.Notices(t)[0]
	writer := composite{notices: f.notices, rs: f.rs}
	// A batch recorded as usual, then one whose ingest "died" after the
	// notice store's write: written to the notice store only.
	var recorded, lost []notice.Notice
	for i := range 20 {
		recorded = append(recorded, genNotice(t, tmpl, fmt.Sprint("REC-", i), 100+i))
		lost = append(lost, genNotice(t, tmpl, fmt.Sprint("LOST-", i), 200+i))
	}
	if _, err := writer.UpsertNotices(ctx, recorded); err != nil {
		t.Fatal(err)
	}
	if _, err := f.notices.UpsertNotices(ctx, lost); err != nil {
		t.Fatal(err)
	}
	screen := func() (matched int) {
		var vs []string
		for i := range 20 {
			vs = append(vs, acn(100+i), acn(200+i))
		}
		res, err := f.rs.Screen(ctx, idsOf(t, vs...), notice.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Counts.Matched
	}
	if got := screen(); got != 20 {
		t.Fatalf("before the repair the screen matched %d companies, want the 20 recorded ones (the test's premise)", got)
	}
	for _, c := range []struct {
		name string
		run  func() (int, error)
	}{
		{"Reconcile (the workers' sweep)", func() (int, error) { return f.rs.Reconcile(ctx, time.Now()) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, err := c.run()
			if err != nil {
				t.Fatal(err)
			}
			if n != 20 {
				t.Errorf("repaired %d, want the 20 unrecorded notices", n)
			}
			if got := screen(); got != 40 {
				t.Errorf("after the repair the screen matched %d companies, want 40", got)
			}
		})
	}
	// Nothing left: the next repair reads no notice.
	if n, err := f.rs.RepairRecords(ctx); err != nil || n != 0 {
		t.Errorf("a second repair recorded %d (%v), want 0", n, err)
	}
	top, _ := f.notices.LatestSeq(ctx)
	if got, _ := f.rdb.Get(ctx, f.rs.key("rec", "through")).Int64(); got != top {
		t.Errorf("rec:through = %d, want the watermark %d", got, top)
	}
}
