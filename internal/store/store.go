// Package store defines the seams between the API and its backends: domain
// verbs over domain types, never a backend's query language. storetest
// runs one contract suite against each backend.
package store

import (
	"context"
	"fmt"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
)

// Notices is the read side of notices and the company register.
type Notices interface {
	// Search returns one page of notices and the exact total.
	Search(ctx context.Context, q notice.SearchQuery) (notice.SearchPage, error)
	// Notice returns one notice by public id, or errs.NotFound.
	Notice(ctx context.Context, id string) (notice.Notice, error)
	// Company returns the company view, or errs.NotFound when neither the
	// register nor the notices hold anything for the identifier.
	Company(ctx context.Context, id ident.ID) (notice.Company, error)
	// CompaniesByName finds register companies by the words of a name
	// (current or former) and ranks them by notice.RankNames; more than
	// notice.MaxNameRows matching names is errs.InvalidParameter.
	CompaniesByName(ctx context.Context, q notice.NameQuery) (notice.NamePage, error)
	// Filters counts the values of each filter field among matching notices.
	Filters(ctx context.Context, f notice.Filter) (notice.FilterCounts, error)
	// Stats counts matching notices grouped by one field.
	Stats(ctx context.Context, q notice.StatsQuery) (notice.Stats, error)
	// IndexStatus reports the size and freshness of the notice index.
	IndexStatus(ctx context.Context) (notice.IndexStatus, error)
	// ExportNotices opens an export of every notice matching q in q's sort
	// (ignoring q.Limit and q.Page) from one consistent view of the
	// notices; errs.ExportTooLarge when more than max match. The caller
	// must Close it.
	ExportNotices(ctx context.Context, q notice.SearchQuery, max int) (NoticeExport, error)
}

// NoticeExport is an open export (Notices.ExportNotices): the matching
// notices a batch at a time, in order.
type NoticeExport interface {
	// Total is how many notices the export holds.
	Total() int64
	// Next returns the next batch, or an empty batch when all were read.
	Next(ctx context.Context) ([]notice.Notice, error)
	// Close releases what the export holds.
	Close() error
}

// ExportTooLarge is the refusal of an export matching more than max
// notices.
func ExportTooLarge(total int64, max int) error {
	return errs.New(errs.ExportTooLarge, "%d notices match this query; a CSV export carries at most %d; narrow the filters (from/to, state, notice_purpose, q) or export in several parts", total, max)
}

// UpsertResult counts what a batch upsert did.
type UpsertResult struct {
	Inserted int
	Updated  int
}

// NoticeWriter stores notices (ID and PublishedDate set): a new source_id
// gets the next notice_seq and collected_at now, a known one keeps both.
type NoticeWriter interface {
	UpsertNotices(ctx context.Context, batch []notice.Notice) (UpsertResult, error)
}

// BatchSizer is a NoticeWriter with a default batch size of its own.
type BatchSizer interface {
	NoticeBatch() int
}

// RegisterLoad is a register replacement in progress.
type RegisterLoad interface {
	// Add appends rows to the new register.
	Add(ctx context.Context, rows []notice.RegisterRow) error
	// Commit swaps the new register in atomically.
	Commit(ctx context.Context) error
	// Rollback abandons the load; the old register stays.
	Rollback() error
}

// RegisterWriter replaces the company register with a new snapshot.
type RegisterWriter interface {
	BeginRegister(ctx context.Context) (RegisterLoad, error)
}

// Accounts manages accounts and authenticates keys.
type Accounts interface {
	// Authenticate returns the principal owning key, or errs.Unauthorised
	// (a lapsed subscription is Principal.Account.Active false).
	Authenticate(ctx context.Context, key string) (account.Principal, error)
	// CreateAccount creates an account on a plan and returns its new keys.
	CreateAccount(ctx context.Context, name, plan string) (account.Created, error)
	// ListAccounts returns every account, oldest first.
	ListAccounts(ctx context.Context) ([]account.Account, error)
	// SetSubscription activates or lapses an account's subscription.
	SetSubscription(ctx context.Context, accountID string, active bool) error
	// RotateKeys replaces both keys of an account; the old ones stop working.
	RotateKeys(ctx context.Context, accountID string) (account.Created, error)
}

// ItemError is one notice of a batch that a backend refused.
type ItemError struct {
	// Index is the notice's position in the batch.
	Index int
	// Reason says why, in the backend's words.
	Reason string
}

// BatchError is a NoticeWriter's refusal of some notices of a batch stored
// item by item; the others are stored and counted in its UpsertResult.
type BatchError struct {
	Items []ItemError
}

// Error summarises the refused notices.
func (e *BatchError) Error() string {
	if len(e.Items) == 0 {
		return "no notices refused"
	}
	return fmt.Sprintf("%d notices of the batch were refused; the first: %s", len(e.Items), e.Items[0].Reason)
}
