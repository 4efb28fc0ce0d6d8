package redisstore

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// TestPostings: values gain and lose seqs through one seq, several (a
// list, whose slot is reused once freed) and none, for 9- and 11-digit
// values; a value of another form is not kept (no identifier asked is one).
func TestPostings(t *testing.T) {
	var p postings
	steps := []struct {
		name  string
		do    func()
		v     string
		want  []int64
		lists int // lists in use
	}{
		{"one seq", func() { p.add("123456789", 5) }, "123456789", []int64{5}, 0},
		{"same again", func() { p.add("123456789", 5) }, "123456789", []int64{5}, 0},
		{"a second: a list", func() { p.add("123456789", 3) }, "123456789", []int64{3, 5}, 1},
		{"a third, sorted", func() { p.add("123456789", 4) }, "123456789", []int64{3, 4, 5}, 1},
		{"an 11-digit value is another key", func() { p.add("00123456789", 9) }, "00123456789", []int64{9}, 1},
		{"remove from the list", func() { p.remove("123456789", 4) }, "123456789", []int64{3, 5}, 1},
		{"down to one: the list is freed", func() { p.remove("123456789", 3) }, "123456789", []int64{5}, 0},
		{"a list again reuses the slot", func() { p.add("123456789", 8) }, "123456789", []int64{5, 8}, 1},
		{"remove a seq it lacks", func() { p.remove("123456789", 7) }, "123456789", []int64{5, 8}, 1},
		{"remove all", func() { p.remove("123456789", 5); p.remove("123456789", 8) }, "123456789", nil, 0},
		{"a value of another form is not kept", func() { p.add("ABC", 2); p.add("12345678X", 1) }, "ABC", nil, 0},
		{"nor removed", func() { p.remove("ABC", 2); p.remove("12345678X", 1) }, "12345678X", nil, 0},
		{"the other key kept", func() {}, "00123456789", []int64{9}, 0},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.do()
			if got := p.get(s.v, nil); !reflect.DeepEqual(got, s.want) {
				t.Errorf("get(%s) = %v, want %v", s.v, got, s.want)
			}
			if inUse := len(p.lists) - len(p.free); inUse != s.lists {
				t.Errorf("%d lists in use, want %d", inUse, s.lists)
			}
		})
	}
	if len(p.ids) != 1 {
		t.Errorf("emptied values kept: ids %v", p.ids)
	}
}

// TestPostingsSeen: postings.seen, the bits that let get skip the map,
// never hides a value with seqs: through the rebuilds as it grows from
// empty, after values are removed and added again, and for values never
// added (which get none, bit set or not).
func TestPostingsSeen(t *testing.T) {
	var p postings
	value := func(i int) string { return fmt.Sprintf("%09d", i*7919) }
	check := func(t *testing.T, have func(i int) bool) {
		t.Helper()
		for i := range 40000 {
			got := p.get(value(i), nil)
			if want := have(i); want != (len(got) == 1 && got[0] == int64(i+1)) {
				t.Fatalf("get(%s) = %v, want seq %d: %v", value(i), got, i+1, want)
			}
		}
	}
	steps := []struct {
		name string
		do   func()
		have func(i int) bool
	}{
		{"empty", func() {}, func(int) bool { return false }},
		{"grown through rebuilds", func() {
			for i := range 20000 {
				p.add(value(i), int64(i+1))
			}
		}, func(i int) bool { return i < 20000 }},
		{"half removed", func() {
			for i := 0; i < 20000; i += 2 {
				p.remove(value(i), int64(i+1))
			}
		}, func(i int) bool { return i < 20000 && i%2 == 1 }},
		{"added again, and more", func() {
			for i := 0; i < 30000; i += 2 {
				p.add(value(i), int64(i+1))
			}
		}, func(i int) bool { return i < 20000 || (i < 30000 && i%2 == 0) }},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.do()
			check(t, s.have)
			if s.name != "empty" && len(p.seen)*64 < 2*len(p.ids) {
				t.Errorf("%d bits for %d values, want 2 or more a value", len(p.seen)*64, len(p.ids))
			}
		})
	}
}

// TestRegCopy: a register built from hash entries (repeated, in any
// order) answers as the hashes would: ACNs with leading zeros, an ABN
// shared by two ACNs, a company with two ABNs, an ACN only an ABN names.
func TestRegCopy(t *testing.T) {
	var b regBuilder
	for range 2 { // HSCAN may return an entry twice
		b.entry("000000019", true)
		b.entry("123456780", true)
		b.entry("223456789", true)
		b.abn("51000000019", "000000019")
		b.abn("51123456780", "223456789,123456780")
		b.abn("62123456780", "123456780")
		b.abn("77999999999", "999999999")
	}
	r := b.build("7")
	cases := []struct {
		acn, name string
		abns      []string
	}{
		{"000000019", "ZERO PTY LTD", []string{"51000000019"}},
		{"123456780", "ONE PTY LTD", []string{"51123456780", "62123456780"}},
		{"223456789", "TWO PTY LTD", []string{"51123456780"}},
		{"999999999", "", []string{"77999999999"}},
	}
	for _, c := range cases {
		i, ok := r.company(c.acn)
		if !ok {
			t.Fatalf("%s not in the copy", c.acn)
		}
		if r.isNamed(i) != (c.name != "") || r.acn(i) != c.acn {
			t.Errorf("%s: named %v acn %q", c.acn, r.isNamed(i), r.acn(i))
		}
		// A name is read once and then held, per company (fillNames);
		// an empty one is read each time.
		reads := 0
		read := func(missing []int) ([]string, error) {
			reads++
			return slices.Repeat([]string{c.name}, len(missing)), nil
		}
		for range 2 {
			got := make([]string, 2)
			if err := r.names([]int32{i, i}, got, read); err != nil || got[0] != c.name || got[1] != c.name {
				t.Errorf("%s: names %q (%v), want %q", c.acn, got, err, c.name)
			}
		}
		if want := map[bool]int{true: 1, false: 2}[c.name != ""]; reads != want {
			t.Errorf("%s: name read %d times, want %d", c.acn, reads, want)
		}
		if got := r.abnsOf(i); !sameSet(got, c.abns) {
			t.Errorf("%s: ABNs %v, want %v", c.acn, got, c.abns)
		}
	}
	for abn, want := range map[string][]string{
		"51000000019": {"000000019"},
		"51123456780": {"123456780", "223456789"},
		"62123456780": {"123456780"},
		"77999999999": {"999999999"},
		"51223456789": nil, // not in the register, though formed from an ACN
	} {
		if got := r.appendACNsOf(nil, abn); !sameSet(got, want) {
			t.Errorf("ACNs of %s: %v, want %v", abn, got, want)
		}
	}
	if _, ok := r.company("323456789"); ok {
		t.Error("an ACN outside the register was found")
	}
}

// TestRegCopyRefusesOtherACNs: a generation holding an ACN not of nine
// digits (ingest refuses them; the Redis layout keeps them in odd and
// abn) is not held by the copy, so the screen reads it from Redis.
func TestRegCopyRefusesOtherACNs(t *testing.T) {
	for name, add := range map[string]func(b *regBuilder){
		"odd":         func(b *regBuilder) { b.entry("12345", true) },
		"abn":         func(b *regBuilder) { b.abn("77000000019", "000000019,0012345") },
		"nine digits": func(b *regBuilder) { b.entry("123456789", true); b.abn("51123456789", "123456789") },
	} {
		t.Run(name, func(t *testing.T) {
			var b regBuilder
			add(&b)
			if r := b.build("3"); (r == nil) != (name != "nine digits") {
				t.Errorf("build gave a copy: %v", r != nil)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}
