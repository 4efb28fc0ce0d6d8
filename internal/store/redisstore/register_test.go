package redisstore

import (
	"context"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
)

// TestRegisterSwapIsAtomic: while a new register is being loaded the
// screen and watch resolution see the old one whole; after Commit the new
// one whole; a rolled-back load leaves no trace.
func TestRegisterSwapIsAtomic(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	load := func(rows []notice.RegisterRow) *RegisterLoad {
		l, err := f.rs.BeginRegister(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Add(ctx, rows); err != nil {
			t.Fatal(err)
		}
		return l
	}
	row := func(n int, name string) notice.RegisterRow {
		return notice.RegisterRow{CompanyName: name, ACN: acn(n), ABN: "51" + acn(n), CurrentNameIndicator: "Y"}
	}
	unmatched := func() []string {
		res, err := f.rs.Screen(ctx, idsOf(t, acn(1), acn(2), "51"+acn(2)), noFilter())
		if err != nil {
			t.Fatal(err)
		}
		return append(res.Unmatched, "|")
	}
	if err := load([]notice.RegisterRow{row(1, "OLD ONE")}).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := unmatched(); len(got) != 2 || got[0] != acn(1) {
		t.Fatalf("old register: unmatched %v, want only %s", got, acn(1))
	}
	pending := load([]notice.RegisterRow{row(2, "NEW TWO")})
	if got := unmatched(); len(got) != 2 || got[0] != acn(1) {
		t.Errorf("during a load the screen sees %v, want the old register whole", got)
	}
	if err := pending.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := unmatched(); len(got) != 3 || got[0] != acn(2) || got[1] != "51"+acn(2) {
		t.Errorf("after the swap the screen sees %v, want the new register whole", got)
	}
	abandoned := load([]notice.RegisterRow{row(1, "NEVER")})
	if err := abandoned.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.rdb.Exists(ctx, f.rs.key("reg", abandoned.v, "name")).Result(); n != 0 {
		t.Errorf("a rolled-back load left its keys")
	}
	if got := unmatched(); len(got) != 3 || got[0] != acn(2) {
		t.Errorf("after a rollback the screen sees %v", got)
	}
}
