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
