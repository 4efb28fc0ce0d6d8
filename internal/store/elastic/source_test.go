package elastic

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/publog"
)

// TestNoticeSummaries: the screen copy's load reads every notice up to the
// seq asked for, ascending, across pages, each with every field of its
// summary (an appointment type or none, an ABN or none, an amendment's
// new values), exactly as the whole notice's summary.
func TestNoticeSummaries(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	batch := synthBatch("S", 0, 7)
	app, abn := "Voluntary administrator", "51123456789"
	batch[1].AppointmentType = &app
	batch[2].ABN = &abn
	batch[3].ACN = nil
	batch[3].ABN = &abn
	if _, err := s.UpsertNotices(ctx, batch); err != nil {
		t.Fatal(err)
	}
	amended := batch[4]
	amended.CompanyName, amended.State = "RENAMED PTY LTD", "WA"
	if _, err := s.UpsertNotices(ctx, []notice.Notice{amended}); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { summaryPage = n }(summaryPage)
	summaryPage = 2
	for _, through := range []int64{7, 5, 0} {
		var got []string
		err := s.NoticeSummaries(ctx, through, func(n *notice.Notice) error {
			got = append(got, publog.EncodeSummary(n))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for q := int64(1); q <= through; q++ {
			seqs = append(seqs, q)
		}
		whole, err := s.NoticesBySeq(ctx, seqs)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{}
		for i := range whole {
			want = append(want, publog.EncodeSummary(&whole[i]))
		}
		if len(got) == 0 {
			got = []string{}
		}
		if !slices.Equal(got, want) {
			t.Errorf("through %d:\ngot  %q\nwant %q", through, got, want)
		}
	}
}

// TestCarriedIdentifiers: which identifiers a stored notice carries, as its
// ACN or its ABN; others are left out.
func TestCarriedIdentifiers(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	batch := synthBatch("C", 0, 3)
	abn := "51100000002"
	batch[2].ACN, batch[2].ABN = nil, &abn
	if _, err := s.UpsertNotices(ctx, batch); err != nil {
		t.Fatal(err)
	}
	got, err := s.CarriedIdentifiers(ctx, []string{"100000000", "100000002", abn, "100000001", "51100000000", "999999999"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"100000000": true, "100000001": true, abn: true}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
