package api

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
)

// TestCompany covers GET /v1/companies/{acn_or_abn}.
func TestCompany(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name     string
		id       string
		acn      string
		sources  []string // newest first
		register bool
	}{
		// N2 is a deregistration notice naming only the ABN: the company
		// view includes deregistration and resolves the ABN through the
		// register.
		{"by ACN, deregistration included", "123456780", "123456780", []string{"N2", "N1"}, true},
		{"by ABN", "11123456780", "123456780", []string{"N2", "N1"}, true},
		{"with encoded spaces", "123%20456%20780", "123456780", []string{"N2", "N1"}, true},
		{"notices only, not in the register", "111111114", "111111114", []string{"N3"}, false},
		{"register only: 200 with notice_count 0", "333333332", "333333332", []string{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var co notice.Company
			f.get(t, "/v1/companies/"+tt.id, &co)
			var got []string
			for _, n := range co.Notices {
				got = append(got, n.SourceID)
			}
			if got == nil {
				got = []string{}
			}
			if !slices.Equal(got, tt.sources) || co.NoticeCount != len(tt.sources) {
				t.Errorf("notices %v (notice_count %d), want %v", got, co.NoticeCount, tt.sources)
			}
			if co.ACN == nil || *co.ACN != tt.acn {
				t.Errorf("acn %v, want %s", co.ACN, tt.acn)
			}
			if (co.Register != nil) != tt.register {
				t.Errorf("register %+v, want present=%v", co.Register, tt.register)
			}
		})
	}
	t.Run("json shape", func(t *testing.T) {
		res := f.do(t, "GET", "/v1/companies/333333332", f.read)
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(res.body, &raw); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"acn", "abn", "name", "register", "notice_count", "notices"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("missing %s in %s", k, res.body)
			}
		}
		if string(raw["notices"]) != "[]" || string(raw["notice_count"]) != "0" {
			t.Errorf("notices %s notice_count %s, want [] and 0", raw["notices"], raw["notice_count"])
		}
		var reg map[string]json.RawMessage
		if err := json.Unmarshal(raw["register"], &reg); err != nil {
			t.Fatal(err)
		}
		if string(reg["former_names"]) != "[]" {
			t.Errorf("former_names %s, want []", reg["former_names"])
		}
	})
	t.Run("register data", func(t *testing.T) {
		var co notice.Company
		f.get(t, "/v1/companies/123456780", &co)
		if co.Name == nil || *co.Name != "Alpha Pty Ltd" {
			t.Errorf("name %v, want Alpha Pty Ltd", co.Name)
		}
		if co.ABN == nil || *co.ABN != "11123456780" {
			t.Errorf("abn %v, want 11123456780", co.ABN)
		}
		if co.Register == nil || !slices.Equal(co.Register.FormerNames, []string{"Alpha Holdings Pty Ltd"}) {
			t.Errorf("register %+v, want former name Alpha Holdings Pty Ltd", co.Register)
		}
	})
}
