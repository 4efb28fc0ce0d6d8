package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/watch"
)

// testRegisterShapes loads a register whose rows are shaped as real files
// sometimes are, and checks the bulk screen's company_name and a watch's
// matches (both backends must agree; docs/api.md "The register"):
//   - a company with no row marked current is named by its first row;
//   - one with two rows marked current by the first of them;
//   - one marked with a lower-case "y" by that row;
//   - one whose notices carry only a former name's ABN is still named by
//     its current row;
//   - an ABN starting with 0 (the register takes any 11 digits) resolves
//     like any other.
func testRegisterShapes(t *testing.T, b WatchBackend) {
	ctx := context.Background()
	ns := Load(t, b.Backend)
	noY, twoY, lowerY, formerABN, zeroABN := acnN(31), acnN(32), acnN(33), acnN(34), acnN(35)
	const oldABN, zero = "65700033183", "03554324622"
	row := func(name, acn, abn, current, currentName string) notice.RegisterRow {
		return notice.RegisterRow{CompanyName: name, ACN: acn, ABN: abn, Type: "APTY", Class: "LMSH", SubClass: "PROP",
			Status: "REGD", RegisteredOn: "2015-02-03", CurrentNameIndicator: current, CurrentName: currentName}
	}
	rows := append(RegisterRows(),
		row("NOY FIRST PTY LTD", noY, "", "", "NOY CURRENT COLUMN PTY LTD"),
		row("NOY SECOND PTY LTD", noY, "", "", ""),
		row("TWOY ONE PTY LTD", twoY, "", "Y", ""),
		row("TWOY TWO PTY LTD", twoY, "", "Y", ""),
		row("LOWERY OLD PTY LTD", lowerY, "", "", ""),
		row("LOWERY NOW PTY LTD", lowerY, "", "y", ""),
		row("FORMER NOW PTY LTD", formerABN, "11"+formerABN, "Y", ""),
		row("FORMER OLD PTY LTD", formerABN, oldABN, "", ""),
		row("ZERO ABN PTY LTD", zeroABN, zero, "Y", ""),
	)
	LoadRegister(t, b.Backend, rows)
	add := func(src string, acn, abn *string) {
		n := ns[0]
		n.SourceID, n.ID = src, notice.IDFor(src)
		n.ACN, n.ABN, n.CompanyName = acn, abn, "AS ON THE NOTICE"
		if _, err := b.Writer.UpsertNotices(ctx, []notice.Notice{n}); err != nil {
			t.Fatal(err)
		}
		b.Clock.Advance(time.Second)
	}
	for _, acn := range []string{noY, twoY, lowerY} {
		add("S-SHAPE-"+acn, &acn, nil)
	}
	old, z := oldABN, zero
	add("S-SHAPE-FORMER", nil, &old)
	add("S-SHAPE-ZERO", nil, &z)

	res, err := b.Watches.Screen(ctx, ids(t, noY, twoY, lowerY, formerABN, zeroABN), notice.Filter{IncludeDeregistration: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{noY: "NOY FIRST PTY LTD", twoY: "TWOY ONE PTY LTD", lowerY: "LOWERY NOW PTY LTD",
		formerABN: "FORMER NOW PTY LTD", zeroABN: "ZERO ABN PTY LTD"}
	if len(res.Matched) != len(want) {
		t.Fatalf("screen matched %d of %d: %+v", len(res.Matched), len(want), res)
	}
	for _, m := range res.Matched {
		if m.CompanyName == nil || *m.CompanyName != want[m.Identifier] {
			t.Errorf("screen of %s: company_name %v, want %q", m.Identifier, deref(m.CompanyName), want[m.Identifier])
		}
	}
	acc := newAccount(t, b)
	w := create(t, b, account.DefaultPlans()["standard"], newWatch(t, b, acc, watch.Filters{}, zeroABN, formerABN))
	if got := sourceIDs(allMatches(t, b, acc, w.ID, 0, 100)); len(got) != 2 || got[0] != "S-SHAPE-FORMER" || got[1] != "S-SHAPE-ZERO" {
		t.Errorf("watch on the ACNs matches %v, want the notices carrying their ABNs (S-SHAPE-FORMER, S-SHAPE-ZERO)", got)
	}
}
