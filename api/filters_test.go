package api

import (
	"bytes"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
)

// TestFilters covers GET /v1/filters.
func TestFilters(t *testing.T) {
	f := newFixture(t)
	vc := func(pairs ...any) []notice.ValueCount {
		out := []notice.ValueCount{}
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, notice.ValueCount{Value: pairs[i].(string), Count: int64(pairs[i+1].(int))})
		}
		return out
	}
	tests := []struct {
		name  string
		query string
		want  notice.FilterCounts
	}{
		{"defaults exclude deregistration", "", notice.FilterCounts{
			Total:           5,
			AppointmentType: vc("Court Liquidation", 2, "Creditors' Voluntary Liquidation", 1),
			NoticePurpose:   vc("Appointment", 3, "Dividend", 1, "Meeting", 1),
			NoticeCode:      vc("LQ", 2, "CVL", 1, "DV", 1, "MT", 1),
			State:           vc("NSW", 3, "QLD", 1, "VIC", 1),
			Status:          vc("In Liquidation", 5),
		}},
		{"include_deregistration=true", "include_deregistration=true", notice.FilterCounts{
			Total:           6,
			AppointmentType: vc("Court Liquidation", 2, "Creditors' Voluntary Liquidation", 1),
			NoticePurpose:   vc("Appointment", 3, "Deregistration", 1, "Dividend", 1, "Meeting", 1),
			NoticeCode:      vc("LQ", 2, "CVL", 1, "DR", 1, "DV", 1, "MT", 1),
			State:           vc("NSW", 4, "QLD", 1, "VIC", 1),
			Status:          vc("In Liquidation", 5, "Registered", 1),
		}},
		{"counts respect filters", "state=NSW&from=2026-02-01", notice.FilterCounts{
			Total:           2,
			AppointmentType: vc("Court Liquidation", 1),
			NoticePurpose:   vc("Appointment", 1, "Dividend", 1),
			NoticeCode:      vc("DV", 1, "LQ", 1),
			State:           vc("NSW", 2),
			Status:          vc("In Liquidation", 2),
		}},
		{"counts respect q", "q=citizen", notice.FilterCounts{
			Total:           2,
			AppointmentType: vc("Court Liquidation", 1),
			NoticePurpose:   vc("Appointment", 1, "Dividend", 1),
			NoticeCode:      vc("DV", 1, "LQ", 1),
			State:           vc("NSW", 2),
			Status:          vc("In Liquidation", 2),
		}},
		{"nothing matches: empty lists", "state=TAS", notice.FilterCounts{
			AppointmentType: vc(), NoticePurpose: vc(), NoticeCode: vc(), State: vc(), Status: vc(),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.do(t, "GET", "/v1/filters?"+tt.query, f.read)
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
