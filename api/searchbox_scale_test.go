package api

import (
	"bytes"
	"net/http"
	"net/url"
	"testing"
)

// TestSearchBoxBackendsIdentical: what the console's one search box sends
// (a q that is an ACN or ABN, a q of words with its highlights, a company
// name search) answers the same bytes from the embedded store and from
// Elasticsearch.
func TestSearchBoxBackendsIdentical(t *testing.T) {
	f := newFixture(t)
	g := elasticFixture(t, f)
	for _, c := range []struct {
		target string
		holds  string // the answer must hold this
	}{
		{"/v1/notices?q=123456780&include_deregistration=true", `"total":2,`},
		{"/v1/notices?q=" + url.QueryEscape("123 456 780"), `"total":1,`},
		{"/v1/notices?q=11123456780&include_deregistration=true", `"total":2,`},
		{"/v1/notices?q=liquidator&sort=published_asc", `"highlight":["Notice of appointment of <mark>liquidator</mark> by the court."]`},
		{"/v1/notices?q=" + url.QueryEscape(`appoint* OR "meeting of" -dividend`) + "&sort=published_desc", `"highlight":["A <mark>meeting</mark> <mark>of</mark> creditors will be held."]`},
		{"/v1/filters?q=123456780", `"total":1,`},
		{"/v1/stats?q=11123456780&include_deregistration=true", `"total":2,`},
		{"/v1/notices?q=123456780&acn=111111114", `"invalid_parameter"`},
		{"/v1/companies?name=alpha", `"matched_name":"Alpha Pty Ltd"`},
		{"/v1/companies?name=" + url.QueryEscape("alpha hold"), `"matched_name":"Alpha Holdings Pty Ltd"`},
		{"/v1/companies?name=pty&limit=1&page=2", `"name":"Delta Pty Ltd"`},
		{"/v1/companies?name=gamma", `"total":0,`},
		{"/v1/companies?name=%21", `"invalid_parameter"`},
	} {
		t.Run(c.target, func(t *testing.T) {
			lite := f.do(t, http.MethodGet, c.target, f.read)
			es := g.do(t, http.MethodGet, c.target, g.read)
			if lite.status != es.status || !bytes.Equal(lite.body, es.body) {
				t.Errorf("answers differ:\nsqlite %d %s\nelastic %d %s", lite.status, lite.body, es.status, es.body)
			}
			if !bytes.Contains(lite.body, []byte(c.holds)) {
				t.Errorf("answer %s does not hold %s", lite.body, c.holds)
			}
		})
	}
}
