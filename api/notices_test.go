package api

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
)

// searchResult mirrors the search envelope.
type searchResult struct {
	Data    []notice.Notice `json:"data"`
	Page    int             `json:"page"`
	Limit   int             `json:"limit"`
	Total   int64           `json:"total"`
	HasMore bool            `json:"has_more"`
}

func (r searchResult) sources() []string {
	out := []string{}
	for _, n := range r.Data {
		out = append(out, n.SourceID)
	}
	return out
}

// TestSearch covers GET /v1/notices: defaults, filters, dates, sorting,
// paging and exact totals over testdata/notices.json.
func TestSearch(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name    string
		query   string
		sources []string // in order
		total   int64
		page    int
		limit   int
		hasMore bool
	}{
		{"defaults: newest first, deregistration excluded", "", []string{"N4", "N5", "N1", "N6", "N3"}, 5, 1, 20, false},
		{"include_deregistration=true", "include_deregistration=true", []string{"N4", "N2", "N5", "N1", "N6", "N3"}, 6, 1, 20, false},
		{"include_deregistration=false", "include_deregistration=false", []string{"N4", "N5", "N1", "N6", "N3"}, 5, 1, 20, false},
		{"published_asc", "sort=published_asc", []string{"N3", "N6", "N1", "N5", "N4"}, 5, 1, 20, false},
		{"relevance without q is newest first", "sort=relevance", []string{"N4", "N5", "N1", "N6", "N3"}, 5, 1, 20, false},
		{"state case-insensitive", "state=nsw", []string{"N5", "N1", "N6"}, 3, 1, 20, false},
		{"comma-separated values", "state=NSW,VIC", []string{"N5", "N1", "N6", "N3"}, 4, 1, 20, false},
		{"comma-separated with spaces and empties", "state=" + url.QueryEscape(" NSW , ,VIC,"), []string{"N5", "N1", "N6", "N3"}, 4, 1, 20, false},
		{"repeated values", "state=NSW&state=VIC", []string{"N5", "N1", "N6", "N3"}, 4, 1, 20, false},
		{"appointment_type", "appointment_type=" + url.QueryEscape("court liquidation"), []string{"N1", "N6"}, 2, 1, 20, false},
		{"notice_purpose", "notice_purpose=Meeting,Dividend", []string{"N5", "N3"}, 2, 1, 20, false},
		{"notice_code", "notice_code=cvl", []string{"N4"}, 1, 1, 20, false},
		{"status", "status=Registered&include_deregistration=true", []string{"N2"}, 1, 1, 20, false},
		{"notice_purpose=Deregistration alone still excludes them (API.md default)", "notice_purpose=deregistration", []string{}, 0, 1, 20, false},
		{"notice_purpose=Deregistration with include_deregistration=true", "notice_purpose=deregistration&include_deregistration=true", []string{"N2"}, 1, 1, 20, false},
		{"explicit include_deregistration=false wins", "notice_purpose=Deregistration&include_deregistration=false", []string{}, 0, 1, 20, false},
		{"filters combine", "state=NSW&appointment_type=" + url.QueryEscape("Court Liquidation"), []string{"N1", "N6"}, 2, 1, 20, false},
		{"unknown value matches nothing", "state=TAS", []string{}, 0, 1, 20, false},
		// N1 was published 2026-01-31T14:30:00Z: 2026-02-01 in Sydney.
		{"from/to inclusive on the Sydney date", "from=2026-02-01&to=2026-02-01", []string{"N1"}, 1, 1, 20, false},
		{"to excludes the next Sydney day", "to=2026-01-31", []string{"N6", "N3"}, 2, 1, 20, false},
		{"from only", "from=2026-02-02", []string{"N4", "N5"}, 2, 1, 20, false},
		{"acn filter", "acn=123456780&include_deregistration=true", []string{"N2", "N1"}, 2, 1, 20, false},
		{"acn filter by ABN", "acn=11123456780&include_deregistration=true", []string{"N2", "N1"}, 2, 1, 20, false},
		{"acn filter with spaces", "acn=" + url.QueryEscape("123 456 780"), []string{"N1"}, 1, 1, 20, false},
		{"page 1 of 3", "limit=2", []string{"N4", "N5"}, 5, 1, 2, true},
		{"page 2 of 3", "limit=2&page=2", []string{"N1", "N6"}, 5, 2, 2, true},
		{"last page", "limit=2&page=3", []string{"N3"}, 5, 3, 2, false},
		{"past the end", "limit=2&page=4", []string{}, 5, 4, 2, false},
		{"exactly one full page", "limit=5", []string{"N4", "N5", "N1", "N6", "N3"}, 5, 1, 5, false},
		{"q", "q=liquidator&sort=published_desc", []string{"N4", "N1", "N6"}, 3, 1, 20, false},
		{"q searches practitioners", "q=citizen&sort=published_asc", []string{"N1", "N5"}, 2, 1, 20, false},
		{"q with filters", "q=liquidator&state=QLD", []string{"N4"}, 1, 1, 20, false},
		{"q of an ACN is the company's notices", "q=123456780&include_deregistration=true", []string{"N2", "N1"}, 2, 1, 20, false},
		{"q of an ACN with spaces", "q=" + url.QueryEscape(" 123 456 780 "), []string{"N1"}, 1, 1, 20, false},
		{"q of an ABN resolves through the register", "q=11123456780&include_deregistration=true", []string{"N2", "N1"}, 2, 1, 20, false},
		{"q of an identifier and the same acn", "q=123456780&acn=123456780", []string{"N1"}, 1, 1, 20, false},
		{"q of an identifier with filters", "q=123456780&state=VIC", []string{}, 0, 1, 20, false},
		{"q of a quoted identifier searches words", "q=" + url.QueryEscape(`"123456780"`), []string{}, 0, 1, 20, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r searchResult
			f.get(t, "/v1/notices?"+tt.query, &r)
			if got := r.sources(); !slices.Equal(got, tt.sources) {
				t.Errorf("notices %v, want %v", got, tt.sources)
			}
			if r.Total != tt.total || r.Page != tt.page || r.Limit != tt.limit || r.HasMore != tt.hasMore {
				t.Errorf("total %d page %d limit %d has_more %v, want %d %d %d %v",
					r.Total, r.Page, r.Limit, r.HasMore, tt.total, tt.page, tt.limit, tt.hasMore)
			}
		})
	}

	t.Run("q defaults to relevance", func(t *testing.T) {
		var r searchResult
		f.get(t, "/v1/notices?q=liquidator", &r)
		got := slices.Sorted(slices.Values(r.sources()))
		if !slices.Equal(got, []string{"N1", "N4", "N6"}) || r.Total != 3 {
			t.Errorf("notices %v (total %d), want N1, N4, N6", got, r.Total)
		}
	})
}

// TestSearchEnvelope pins the exact JSON of the envelope: key order,
// data [] never null.
func TestSearchEnvelope(t *testing.T) {
	f := newFixture(t)
	res := f.do(t, "GET", "/v1/notices?state=TAS", f.read)
	want := `{"data":[],"page":1,"limit":20,"total":0,"has_more":false}`
	if got := string(bytes.TrimSpace(res.body)); got != want {
		t.Errorf("body %s, want %s", got, want)
	}
	wantJSONType(t, res)
}

// TestNotice covers GET /v1/notices/{id} and the notice object.
func TestNotice(t *testing.T) {
	f := newFixture(t)
	t.Run("object", func(t *testing.T) {
		res := f.do(t, "GET", "/v1/notices/"+notice.IDFor("N1"), f.read)
		if res.status != 200 {
			t.Fatalf("status %d; body %s", res.status, res.body)
		}
		var got map[string]any
		if err := json.Unmarshal(res.body, &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"id":               notice.IDFor("N1"),
			"notice_seq":       float64(1),
			"source_id":        "N1",
			"source_url":       "https://notices.example.gov.au/N1",
			"published_date":   "2026-02-01",
			"published_at":     "2026-01-31T14:30:00.000Z",
			"collected_at":     "2026-04-03T00:00:00.000Z",
			"acn":              "123456780",
			"abn":              nil,
			"company_name":     "Alpha Pty Ltd",
			"notice_type":      "Appointment of Liquidator by the Court",
			"notice_code":      "LQ",
			"notice_purpose":   "Appointment",
			"appointment_type": "Court Liquidation",
			"state":            "NSW",
			"status":           "In Liquidation",
			"text":             "Notice of appointment of liquidator by the court.",
			"practitioners":    []any{map[string]any{"name": "Jane Citizen", "firm": "Citizen Insolvency", "role": "Liquidator"}},
			"replaces":         nil,
		}
		wantSame(t, got, want)
	})
	t.Run("practitioners [] not null", func(t *testing.T) {
		res := f.do(t, "GET", "/v1/notices/"+notice.IDFor("N3"), f.read)
		var got map[string]json.RawMessage
		if err := json.Unmarshal(res.body, &got); err != nil {
			t.Fatal(err)
		}
		if string(got["practitioners"]) != "[]" {
			t.Errorf("practitioners %s, want []", got["practitioners"])
		}
	})
	t.Run("deregistration notices are readable by id", func(t *testing.T) {
		var n notice.Notice
		f.get(t, "/v1/notices/"+notice.IDFor("N2"), &n)
		if n.SourceID != "N2" {
			t.Errorf("got %s", n.SourceID)
		}
	})
	t.Run("same object in search results", func(t *testing.T) {
		var one notice.Notice
		f.get(t, "/v1/notices/"+notice.IDFor("N4"), &one)
		var r searchResult
		f.get(t, "/v1/notices?notice_code=CVL", &r)
		if len(r.Data) != 1 {
			t.Fatalf("got %d notices", len(r.Data))
		}
		a, _ := json.Marshal(one)
		b, _ := json.Marshal(r.Data[0])
		if !bytes.Equal(a, b) {
			t.Errorf("search object %s differs from %s", b, a)
		}
	})
}

// wantSame compares decoded JSON objects key by key.
func wantSame(t *testing.T, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("missing field %s", k)
			continue
		}
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if !bytes.Equal(gb, wb) {
			t.Errorf("%s = %s, want %s", k, gb, wb)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected field %s", k)
		}
	}
}

// TestSearchHighlight: with a q of words every result carries highlight,
// the fragments of its text around the words (docs/api.md, "Highlights");
// without q, or with a q that is an identifier, results carry none.
func TestSearchHighlight(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name, query string
		want        map[string][]string // source_id -> highlight; nil: no highlight member
	}{
		{"q of words", "q=liquidator&sort=published_asc", map[string][]string{
			"N6": {}, // matched by its practitioner, not its text
			"N1": {"Notice of appointment of <mark>liquidator</mark> by the court."},
			"N4": {"Creditors resolved to appoint a <mark>liquidator</mark>."},
		}},
		{"prefix and OR", "q=" + url.QueryEscape("appoint* OR meeting"), map[string][]string{
			"N1": {"Notice of <mark>appointment</mark> of liquidator by the court."},
			"N3": {"A <mark>meeting</mark> of creditors will be held."},
			"N4": {"Creditors resolved to <mark>appoint</mark> a liquidator."},
			"N6": {}, // by its notice type
		}},
		{"no q", "state=VIC", nil},
		{"q of an identifier", "q=123456780", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r struct {
				Data []map[string]json.RawMessage `json:"data"`
			}
			f.get(t, "/v1/notices?"+tt.query, &r)
			if len(r.Data) == 0 {
				t.Fatal("no results")
			}
			for _, n := range r.Data {
				var src string
				_ = json.Unmarshal(n["source_id"], &src)
				raw, has := n["highlight"]
				if tt.want == nil {
					if has {
						t.Errorf("%s: highlight %s, want none", src, raw)
					}
					continue
				}
				want, ok := tt.want[src]
				if !ok {
					t.Errorf("unexpected result %s", src)
					continue
				}
				var got []string
				if err := json.Unmarshal(raw, &got); err != nil || got == nil || !slices.Equal(got, want) {
					t.Errorf("%s: highlight %s, want %q", src, raw, want)
				}
			}
		})
	}
}
