package api

import (
	"net/url"
	"strings"
	"testing"
)

// TestValidation: every 400 the read routes can give, with the parameter
// named in the message.
func TestValidation(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name    string
		target  string
		code    string
		mention string // the message must contain this
	}{
		{"from not a date", "/v1/notices?from=2026-1-5", "invalid_date", "from"},
		{"to not a date", "/v1/notices?to=20260105", "invalid_date", "to"},
		{"to impossible date", "/v1/notices?to=2026-02-30", "invalid_date", "2026-02-30"},
		{"from empty", "/v1/notices?from=", "invalid_date", "from"},
		{"from with time", "/v1/notices?from=2026-01-05T00:00:00Z", "invalid_date", "from"},
		{"from after to", "/v1/notices?from=2026-03-01&to=2026-02-01", "invalid_date", "after"},
		{"unbalanced quote", "/v1/notices?q=" + url.QueryEscape(`"liquidator`), "invalid_query", ""},
		{"unbalanced parenthesis", "/v1/notices?q=" + url.QueryEscape(`(a OR b`), "invalid_query", ""},
		{"bare star", "/v1/notices?q=" + url.QueryEscape(`*`), "invalid_query", ""},
		{"q too long", "/v1/notices?q=" + strings.Repeat("a", 501), "invalid_query", ""},
		{"acn too short", "/v1/notices?acn=12345", "invalid_acn", "12345"},
		{"acn letters", "/v1/notices?acn=12345678X", "invalid_acn", "12345678X"},
		{"acn empty", "/v1/notices?acn=", "invalid_acn", "acn"},
		{"acn twice", "/v1/notices?acn=123456780&acn=111111114", "invalid_parameter", "acn"},
		{"q identifier and another acn", "/v1/notices?q=123456780&acn=111111114", "invalid_parameter", "send one"},
		{"include_deregistration yes", "/v1/notices?include_deregistration=yes", "invalid_parameter", "include_deregistration"},
		{"include_deregistration 1", "/v1/notices?include_deregistration=1", "invalid_parameter", "include_deregistration"},
		{"sort unknown", "/v1/notices?sort=newest", "invalid_parameter", "sort"},
		{"limit zero", "/v1/notices?limit=0", "invalid_parameter", "limit"},
		{"limit over 100", "/v1/notices?limit=101", "invalid_parameter", "limit"},
		{"limit not integer", "/v1/notices?limit=ten", "invalid_parameter", "limit"},
		{"limit fraction", "/v1/notices?limit=2.5", "invalid_parameter", "limit"},
		{"limit huge", "/v1/notices?limit=99999999999999999999999", "invalid_parameter", "limit"},
		{"limit twice", "/v1/notices?limit=10&limit=20", "invalid_parameter", "limit"},
		{"page zero", "/v1/notices?page=0", "invalid_parameter", "page"},
		{"page negative", "/v1/notices?page=-1", "invalid_parameter", "page"},
		{"page not integer", "/v1/notices?page=x", "invalid_parameter", "page"},
		{"past depth 10000", "/v1/notices?page=501", "invalid_parameter", "narrow"},
		{"past depth with limit", "/v1/notices?page=101&limit=100", "invalid_parameter", "since"},
		{"filters from", "/v1/filters?from=yesterday", "invalid_date", "from"},
		{"filters q", "/v1/filters?q=" + url.QueryEscape(`(`), "invalid_query", ""},
		{"filters acn", "/v1/filters?acn=1", "invalid_acn", ""},
		{"filters include_deregistration", "/v1/filters?include_deregistration=TRUE", "invalid_parameter", "include_deregistration"},
		{"stats group_by", "/v1/stats?group_by=year", "invalid_group_by", "year"},
		{"stats group_by empty", "/v1/stats?group_by=", "invalid_group_by", ""},
		{"stats to", "/v1/stats?to=2026/01/01", "invalid_date", "to"},
		{"stats from after to", "/v1/stats?from=2026-02-02&to=2026-02-01", "invalid_date", "after"},
		{"stats q", "/v1/stats?q=" + url.QueryEscape(`a OR`), "invalid_query", ""},
		{"stats include_deregistration", "/v1/stats?include_deregistration=no", "invalid_parameter", "include_deregistration"},
		{"company letters", "/v1/companies/ABCDEFGHI", "invalid_acn", "ABCDEFGHI"},
		{"company 10 digits", "/v1/companies/1234567890", "invalid_acn", "1234567890"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.do(t, "GET", tt.target, f.read)
			wantError(t, res, 400, tt.code)
			if msg := errorMessage(t, res); !strings.Contains(msg, tt.mention) {
				t.Errorf("message %q does not mention %q", msg, tt.mention)
			}
		})
	}
}

// TestAccepted: values at the edges of what is allowed are accepted.
func TestAccepted(t *testing.T) {
	f := newFixture(t)
	for _, target := range []string{
		"/v1/notices?limit=1",
		"/v1/notices?limit=100",
		"/v1/notices?page=100&limit=100",
		"/v1/notices?page=10000&limit=1",
		"/v1/notices?from=2026-02-01&to=2026-02-01",
		"/v1/notices?include_deregistration=false",
		"/v1/notices?q=",
		"/v1/notices?q=%20%20",
		"/v1/notices?sort=published_asc",
		"/v1/notices?unknown_parameter=whatever",
		"/v1/notices?acn=123+456+780",
		"/v1/notices?acn=11123456780",
		"/v1/notices?state=",
		"/v1/stats?group_by=notice_code",
		"/v1/filters?limit=5000",
	} {
		t.Run(target, func(t *testing.T) {
			if res := f.do(t, "GET", target, f.read); res.status != 200 {
				t.Errorf("status %d, want 200; body %s", res.status, res.body)
			}
		})
	}
}
