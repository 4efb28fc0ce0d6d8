package store

import (
	"context"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/watch"
)

// MatchPage is one page of a watch's match history.
type MatchPage struct {
	// Notices have notice_seq > since, ascending.
	Notices []notice.Notice
	// NextSince is the cursor for the next poll: the last notice's seq (or
	// since, for an empty page).
	NextSince int64
	HasMore   bool
}

// Watches stores watches and answers match history and bulk screens. A
// watch of another account is errs.NotFound, as a missing one.
type Watches interface {
	// CreateWatch stores w (made by watch.New) if plan allows, in one
	// atomic step: errs.WatchLimitReached at plan.Watches watches,
	// errs.QuotaExceeded when the account's distinct companies would
	// exceed plan.Companies. It returns the watch with Unresolved filled.
	CreateWatch(ctx context.Context, w watch.Watch, plan account.Plan) (watch.Watch, error)
	// Watch returns one watch of the account.
	Watch(ctx context.Context, accountID, id string) (watch.Watch, error)
	// ListWatches returns the account's watches, oldest first.
	ListWatches(ctx context.Context, accountID string) ([]watch.Watch, error)
	// UpdateWatch applies a validated patch at time now.
	UpdateWatch(ctx context.Context, accountID, id string, p watch.Patch, now time.Time) (watch.Watch, error)
	// DeleteWatch removes a watch, freeing its quota.
	DeleteWatch(ctx context.Context, accountID, id string) error
	// Matches returns up to limit notices matching the watch with
	// notice_seq > since, ascending by notice_seq (full history).
	Matches(ctx context.Context, accountID, id string, since int64, limit int) (MatchPage, error)
	// Screen is the bulk screen of POST /v1/match.
	Screen(ctx context.Context, ids []ident.ID, f notice.Filter) (watch.ScreenResult, error)
}
