package api

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
)

// stdMarshal is marshal as it was with encoding/json: the bytes marshal
// must keep writing.
func stdMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// marshalCases are values of every shape the API answers with: notices
// (the fixtures), a company, counts, stats, an error, maps (sorted keys),
// and strings that need escaping (quotes, control characters, HTML
// characters kept as sent, U+2028/U+2029, invalid UTF-8).
func marshalCases(t *testing.T) map[string]any {
	ns := loadNotices(t)
	odd := "a \"quoted\" <b>&amp;</b> tab\there\nnew\u2028line\u2029 \x01 \xff\xfe invalid é 💡 \\"
	name := odd
	withOdd := ns[0]
	withOdd.Text, withOdd.CompanyName = odd, odd
	return map[string]any{
		"page":    searchResponse{Data: presentNotices(ns), Page: 1, Limit: 20, Total: int64(len(ns)), HasMore: true},
		"odd":     withOdd,
		"company": notice.Company{Name: &name, Notices: ns[:3]},
		"filters": notice.FilterCounts{Total: 42, State: []notice.ValueCount{{Value: "NSW", Count: 40}, {Value: odd, Count: 2}}},
		"stats":   notice.Stats{GroupBy: "month", Total: 3, Data: []notice.Bucket{{Key: "2025-01", Count: 3}}},
		"error":   errorBody{Error: errorDetail{Code: "invalid_parameter", Message: odd}},
		"map":     map[string]any{"z": 1, "a": []any{1.5, 1e21, 0.000001, math.Copysign(0, -1), "x"}, "m": map[string]int{"b": 2, "a": 1}, "nil": nil, odd: true},
		"links":   map[string]string{"self": "/v1/notices?q=a&b=<c>", "next": ""},
	}
}

// TestMarshalAsEncodingJSON: the API's encoder (go-json) writes byte for
// byte what encoding/json wrote, for every shape of answer.
func TestMarshalAsEncodingJSON(t *testing.T) {
	for name, v := range marshalCases(t) {
		t.Run(name, func(t *testing.T) {
			got, err := marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			want, err := stdMarshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("marshal differs from encoding/json:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// BenchmarkMarshal times the API's encoder beside encoding/json on a
// page of 20 notices and on a /v1/filters answer.
func BenchmarkMarshal(b *testing.B) {
	cases := marshalCases(&testing.T{})
	for _, name := range []string{"page", "filters"} {
		for _, enc := range []struct {
			name string
			f    func(any) ([]byte, error)
		}{{"go-json", marshal}, {"encoding-json", stdMarshal}} {
			b.Run(name+"/"+enc.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := enc.f(cases[name]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
