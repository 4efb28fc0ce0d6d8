package redisstore

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/ident"
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
	keys := f.genKeys(t, abandoned.v)
	if n := f.existing(t, keys); n < 4 {
		t.Fatalf("premise: the load wrote %d of its keys %v", n, keys)
	}
	if err := abandoned.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := f.existing(t, keys); n != 0 {
		t.Errorf("a rolled-back load left %d of its keys", n)
	}
	if got := unmatched(); len(got) != 3 || got[0] != acn(2) {
		t.Errorf("after a rollback the screen sees %v", got)
	}
}

// TestKilledRegisterLoadExpires: a load that is killed before Commit or
// Rollback (ingest register stopped with SIGKILL) must not leave its
// generation in Redis for ever: until Commit its keys carry a TTL; Commit
// makes them persistent and gives the old generation its short TTL.
func TestKilledRegisterLoadExpires(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	ttls := func(v string) []time.Duration { return f.genTTLs(t, v) }
	load := func(n int) *RegisterLoad {
		l, err := f.rs.BeginRegister(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Add(ctx, []notice.RegisterRow{{CompanyName: "KILLED", ACN: acn(n), ABN: "51" + acn(n), CurrentNameIndicator: "Y"}}); err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := load(1)
	for i, d := range ttls(first.v) {
		if d <= 0 || d > loadingRegisterTTL*time.Second {
			t.Fatalf("key %d of a load in progress has TTL %v; want at most %ds, so a killed load expires", i, d, loadingRegisterTTL)
		}
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i, d := range ttls(first.v) {
		if d != -1 {
			t.Fatalf("key %d of the committed register has TTL %v; want none (persistent)", i, d)
		}
	}
	second := load(2)
	if err := second.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i, d := range ttls(first.v) {
		if d <= 0 || d > oldRegisterTTL*time.Second {
			t.Fatalf("key %d of the replaced register has TTL %v; want at most %ds", i, d, oldRegisterTTL)
		}
	}
	for i, d := range ttls(second.v) {
		if d != -1 {
			t.Fatalf("key %d of the new register has TTL %v; want none", i, d)
		}
	}
}

// TestRegisterNamesAsRowByRow: Add writes the names of a batch in a few
// multi-field commands, skipping rows a later or earlier row of the batch
// decides; the name hash and the ACN <-> ABN lists must be what writing
// each row in file order gives (the first row marked current, "Y" or "y",
// sets the name for good; another row sets its own name only when the ACN
// has none yet), within a batch and across batches. These are the embedded
// store's names (storetest's RegisterShapes compares the two).
func TestRegisterNamesAsRowByRow(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	cur := func(n int, name, abn string) notice.RegisterRow {
		return notice.RegisterRow{CompanyName: name, ACN: acn(n), ABN: abn, CurrentNameIndicator: "Y"}
	}
	former := func(n int, name, current, abn string) notice.RegisterRow {
		return notice.RegisterRow{CompanyName: name, ACN: acn(n), ABN: abn, CurrentNameIndicator: "N", CurrentName: current}
	}
	cases := []struct {
		name    string
		batches [][]notice.RegisterRow
	}{
		{"current after former", [][]notice.RegisterRow{{former(1, "OLD", "MID", ""), cur(1, "NEW", "")}}},
		{"former after current", [][]notice.RegisterRow{{cur(1, "NEW", ""), former(1, "OLD", "MID", "")}}},
		{"formers only, the first wins", [][]notice.RegisterRow{{former(1, "A", "", ""), former(1, "B", "C", ""), former(1, "D", "E", "")}}},
		{"no current row: the first row's own name", [][]notice.RegisterRow{{former(1, "A", "CUR", ""), former(1, "B", "", "")}}},
		{"two current rows, the first wins", [][]notice.RegisterRow{{cur(1, "FIRST", ""), former(1, "X", "", ""), cur(1, "LAST", "")}}},
		{"two current rows across batches, the first wins", [][]notice.RegisterRow{{cur(1, "FIRST", "")}, {cur(1, "LAST", "")}}},
		{"lower-case y marks the current row", [][]notice.RegisterRow{{former(1, "OLD", "", ""), {CompanyName: "NOW", ACN: acn(1), CurrentNameIndicator: "y"}}}},
		{"current in a later batch", [][]notice.RegisterRow{{former(1, "OLD", "MID", "")}, {cur(1, "NEW", "")}}},
		{"former in a later batch", [][]notice.RegisterRow{{cur(1, "NEW", "")}, {former(1, "OLD", "MID", "")}}},
		{"formers across batches", [][]notice.RegisterRow{{former(1, "A", "", "")}, {former(1, "B", "", ""), cur(2, "TWO", "")}}},
		{"pairs: repeats and several ABNs", [][]notice.RegisterRow{
			{cur(1, "ONE", "51"+acn(1)), former(1, "ONE OLD", "", "51"+acn(1)), cur(2, "TWO", "51"+acn(1))},
			{former(1, "ONE OLDER", "", "62"+acn(1)), cur(2, "TWO", "51"+acn(1))}}},
		{"rows without an ACN are skipped", [][]notice.RegisterRow{{{CompanyName: "NONE", CurrentNameIndicator: "Y"}, cur(3, "THREE", "")}}},
		{"an ACN's second ABN in the same batch", [][]notice.RegisterRow{{cur(1, "ONE", "51"+acn(1)), former(1, "OLD", "", "62"+acn(1)), former(1, "OLDER", "", "51"+acn(1))}}},
		{"an ABN of two ACNs, in one batch and across batches", [][]notice.RegisterRow{
			{cur(1, "ONE", "51"+acn(1)), cur(2, "TWO", "51"+acn(1))}, {cur(3, "THREE", "51"+acn(1)), former(2, "TWO OLD", "", "62"+acn(2))}}},
		{"ACNs and ABNs not of ingest's lengths", [][]notice.RegisterRow{
			{{CompanyName: "ODD OLD", ACN: "12345", ABN: "777"}, {CompanyName: "ODD", ACN: "12345", ABN: "888", CurrentNameIndicator: "Y"}},
			{{CompanyName: "ODD AGAIN", ACN: "12345", ABN: "777", CurrentNameIndicator: "Y"}, {CompanyName: "PADDED", ACN: "0012345", ABN: "777"}, cur(12345, "NINE", "777")}}},
	}
	// Random registers: a few ACNs and ABNs in many combinations, split
	// into batches at random, so every path of Add (first writes, lists
	// appended, repeats within and across batches) meets every other.
	for seed := range 6 {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		var rows []notice.RegisterRow
		for i := range 120 {
			row := notice.RegisterRow{CompanyName: "CO " + acn(i), ACN: acn(1 + r.IntN(15)), CurrentNameIndicator: []string{"Y", "N", "", "y"}[r.IntN(4)]}
			// ABNs formed from one of the ACNs (two leading digits of
			// three), and others.
			switch r.IntN(5) {
			case 0:
			case 1:
				row.ABN = "5" + acn(1+r.IntN(12)) + "0"
			default:
				row.ABN = []string{"51", "62", "73"}[r.IntN(3)] + acn(1+r.IntN(15))
			}
			rows = append(rows, row)
		}
		var batches [][]notice.RegisterRow
		for len(rows) > 0 {
			n := min(len(rows), 1+r.IntN(30))
			batches = append(batches, rows[:n])
			rows = rows[n:]
		}
		cases = append(cases, struct {
			name    string
			batches [][]notice.RegisterRow
		}{fmt.Sprintf("random register, seed %d", seed), batches})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The row-by-row model.
			names := map[string]string{}
			named := map[string]bool{}     // named by a current row
			pairs := map[string][]string{} // "acnabn:"+acn and "abn:"+abn -> values in first-seen order
			addPair := func(k, v string) {
				for _, x := range pairs[k] {
					if x == v {
						return
					}
				}
				pairs[k] = append(pairs[k], v)
			}
			l, err := f.rs.BeginRegister(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range tc.batches {
				for _, r := range b {
					if r.ACN == "" {
						continue
					}
					_, has := names[r.ACN]
					switch {
					case named[r.ACN]:
					case r.CurrentNameIndicator == "Y" || r.CurrentNameIndicator == "y":
						names[r.ACN], named[r.ACN] = r.CompanyName, true
					case has:
					default:
						names[r.ACN] = r.CompanyName
					}
					if r.ABN != "" {
						addPair("acnabn:"+r.ACN, r.ABN)
						addPair("abn:"+r.ABN, r.ACN)
					}
				}
				if err := l.Add(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			reg, err := f.rs.currentRegister(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// What the identifier sets answer of every ACN and ABN (the
			// names themselves are the notice store's: only whether each
			// is named is kept).
			acns := slices.Sorted(maps.Keys(names))
			cos, err := reg.companies(ctx, acns)
			if err != nil {
				t.Fatal(err)
			}
			wantABNs := joined(pairs, "acnabn:")
			for i, a := range acns {
				if cos[i].named != (names[a] != "") {
					t.Errorf("ACN %s: named %v, row by row its name is %q", a, cos[i].named, names[a])
				}
				if got, want := sortedList(cos[i].abns), sortedList(splitList(wantABNs[a])); got != want {
					t.Errorf("ACN %s: ABNs %s, row by row %s", a, got, want)
				}
			}
			wantACNs := joined(pairs, "abn:")
			abns := slices.Sorted(maps.Keys(wantACNs))
			of, err := reg.acnsOf(ctx, abns)
			if err != nil {
				t.Fatal(err)
			}
			for i, b := range abns {
				if got, want := sortedList(of[i]), sortedList(splitList(wantACNs[b])); got != want {
					t.Errorf("ABN %s: ACNs %s, row by row %s", b, got, want)
				}
			}
		})
	}
}

// sortedList returns a list sorted and comma-joined.
func sortedList(l []string) string { return strings.Join(slices.Sorted(slices.Values(l)), ",") }

// joined returns the lists of pairs under prefix, comma-joined, by the
// rest of their key.
func joined(pairs map[string][]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range pairs {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = strings.Join(v, ",")
		}
	}
	return out
}

// TestSlotArithmetic: the numbers the ids strings are read and written by
// agree with package ident: a slot's ACN carries ident's check digit, and
// the formed ABN is ident.ABNFromACN's (the smallest valid prefix; the
// prefixes 10 and 99 are both valid for some ACNs).
func TestSlotArithmetic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	slots := []uint32{0, 1, 9_999_999, 99_999_999, 8_000_001}
	for range 2000 {
		slots = append(slots, r.Uint32N(100_000_000))
	}
	sawTen := false
	for _, slot := range slots {
		first8 := fmt.Sprintf("%08d", slot)
		acn := first8 + strconv.Itoa(ident.ACNCheckDigit(first8))
		if got := fmt.Sprintf("%09d", slotNumber(slot)); got != acn {
			t.Fatalf("slot %d: ACN %s, want %s", slot, got, acn)
		}
		if s, ok := regSlot(acn); !ok || s != slot {
			t.Fatalf("regSlot(%s) = %d, %v; want %d", acn, s, ok, slot)
		}
		want := ident.ABNFromACN(acn)
		if got := formedABN(acn); got != want {
			t.Fatalf("formedABN(%s) = %s, want %s", acn, got, want)
		}
		if a, ok := formedOf(want); !ok || a != acn {
			t.Fatalf("formedOf(%s) = %s, %v; want %s", want, a, ok, acn)
		}
		sawTen = sawTen || want[:2] == "10"
	}
	if !sawTen {
		t.Error("premise: no ACN with both prefixes 10 and 99 was tried")
	}
}
