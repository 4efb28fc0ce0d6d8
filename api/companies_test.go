package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
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

// TestFindCompanies covers GET /v1/companies?name=: the exact envelope,
// ranking over current and former names, paging, and every 400.
func TestFindCompanies(t *testing.T) {
	f := newFixture(t)
	alpha := `{"acn":"123456780","abn":"11123456780","name":"Alpha Pty Ltd","matched_name":"Alpha Pty Ltd","status":"REGD"}`
	alphaFormer := `{"acn":"123456780","abn":"11123456780","name":"Alpha Pty Ltd","matched_name":"Alpha Holdings Pty Ltd","status":"REGD"}`
	delta := `{"acn":"333333332","abn":"88333333332","name":"Delta Pty Ltd","matched_name":"Delta Pty Ltd","status":"REGD"}`
	for _, c := range []struct{ query, want string }{
		{"name=alpha", `{"data":[` + alpha + `],"page":1,"limit":20,"total":1,"has_more":false}`},
		{"name=" + url.QueryEscape("ALPHA hold"), `{"data":[` + alphaFormer + `],"page":1,"limit":20,"total":1,"has_more":false}`},
		{"name=" + url.QueryEscape("pty ltd"), `{"data":[` + alpha + `,` + delta + `],"page":1,"limit":20,"total":2,"has_more":false}`},
		{"name=pty&limit=1", `{"data":[` + alpha + `],"page":1,"limit":1,"total":2,"has_more":true}`},
		{"name=pty&limit=1&page=2", `{"data":[` + delta + `],"page":2,"limit":1,"total":2,"has_more":false}`},
		{"name=gamma", `{"data":[],"page":1,"limit":20,"total":0,"has_more":false}`},
	} {
		t.Run(c.query, func(t *testing.T) {
			res := f.do(t, http.MethodGet, "/v1/companies?"+c.query, f.read)
			if got := string(bytes.TrimSpace(res.body)); res.status != http.StatusOK || got != c.want {
				t.Errorf("HTTP %d %s\nwant %s", res.status, got, c.want)
			}
		})
	}
	for _, c := range []struct{ name, query, mention string }{
		{"no name", "", "name is required"},
		{"blank name", "name=%20%20", "name is required"},
		{"punctuation only", "name=" + url.QueryEscape("&-!"), "no letter or digit"},
		{"too long", "name=" + strings.Repeat("a", MaxNameLength+1), "at most 200"},
		{"twice", "name=a&name=b", "given 2 times"},
		{"limit", "name=a&limit=101", "limit"},
		{"page", "name=a&page=0", "page"},
		{"depth", "name=a&page=101&limit=100", "give more of the name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := f.do(t, http.MethodGet, "/v1/companies?"+c.query, f.read)
			wantError(t, res, http.StatusBadRequest, "invalid_parameter")
			if msg := errorMessage(t, res); !strings.Contains(msg, c.mention) {
				t.Errorf("message %q does not mention %q", msg, c.mention)
			}
		})
	}
	t.Run("needs a key", func(t *testing.T) {
		wantError(t, f.do(t, http.MethodGet, "/v1/companies?name=alpha", ""), http.StatusUnauthorized, "unauthorised")
	})
}
