package redisstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/internal/watch"
)

// termsLimit is the real notice source with Elasticsearch's terms-query
// limit enforced: a call with more than MaxTerms identifiers fails, as the
// terms query would.
type termsLimit struct {
	NoticeSource
	calls, biggest int
}

func (l *termsLimit) MatchingSeqs(ctx context.Context, keys []string, f notice.Filter, after, through int64, limit int) ([]int64, error) {
	if len(keys) > MaxTerms {
		return nil, fmt.Errorf("terms query of %d values, over the %d limit", len(keys), MaxTerms)
	}
	l.calls++
	l.biggest = max(l.biggest, len(keys))
	return l.NoticeSource.MatchingSeqs(ctx, keys, f, after, through, limit)
}

// TestMillionCompanyWatch: an enterprise watch of 1,000,000 companies is
// created within the quota, its history is backfilled in terms-sized
// chunks, later arrivals match it, and deleting it frees the quota.
func TestMillionCompanyWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000,000-company watch: skipped in -short mode")
	}
	ctx := context.Background()
	f := newFixture(t, Options{})
	src := &termsLimit{NoticeSource: f.notices}
	f.rs.source = src
	writer := composite{notices: f.notices, rs: f.rs}
	tmpl := storetest.Notices(t)[0]
	const size = 1_000_000
	// History: companies spread over every chunk, and one not watched.
	history := []int{0, 65_535, 65_536, 500_000, 999_999, size + 5}
	for i, c := range history {
		if _, err := writer.UpsertNotices(ctx, []notice.Notice{genNotice(t, tmpl, fmt.Sprint("H-", i), c)}); err != nil {
			t.Fatal(err)
		}
	}
	ids := make([]ident.ID, size)
	for i := range ids {
		ids[i] = ident.ID{Kind: ident.ACN, Value: acn(i)}
	}
	acc, err := f.rs.CreateAccount(ctx, "Big", "enterprise")
	if err != nil {
		t.Fatal(err)
	}
	plan := account.DefaultPlans()["enterprise"]
	start := time.Now()
	w, err := f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: ids, Name: "book"}, acc.AccountID, f.clock.Now()), plan)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("created a %d-company watch in %v with %d backfill queries of at most %d identifiers", size, time.Since(start), src.calls, src.biggest)
	if src.calls < size/MaxTerms {
		t.Errorf("%d backfill queries for %d identifiers; want chunks of at most %d", src.calls, size, MaxTerms)
	}
	// A later arrival for a company deep in the list.
	if _, err := writer.UpsertNotices(ctx, []notice.Notice{genNotice(t, tmpl, "LATER", 777_777)}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for since := int64(0); ; {
		p, err := f.rs.Matches(ctx, acc.AccountID, w.ID, since, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range p.Notices {
			got = append(got, n.SourceID)
		}
		since = p.NextSince
		if !p.HasMore {
			break
		}
	}
	want := []string{"H-0", "H-1", "H-2", "H-3", "H-4", "LATER"}
	if !slices.Equal(got, want) {
		t.Errorf("matches %v, want %v", got, want)
	}
	// The quota is full: one more company is refused; deleting frees it.
	_, err = f.rs.CreateWatch(ctx, watch.New(watch.CreateRequest{Identifiers: []ident.ID{{Kind: ident.ACN, Value: acn(size + 1)}}},
		acc.AccountID, f.clock.Now()), plan)
	wantQuota(t, err)
	if err := f.rs.DeleteWatch(ctx, acc.AccountID, w.ID); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.rdb.SCard(ctx, f.rs.key("acct", acc.AccountID, "companies")).Result(); n != 0 {
		t.Errorf("after deleting the watch the account counts %d companies", n)
	}
}

func wantQuota(t *testing.T, err error) {
	t.Helper()
	if e, ok := err.(interface{ Error() string }); !ok || e == nil || !contains(err.Error(), "quota_exceeded") {
		t.Errorf("one company over 1,000,000: %v, want quota_exceeded", err)
	}
}

func contains(s, sub string) bool {
	return len(s) >= len(sub) && (s == sub || len(sub) == 0 || indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
