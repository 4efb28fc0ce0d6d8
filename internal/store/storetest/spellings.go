package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
)

// testSpellings: values that differ only in case are one value in filters
// and stats, shown under the spelling most notices carry, the first in
// byte order among equals (notice.FoldSpellings), on every counting path
// (whole months, part of a month, a q, a company) and whatever order the
// notices arrived in.
func testSpellings(t *testing.T, b Backend) {
	ctx := context.Background()
	var batch []notice.Notice
	add := func(purpose, status, state string, at time.Time) {
		n := AlphaNotice(fmt.Sprintf("SPELL-%02d", len(batch)), at)
		n.NoticePurpose, n.Status, n.State = purpose, status, state
		n.Text = "A meeting of the creditors of the company."
		batch = append(batch, n)
	}
	day := func(m, d int) time.Time { return time.Date(2026, time.Month(m), d, 1, 0, 0, 0, time.UTC) }
	// The rare spellings arrive first, so a backend that shows the first
	// spelling it stored gets them wrong.
	add("appointment", "in liquidation", "nsw", day(1, 10))
	add("APPOINTMENT", "in liquidation", "Nsw", day(2, 10))
	add("Appointment", "In Liquidation", "NSW", day(2, 11))
	add("Appointment", "In Liquidation", "NSW", day(3, 12))
	add("Appointment", "Under Administration", "NSW", day(3, 13))
	for i := range batch {
		if _, err := b.Writer.UpsertNotices(ctx, batch[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	filters := []struct {
		name string
		f    notice.Filter
	}{
		{"whole months", notice.Filter{}},
		{"parts of months", notice.Filter{From: "2026-01-05", To: "2026-03-20"}},
		{"a filter in another case", notice.Filter{State: []string{"nsw"}, NoticePurpose: []string{"APPOINTMENT"}}},
		{"q", notice.Filter{Q: query.Term{Text: "creditors"}}},
		{"company", notice.Filter{Company: id(ACNAlpha)}},
	}
	for _, c := range filters {
		t.Run("filters, "+c.name, func(t *testing.T) {
			got, err := b.Notices.Filters(ctx, c.f)
			if err != nil {
				t.Fatal(err)
			}
			want := []notice.ValueCount{{Value: "Appointment", Count: 5}}
			if fmt.Sprint(got.NoticePurpose) != fmt.Sprint(want) {
				t.Errorf("notice_purpose %v, want %v", got.NoticePurpose, want)
			}
			// 2 "in liquidation" and 2 "In Liquidation": a tie, so the
			// first in byte order.
			want = []notice.ValueCount{{Value: "In Liquidation", Count: 4}, {Value: "Under Administration", Count: 1}}
			if fmt.Sprint(got.Status) != fmt.Sprint(want) {
				t.Errorf("status %v, want %v", got.Status, want)
			}
			want = []notice.ValueCount{{Value: "NSW", Count: 5}}
			if fmt.Sprint(got.State) != fmt.Sprint(want) {
				t.Errorf("state %v, want %v", got.State, want)
			}
		})
		t.Run("stats, "+c.name, func(t *testing.T) {
			got, err := b.Notices.Stats(ctx, notice.StatsQuery{Filter: c.f, GroupBy: "notice_purpose"})
			if err != nil {
				t.Fatal(err)
			}
			notice.FinishStats(&got, c.f.From, c.f.To)
			want := []notice.Bucket{{Key: "Appointment", Count: 5}}
			if fmt.Sprint(got.Data) != fmt.Sprint(want) {
				t.Errorf("notice_purpose %v, want %v", got.Data, want)
			}
		})
	}
}
