package matcher

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/watch"
)

func strp(s string) *string { return &s }

// note returns a notice for company acn/abn (either may be "").
func note(acn, abn string) *notice.Notice {
	n := &notice.Notice{
		ID: "ntc_x", PublishedDate: "2026-03-02", CompanyName: "ACME PTY LTD",
		NoticeType: "Appointment of Liquidator", NoticeCode: "APLQ", NoticePurpose: "Appointment",
		AppointmentType: strp("Court Liquidation"), State: "NSW", Status: "In Liquidation",
		Text: "A liquidator was appointed.",
	}
	if acn != "" {
		n.ACN = &acn
	}
	if abn != "" {
		n.ABN = &abn
	}
	return n
}

func watchFilter(t *testing.T, f watch.Filters) notice.Filter {
	t.Helper()
	nf, err := f.NoticeFilter()
	if err != nil {
		t.Fatal(err)
	}
	return nf
}

// resolver maps ABNs to ACNs like the register would.
func resolver(m map[string]string) func(string) []string {
	return func(abn string) []string {
		if acn, ok := m[abn]; ok {
			return []string{acn}
		}
		return nil
	}
}

func TestIndexMatch(t *testing.T) {
	dflt := watchFilter(t, watch.Filters{})
	reg := resolver(map[string]string{"51000000019": "000000019", "12000000028": "000000028"})
	entries := []Entry{
		{WatchID: "wch_acn", Identifiers: []string{"000000019"}, Filter: dflt, Active: true},
		{WatchID: "wch_abn", Identifiers: []string{"51000000019", "000000019"}, Filter: dflt, Active: true}, // caller added the resolved ACN
		{WatchID: "wch_other", Identifiers: []string{"000000037"}, Filter: dflt, Active: true},
		{WatchID: "wch_vic", Identifiers: []string{"000000019"}, Filter: watchFilter(t, watch.Filters{State: []string{"vic"}}), Active: true},
		{WatchID: "wch_nsw", Identifiers: []string{"000000019", "000000028"}, Filter: watchFilter(t, watch.Filters{State: []string{"nsw"}, Status: []string{"IN LIQUIDATION"}}), Active: true},
		{WatchID: "wch_nsw_registered", Identifiers: []string{"000000019"}, Filter: watchFilter(t, watch.Filters{State: []string{"NSW"}, Status: []string{"Registered"}}), Active: true},
		{WatchID: "wch_q", Filter: watchFilter(t, watch.Filters{Q: "liquidator"}), Active: true},
		{WatchID: "wch_q_miss", Filter: watchFilter(t, watch.Filters{Q: "receiver"}), Active: true},
		{WatchID: "wch_court", Filter: watchFilter(t, watch.Filters{AppointmentType: []string{"court liquidation"}}), Active: true},
		{WatchID: "wch_inactive", Identifiers: []string{"000000046"}, Filter: dflt, Active: false},
		{WatchID: "wch_no_dereg", Identifiers: []string{"000000055"}, Filter: watchFilter(t, watch.Filters{IncludeDeregistration: new(false)}), Active: true},
		{WatchID: "wch_dereg", Identifiers: []string{"000000055"}, Filter: dflt, Active: true},
	}
	filterOnly := []string{"wch_court", "wch_q"}
	tests := []struct {
		name    string
		n       *notice.Notice
		resolve func(string) []string
		want    []string
	}{
		{"acn", note("000000019", ""), nil, []string{"wch_abn", "wch_acn", "wch_nsw"}},
		{"abn listed in the watch", note("", "51000000019"), nil, []string{"wch_abn"}},
		{"abn resolving to a watched acn", note("", "51000000019"), reg, []string{"wch_abn", "wch_acn", "wch_nsw"}},
		{"acn and abn hit one watch once", note("000000019", "51000000019"), reg, []string{"wch_abn", "wch_acn", "wch_nsw"}},
		{"abn the register does not know", note("", "99000000019"), reg, nil},
		{"second identifier of a watch", note("", "12000000028"), reg, []string{"wch_nsw"}},
		{"unwatched company: filter-only watches", note("000000064", ""), nil, nil},
		{"inactive watches are returned", note("000000046", ""), nil, []string{"wch_inactive"}},
		{"no identifiers on the notice", note("", ""), nil, nil},
		{"spaced identifier on the notice", note("000 000 037", ""), nil, []string{"wch_other"}},
	}
	var ix Index
	if err := ix.Replace(slices.Values(entries)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := slices.Sorted(slices.Values(append(slices.Clone(tt.want), filterOnly...)))
			if got := ix.Match(tt.n, tt.resolve); !slices.Equal(got, want) {
				t.Errorf("Match = %v, want %v", got, want)
			}
		})
	}
	t.Run("filters of filter-only watches apply", func(t *testing.T) {
		n := note("000000064", "")
		n.AppointmentType, n.NoticeType, n.Text = nil, "Appointment of Receiver", "A receiver was appointed."
		if got, want := ix.Match(n, nil), []string{"wch_q_miss"}; !slices.Equal(got, want) {
			t.Errorf("Match = %v, want %v", got, want)
		}
	})
	t.Run("deregistration included by default for watches", func(t *testing.T) {
		n := note("000000055", "")
		n.NoticePurpose, n.AppointmentType, n.NoticeType, n.Text = "Deregistration", nil, "Deregistration", "Deregistered."
		if got, want := ix.Match(n, nil), []string{"wch_dereg"}; !slices.Equal(got, want) {
			t.Errorf("Match = %v, want %v", got, want)
		}
	})
	t.Run("active flag", func(t *testing.T) {
		if a, ok := ix.Active("wch_inactive"); a || !ok {
			t.Errorf("Active(wch_inactive) = %v, %v", a, ok)
		}
		if !ix.SetActive("wch_inactive", true) {
			t.Fatal("SetActive did not find the watch")
		}
		if a, ok := ix.Active("wch_inactive"); !a || !ok {
			t.Errorf("after SetActive: %v, %v", a, ok)
		}
		if _, ok := ix.Active("wch_nope"); ok || ix.SetActive("wch_nope", true) {
			t.Error("an unknown watch was found")
		}
	})
}

func TestIndexAddRemove(t *testing.T) {
	var ix Index
	n19 := note("000000019", "")
	add := func(id string, ids ...string) {
		t.Helper()
		if err := ix.Add(Entry{WatchID: id, Identifiers: ids, Filter: notice.Filter{IncludeDeregistration: true}, Active: true}); err != nil {
			t.Fatal(err)
		}
	}
	if got := ix.Match(n19, nil); got != nil {
		t.Fatalf("empty index matched %v", got)
	}
	add("wch_b", "000000019", "000000028")
	add("wch_a", "000000019")
	add("wch_f") // filter-only
	tests := []struct {
		name string
		do   func()
		n    *notice.Notice
		want []string
	}{
		{"sorted ids", func() {}, n19, []string{"wch_a", "wch_b", "wch_f"}},
		{"remove", func() {
			if !ix.Remove("wch_a") {
				t.Error("Remove(wch_a) = false")
			}
		}, n19, []string{"wch_b", "wch_f"}},
		{"remove unknown", func() {
			if ix.Remove("wch_a") {
				t.Error("second Remove(wch_a) = true")
			}
		}, n19, []string{"wch_b", "wch_f"}},
		{"remove filter-only", func() { ix.Remove("wch_f") }, n19, []string{"wch_b"}},
		{"re-adding replaces identifiers", func() { add("wch_b", "000000037") }, n19, nil},
		{"replacement holds the new identifier", func() {}, note("000000037", ""), []string{"wch_b"}},
		{"removed id added again", func() { add("wch_a", "000000019") }, n19, []string{"wch_a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.do()
			if got := ix.Match(tt.n, nil); !slices.Equal(got, tt.want) {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
	if ix.Len() != 2 {
		t.Errorf("Len = %d, want 2", ix.Len())
	}
}

func TestIndexRejects(t *testing.T) {
	good := Entry{WatchID: "wch_ok", Identifiers: []string{"000000019"}}
	tests := []struct {
		name string
		e    Entry
	}{
		{"no watch id", Entry{Identifiers: []string{"000000019"}}},
		{"short identifier", Entry{WatchID: "wch_x", Identifiers: []string{"12345"}}},
		{"letters", Entry{WatchID: "wch_x", Identifiers: []string{"00000001A"}}},
		{"spaces not normalised", Entry{WatchID: "wch_x", Identifiers: []string{"000 000 019"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ix Index
			if err := ix.Add(good); err != nil {
				t.Fatal(err)
			}
			if err := ix.Add(tt.e); !errs.Is(err, errs.ServerError) {
				t.Errorf("Add = %v, want a server_error", err)
			}
			if err := ix.Replace(slices.Values([]Entry{tt.e})); !errs.Is(err, errs.ServerError) {
				t.Errorf("Replace = %v, want a server_error", err)
			}
			if got := ix.Match(note("000000019", ""), nil); !slices.Equal(got, []string{"wch_ok"}) {
				t.Errorf("index changed by a rejected entry: %v", got)
			}
		})
	}
	t.Run("duplicate id in Replace", func(t *testing.T) {
		var ix Index
		err := ix.Replace(slices.Values([]Entry{good, good}))
		if !errs.Is(err, errs.ServerError) || ix.Len() != 0 {
			t.Errorf("Replace = %v, Len %d", err, ix.Len())
		}
	})
}

func TestIndexCompaction(t *testing.T) {
	var ix Index
	for i := range 100 {
		ids := []string{fmt.Sprintf("%09d", i), fmt.Sprintf("%09d", 1000+i), fmt.Sprintf("%011d", i)}
		if err := ix.Add(Entry{WatchID: fmt.Sprintf("wch_%03d", i), Identifiers: ids, Filter: notice.Filter{IncludeDeregistration: true}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 90 {
		ix.Remove(fmt.Sprintf("wch_%03d", i))
	}
	postings := 0
	for _, b := range ix.buckets {
		postings += len(b)
	}
	if ix.live != 30 || postings > ix.live+ix.dead || ix.dead*4 > ix.live {
		t.Errorf("live %d dead %d postings %d: dead postings not swept", ix.live, ix.dead, postings)
	}
	slotsBefore := len(ix.slots)
	for i := range 50 {
		if err := ix.Add(Entry{WatchID: fmt.Sprintf("wch_new%d", i), Identifiers: []string{"000000005"}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(ix.slots) != slotsBefore {
		t.Errorf("slots grew from %d to %d: freed slots not reused", slotsBefore, len(ix.slots))
	}
	if got := ix.Match(note("000001095", ""), nil); !slices.Equal(got, []string{"wch_095"}) {
		t.Errorf("survivor lost: %v", got)
	}
	if got := ix.Match(note("000001005", ""), nil); got != nil {
		t.Errorf("removed watch matched: %v", got)
	}
	if got := ix.Match(note("000000005", ""), nil); len(got) != 50 {
		t.Errorf("reused slots matched %d watches, want 50", len(got))
	}
}

// TestIndexAgreesWithBruteForce checks the index against the matching rule
// applied to every watch, through random adds, removes and a Replace.
func TestIndexAgreesWithBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	acn := func() string { return fmt.Sprintf("%09d", rng.IntN(60)) }
	abnOf := func(a string) string { return "5" + a[:1] + a }
	reg := map[string]string{}
	for i := range 60 {
		a := fmt.Sprintf("%09d", i)
		if i%3 != 0 { // a third of the ABNs are unknown to the register
			reg[abnOf(a)] = a
		}
	}
	states := []string{"NSW", "vic", "QLD"}
	type model struct {
		ids    map[string]bool
		filter notice.Filter
	}
	models := map[string]model{}
	var ix Index
	addRandom := func(id string) Entry {
		e := Entry{WatchID: id, Filter: notice.Filter{IncludeDeregistration: rng.IntN(2) == 0}}
		if rng.IntN(3) == 0 {
			e.Filter.State = []string{states[rng.IntN(3)]}
		}
		m := model{ids: map[string]bool{}, filter: e.Filter}
		if rng.IntN(5) > 0 {
			for range 1 + rng.IntN(8) {
				a := acn()
				if rng.IntN(2) == 0 {
					e.Identifiers = append(e.Identifiers, a)
					m.ids[a] = true
				} else {
					b := abnOf(a)
					e.Identifiers = append(e.Identifiers, b)
					m.ids[b] = true
					if r, ok := reg[b]; ok {
						e.Identifiers = append(e.Identifiers, r)
						m.ids[r] = true
					}
				}
			}
		}
		models[id] = m
		return e
	}
	brute := func(n *notice.Notice) []string {
		var out []string
		for id, m := range models {
			hit := len(m.ids) == 0
			if n.ACN != nil && m.ids[*n.ACN] {
				hit = true
			}
			if n.ABN != nil && (m.ids[*n.ABN] || (reg[*n.ABN] != "" && m.ids[reg[*n.ABN]])) {
				hit = true
			}
			if hit && FilterMatches(m.filter, n, nil) {
				out = append(out, id)
			}
		}
		slices.Sort(out)
		return out
	}
	check := func(step int) {
		for range 40 {
			a := acn()
			n := note("", "")
			switch rng.IntN(3) {
			case 0:
				n.ACN = &a
			case 1:
				b := abnOf(a)
				n.ABN = &b
			default:
				b := abnOf(a)
				n.ACN, n.ABN = &a, &b
			}
			n.State = states[rng.IntN(3)]
			if rng.IntN(4) == 0 {
				n.NoticePurpose = "Deregistration"
			}
			if got, want := ix.Match(n, resolver(reg)), brute(n); !slices.Equal(got, want) {
				t.Fatalf("step %d, notice acn %v abn %v: index %v, brute force %v", step, n.ACN, n.ABN, got, want)
			}
		}
	}
	for step := range 300 {
		id := fmt.Sprintf("wch_%02d", rng.IntN(40))
		switch {
		case step == 150:
			var es []Entry
			clear(models)
			for i := range 30 {
				es = append(es, addRandom(fmt.Sprintf("wch_%02d", i)))
			}
			if err := ix.Replace(slices.Values(es)); err != nil {
				t.Fatal(err)
			}
		case rng.IntN(3) == 0:
			_, known := models[id]
			if ix.Remove(id) != known {
				t.Fatalf("Remove(%s) disagrees with the model", id)
			}
			delete(models, id)
		default:
			if err := ix.Add(addRandom(id)); err != nil {
				t.Fatal(err)
			}
		}
		if ix.Len() != len(models) {
			t.Fatalf("step %d: Len %d, model %d", step, ix.Len(), len(models))
		}
		check(step)
	}
}

func TestIndexConcurrent(t *testing.T) {
	var ix Index
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				id := fmt.Sprintf("wch_%d_%d", w, i%20)
				if i%3 == 2 {
					ix.Remove(id)
					continue
				}
				if err := ix.Add(Entry{WatchID: id, Identifiers: []string{fmt.Sprintf("%09d", i%7)}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			for i := range 200 {
				for _, id := range ix.Match(note(fmt.Sprintf("%09d", i%7), ""), nil) {
					if id == "" {
						t.Error("empty watch id matched")
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
