// Package storetest is the contract suite every backend runs: the domain
// semantics of store.Notices, store.NoticeWriter, store.RegisterWriter and
// store.Accounts that must not differ between the embedded SQLite backend and
// the scale-out one. A backend's tests call RunNotices and RunAccounts with a
// function opening a fresh, empty backend.
package storetest

import (
	"context"
	_ "embed"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// Backend bundles what RunNotices exercises. Clock must be the clock the
// backend stamps collected_at with (e.g. sqlite.WithClock(clock.Now)).
type Backend struct {
	Notices  store.Notices
	Writer   store.NoticeWriter
	Register store.RegisterWriter
	Clock    *Clock
}

// Clock is a manual clock for tests: it moves only when told.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Start is where suites start their clocks.
var Start = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

// Identifiers of the fixture companies.
const (
	// ACNAlpha is in the register with a former and a current name and an
	// ABN; its notices carry the ACN (S-001, S-006) or only the ABN (S-002).
	ACNAlpha = "004085616"
	ABNAlpha = "53004085616"
	// ACNBeta is not in the register; its one notice (S-003, a
	// deregistration) carries both ACNBeta and ABNBeta.
	ACNBeta = "600000002"
	ABNBeta = "43600000002"
	// ACNCafe is in the register without an ABN; S-004 and S-005 are
	// identical notices published at the same instant.
	ACNCafe = "700000004"
	// ACNDelta and ABNDelta are in the register with no notices.
	ACNDelta = "800000006"
	ABNDelta = "50800000006"
	// ABNGamma is on one notice (S-007) and not in the register, so
	// ACNGamma (its last nine digits) resolves to nothing.
	ABNGamma = "75111222336"
	ACNGamma = "111222336"
	// ACNBadCheck fails the ACN check digit; S-008 carries it.
	ACNBadCheck = "123456789"
)

//go:embed testdata/notices.json
var noticesJSON []byte

// Notices returns the fixture notices in arrival order, ready for
// NoticeWriter: ID and PublishedDate set, Seq and CollectedAt empty.
func Notices(t testing.TB) []notice.Notice {
	t.Helper()
	var ns []notice.Notice
	if err := json.Unmarshal(noticesJSON, &ns); err != nil {
		t.Fatalf("storetest: testdata/notices.json: %v", err)
	}
	for i := range ns {
		n := &ns[i]
		n.ID = notice.IDFor(n.SourceID)
		at, err := time.Parse(time.RFC3339Nano, n.PublishedAt)
		if err != nil {
			t.Fatalf("storetest: %s published_at: %v", n.SourceID, err)
		}
		n.PublishedDate = notice.PublishedDate(at)
		if n.Practitioners == nil {
			n.Practitioners = []notice.Practitioner{}
		}
	}
	return ns
}

// RegisterRows returns the fixture register: Alpha's former name precedes
// its current one, as in the ASIC file.
func RegisterRows() []notice.RegisterRow {
	return []notice.RegisterRow{
		{CompanyName: "ALPHA EXPLORATION PTY LTD", ACN: ACNAlpha, Type: "APTY", Class: "LMSH", SubClass: "PROP",
			Status: "EXAD", RegisteredOn: "1990-05-01", CurrentNameIndicator: "", ABN: ABNAlpha,
			CurrentName: "ALPHA MINING PTY LTD", CurrentNameStart: "2001-07-01"},
		{CompanyName: "DELTA SERVICES PTY LTD", ACN: ACNDelta, Type: "APTY", Class: "LMSH", SubClass: "PROP",
			Status: "REGD", RegisteredOn: "2015-02-03", PreviousState: "VIC", StateRegistrationNumber: "C0012345",
			CurrentNameIndicator: "Y", ABN: ABNDelta},
		{CompanyName: "ALPHA MINING PTY LTD", ACN: ACNAlpha, Type: "APTY", Class: "LMSH", SubClass: "PROP",
			Status: "EXAD", RegisteredOn: "1990-05-01", CurrentNameIndicator: "Y", ABN: ABNAlpha},
		{CompanyName: "CAFÉ SOCIÉTÉ PTY LTD", ACN: ACNCafe, Type: "APTY", Class: "LMSH", SubClass: "PROP",
			Status: "EXAD", RegisteredOn: "2010-10-10", DeregisteredOn: "", CurrentNameIndicator: "Y"},
	}
}

// Load stores the fixture notices (in one batch per notice, so arrival order
// is file order on every backend) and the fixture register.
func Load(t testing.TB, b Backend) []notice.Notice {
	t.Helper()
	ctx := context.Background()
	ns := Notices(t)
	for i := range ns {
		if _, err := b.Writer.UpsertNotices(ctx, ns[i:i+1]); err != nil {
			t.Fatalf("load %s: %v", ns[i].SourceID, err)
		}
		b.Clock.Advance(time.Second)
	}
	LoadRegister(t, b, RegisterRows())
	return ns
}

// LoadRegister replaces the register with rows.
func LoadRegister(t testing.TB, b Backend, rows []notice.RegisterRow) {
	t.Helper()
	ctx := context.Background()
	l, err := b.Register.BeginRegister(ctx)
	if err != nil {
		t.Fatalf("begin register: %v", err)
	}
	if err := l.Add(ctx, rows); err != nil {
		t.Fatalf("register rows: %v", err)
	}
	if err := l.Commit(ctx); err != nil {
		t.Fatalf("commit register: %v", err)
	}
}
