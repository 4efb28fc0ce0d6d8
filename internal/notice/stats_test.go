package notice

import (
	"reflect"
	"testing"
)

func TestFinishStats(t *testing.T) {
	b := func(kv ...any) []Bucket {
		out := []Bucket{}
		for i := 0; i < len(kv); i += 2 {
			out = append(out, Bucket{Key: kv[i].(string), Count: int64(kv[i+1].(int))})
		}
		return out
	}
	for _, c := range []struct {
		name     string
		groupBy  string
		in       []Bucket
		from, to string
		want     []Bucket
	}{
		{"months filled between from and to", "month", b("2026-03", 4, "2026-01", 2), "2025-12-15", "2026-04-01",
			b("2025-12", 0, "2026-01", 2, "2026-02", 0, "2026-03", 4, "2026-04", 0)},
		{"open bounds fill between data", "month", b("2026-03", 4, "2025-11", 2), "", "",
			b("2025-11", 2, "2025-12", 0, "2026-01", 0, "2026-02", 0, "2026-03", 4)},
		{"open to", "month", b("2026-02", 1), "2026-01-31", "", b("2026-01", 0, "2026-02", 1)},
		{"no data with bounds", "month", nil, "2026-01-01", "2026-02-28", b("2026-01", 0, "2026-02", 0)},
		{"no data open", "month", nil, "", "", b()},
		{"over a century is filled only around the data", "month", b("2026-02", 1, "2026-04", 1), "0001-01-01", "9999-12-31",
			b("2026-02", 1, "2026-03", 0, "2026-04", 1)},
		{"other groupings by count desc then key", "state", b("VIC", 2, "NSW", 5, "ACT", 2, "NSW", 1), "", "",
			b("NSW", 6, "ACT", 2, "VIC", 2)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Stats{GroupBy: c.groupBy, Data: c.in}
			FinishStats(&s, c.from, c.to)
			if !reflect.DeepEqual(s.Data, c.want) {
				t.Errorf("got %v, want %v", s.Data, c.want)
			}
		})
	}
}

// TestFillsRange: the range a backend asks its engine to zero-fill is
// exactly the range FinishStats fills, so the backends' series agree.
func TestFillsRange(t *testing.T) {
	for _, c := range []struct {
		name, from, to string
		want           bool
	}{
		{"one month", "2026-01-01", "2026-01-31", true},
		{"a century less a month", "1926-02-01", "2026-01-31", true}, // 1199 months apart
		{"a century", "1926-01-01", "2026-01-31", false},             // 1200 months apart
		{"just over a century by days, not months", "1925-01-01", "2026-01-31", false},
		{"reversed", "2026-02-01", "2026-01-01", false},
		{"open from", "", "2026-01-01", false},
		{"open to", "2026-01-01", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := FillsRange(c.from, c.to); got != c.want {
				t.Fatalf("FillsRange(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
			}
			// FinishStats fills the whole range exactly when FillsRange says so.
			s := Stats{GroupBy: "month", Data: []Bucket{{Key: "2020-06", Count: 1}}}
			FinishStats(&s, c.from, c.to)
			whole := c.from != "" && c.to != "" && len(s.Data) == month(c.to)-month(c.from)+1
			if whole != c.want && c.from <= "2020-06-01" && (c.to == "" || c.to >= "2020-06-30") {
				t.Fatalf("FinishStats filled %d months of %s..%s; FillsRange says %v", len(s.Data), c.from, c.to, c.want)
			}
		})
	}
}
