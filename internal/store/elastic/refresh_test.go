package elastic

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// TestLoadLeavesRefreshes: a batch of a load whose next batch is under way
// leaves its refresh to it (its seqs keep holding the watermark back), until
// the last refresh is RefreshEvery old; a batch with none after it, and a
// batch after that fails, refresh for every batch that left theirs.
func TestLoadLeavesRefreshes(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	clock := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	s := openTest(t, now)
	s.cfg.RefreshEvery = time.Minute

	// write sends batch i of a load in its turn; the turns after it that
	// are already made say whether it is followed.
	write := func(turn *store.Turn, prefix string) (lo, hi int64) {
		t.Helper()
		got, _, err := s.UpsertStoredTurn(ctx, synthBatch(prefix, 0, 20), turn)
		turn.Finish()
		if err != nil {
			t.Fatalf("batch %s: %v", prefix, err)
		}
		lo, hi = got[0].Seq, got[0].Seq
		for _, n := range got {
			lo, hi = min(lo, n.Seq), max(hi, n.Seq)
		}
		return lo, hi
	}
	watermark := func() int64 {
		t.Helper()
		wm, err := s.Watermark(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return wm
	}
	searchable := func() int64 {
		t.Helper()
		var ans struct {
			Count int64 `json:"count"`
		}
		if err := s.do(ctx, s.cfg.Timeout, http.MethodGet, "/"+s.Alias("notices")+"/_count", nil, &ans); err != nil {
			t.Fatal(err)
		}
		return ans.Count
	}

	t1 := store.NextTurn(nil)
	t2 := store.NextTurn(t1)
	// The first batch refreshes (no refresh yet), though followed.
	_, hi1 := write(t1, "A")
	if wm := watermark(); wm != hi1 {
		t.Fatalf("watermark %d after the first batch, want %d", wm, hi1)
	}
	t3 := store.NextTurn(t2)
	lo2, _ := write(t2, "B") // followed, refreshed just now: left to t3
	if wm := watermark(); wm >= lo2 {
		t.Fatalf("watermark %d passed a batch (seqs from %d) whose refresh was left to the next", wm, lo2)
	}
	_, hi3 := write(t3, "C") // the last: refreshes for both
	if wm := watermark(); wm != hi3 {
		t.Fatalf("watermark %d after the last batch, want %d (every batch)", wm, hi3)
	}
	if n := searchable(); n != 60 {
		t.Fatalf("%d notices searchable after the last batch, want 60", n)
	}

	t.Run("refresh every", func(t *testing.T) {
		u1 := store.NextTurn(nil)
		u2 := store.NextTurn(u1)
		advance(time.Minute) // the last refresh is RefreshEvery old
		_, hi := write(u1, "D")
		if wm := watermark(); wm != hi {
			t.Fatalf("watermark %d, want %d: a batch a minute after the last refresh refreshes though followed", wm, hi)
		}
		write(u2, "E")
	})

	t.Run("next batch fails", func(t *testing.T) {
		u1 := store.NextTurn(nil)
		u2 := store.NextTurn(u1)
		lo, hi := write(u1, "F")
		if wm := watermark(); wm >= lo {
			t.Fatalf("watermark %d passed a batch (seqs from %d) whose refresh was left to the next", wm, lo)
		}
		bad := []notice.Notice{{CompanyName: "NO SOURCE ID PTY LTD"}}
		_, _, err := s.UpsertStoredTurn(ctx, bad, u2)
		u2.Finish()
		if err == nil {
			t.Fatal("a notice without source_id was written")
		}
		if wm := watermark(); wm != hi {
			t.Fatalf("watermark %d after the next batch failed, want %d: the batch it was left by is searchable", wm, hi)
		}
	})
}
