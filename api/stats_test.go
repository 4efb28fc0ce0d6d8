package api

import (
	"bytes"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
)

// TestStats covers GET /v1/stats: default group_by, month buckets with
// zero months, other groupings by count, filters.
func TestStats(t *testing.T) {
	f := newFixture(t)
	b := func(pairs ...any) []notice.Bucket {
		out := []notice.Bucket{}
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, notice.Bucket{Key: pairs[i].(string), Count: int64(pairs[i+1].(int))})
		}
		return out
	}
	tests := []struct {
		name  string
		query string
		want  notice.Stats
	}{
		// Deregistration (N2, March) is excluded by default: March is 0
		// but present between the first and last month with data.
		{"default group_by month", "", notice.Stats{GroupBy: "month", Total: 5,
			Data: b("2026-01", 2, "2026-02", 2, "2026-03", 0, "2026-04", 1)}},
		{"include_deregistration=true", "include_deregistration=true", notice.Stats{GroupBy: "month", Total: 6,
			Data: b("2026-01", 2, "2026-02", 2, "2026-03", 1, "2026-04", 1)}},
		{"every month between from and to", "from=2025-11-15&to=2026-06-01", notice.Stats{GroupBy: "month", Total: 5,
			Data: b("2025-11", 0, "2025-12", 0, "2026-01", 2, "2026-02", 2, "2026-03", 0, "2026-04", 1, "2026-05", 0, "2026-06", 0)}},
		{"from only", "from=2026-02-01", notice.Stats{GroupBy: "month", Total: 3,
			Data: b("2026-02", 2, "2026-03", 0, "2026-04", 1)}},
		{"months use the Sydney date", "from=2026-02-01&to=2026-02-28", notice.Stats{GroupBy: "month", Total: 2,
			Data: b("2026-02", 2)}},
		{"no data, both bounds: zero months", "state=TAS&from=2026-01-01&to=2026-02-28", notice.Stats{GroupBy: "month", Total: 0,
			Data: b("2026-01", 0, "2026-02", 0)}},
		{"no data, open bounds: empty", "state=TAS", notice.Stats{GroupBy: "month", Total: 0, Data: b()}},
		{"by state: count desc then key", "group_by=state", notice.Stats{GroupBy: "state", Total: 5,
			Data: b("NSW", 3, "QLD", 1, "VIC", 1)}},
		{"by notice_code", "group_by=notice_code&include_deregistration=true", notice.Stats{GroupBy: "notice_code", Total: 6,
			Data: b("LQ", 2, "CVL", 1, "DR", 1, "DV", 1, "MT", 1)}},
		{"by notice_purpose with filter", "group_by=notice_purpose&state=NSW", notice.Stats{GroupBy: "notice_purpose", Total: 3,
			Data: b("Appointment", 2, "Dividend", 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.do(t, "GET", "/v1/stats?"+tt.query, f.read)
			if res.status != 200 {
				t.Fatalf("status %d; body %s", res.status, res.body)
			}
			want, _ := marshal(tt.want)
			if !bytes.Equal(bytes.TrimSpace(res.body), bytes.TrimSpace(want)) {
				t.Errorf("body\n%s\nwant\n%s", res.body, want)
			}
		})
	}
}
