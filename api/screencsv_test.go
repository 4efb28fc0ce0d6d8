package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// loanBook is a CSV upload as a lender sends it: its own columns around
// the identifier, a repeated company, an identifier written with spaces,
// a blank row, a row wider than the header, a cell a spreadsheet would
// run as a formula and a header cell (acn) a result column also uses.
const loanBook = "Loan Ref,acn,Borrower\r\n" +
	"L-003,222222228,Gamma\r\n" +
	"L-001,123 456 780,\"Alpha, the first\"\r\n" +
	",,\r\n" +
	"L-002,333333332,Quiet Co,extra\r\n" +
	"L-004,123456780,Alpha again\r\n" +
	"=1+1,444444446,Unknown\r\n"

// TestScreenCSVJoinBack: the CSV answer to a CSV upload is the upload
// given back, every column and every row in the uploaded order
// (duplicates and the blank row included), with the result columns
// appended; the JSON answer to the same upload keeps its shape.
func TestScreenCSVJoinBack(t *testing.T) {
	f := newWatchFixture(t, nil)
	s, _ := f.screenOK(t, `{"identifiers": ["222222228", "123456780", "333333332", "444444446"]}`)
	cells := screenCells(s)
	header := []string{"Loan Ref", "acn", "Borrower", "", "identifier", "result", "screen_acn", "company_name", "notice_count", "latest_notice_id", "latest_published_date", "latest_notice_purpose", "insolvency", "latest_insolvency_notice_id", "latest_insolvency_published_date", "latest_insolvency_notice_purpose", "notice_purposes"}
	rows := [][]string{
		append([]string{"L-003", "222222228", "Gamma", ""}, cells("222222228")...),
		append([]string{"L-001", "123 456 780", "Alpha, the first", ""}, cells("123456780")...),
		{"", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", ""},
		append([]string{"L-002", "333333332", "Quiet Co", "extra"}, cells("333333332")...),
		append([]string{"L-004", "123456780", "Alpha again", ""}, cells("123456780")...),
	}
	if rows[0][5] != "matched" || rows[3][5] != "unmatched" {
		t.Fatalf("the fixture changed: %q", rows)
	}
	for _, c := range []struct {
		name, query, formula string
	}{
		{"escaped", "", "'=1+1"},
		{"raw", "?raw=true", "=1+1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := append([][]string{header}, rows...)
			want = append(want, append([]string{c.formula, "444444446", "Unknown", ""}, cells("444444446")...))
			res := f.sendCSV(t, http.MethodPost, "/v1/match"+c.query, "text/csv", "text/csv", []byte(loanBook))
			if got := readCSV(t, res); !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("answer\n%q\nwant\n%q", got, want)
			}
		})
	}
	t.Run("JSON answer keeps its shape", func(t *testing.T) {
		res := f.sendCSV(t, http.MethodPost, "/v1/match", "application/json", "text/csv", []byte(loanBook))
		var got screenJSON
		decodeBody(t, res, &got)
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(s)
		if !bytes.Equal(g, w) {
			t.Errorf("JSON answer to the upload\n%s\nwant that of the JSON body\n%s", g, w)
		}
	})
}

// TestScreenCSVQueryFilters: a CSV body takes the filters as query
// parameters, with the answers of the JSON form's filters member; a bad
// one is invalid_filter, and so is one beside a JSON body.
func TestScreenCSVQueryFilters(t *testing.T) {
	f := newWatchFixture(t, nil)
	ids := []string{"123456780", "222222228", "333333332"}
	body := []byte(strings.Join(ids, "\n"))
	for _, c := range []struct{ query, filters string }{
		{"state=QLD", `{"state": "QLD"}`},
		{"state=nsw,QLD&state=VIC", `{"state": ["nsw", "QLD", "VIC"]}`},
		{"include_deregistration=false", `{"include_deregistration": false}`},
		{"include_deregistration=true", `{"include_deregistration": true}`},
		{"notice_purpose=Deregistration", `{"notice_purpose": "Deregistration"}`},
		{"q=gamma", `{"q": "gamma"}`},
		{"appointment_type=nothing&notice_code=x&status=y", `{"appointment_type": "nothing", "notice_code": "x", "status": "y"}`},
	} {
		t.Run(c.query, func(t *testing.T) {
			js, _ := json.Marshal(ids)
			s, _ := f.screenOK(t, `{"identifiers": `+string(js)+`, "filters": `+c.filters+`}`)
			cells := screenCells(s)
			want := [][]string{{"submitted", "identifier", "result", "acn", "company_name", "notice_count", "latest_notice_id", "latest_published_date", "latest_notice_purpose", "insolvency", "latest_insolvency_notice_id", "latest_insolvency_published_date", "latest_insolvency_notice_purpose", "notice_purposes"}}
			for _, id := range ids {
				want = append(want, append([]string{id}, cells(id)...))
			}
			got := readCSV(t, f.sendCSV(t, http.MethodPost, "/v1/match?"+c.query, "text/csv", "text/csv", body))
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("answer\n%q\nwant (the JSON form's)\n%q", got, want)
			}
			var asJSON screenJSON
			decodeBody(t, f.sendCSV(t, http.MethodPost, "/v1/match?"+c.query, "", "text/csv", body), &asJSON)
			g, _ := json.Marshal(asJSON)
			w, _ := json.Marshal(s)
			if !bytes.Equal(g, w) {
				t.Errorf("JSON answer\n%s\nwant\n%s", g, w)
			}
		})
	}
	// The filters must change something, or the cases above prove nothing.
	all := readCSV(t, f.sendCSV(t, http.MethodPost, "/v1/match", "text/csv", "text/csv", body))
	qld := readCSV(t, f.sendCSV(t, http.MethodPost, "/v1/match?state=QLD", "text/csv", "text/csv", body))
	if all[1][2] != "matched" || qld[1][2] != "unmatched" {
		t.Errorf("state=QLD does not filter: %q then %q", all[1], qld[1])
	}
	for _, c := range []struct{ name, query, contentType, body, code, inMessage string }{
		{"bad q", "q=%22open", "text/csv", "123456780\n", "invalid_filter", "q is not a valid search query"},
		{"q twice", "q=a&q=b", "text/csv", "123456780\n", "invalid_parameter", "q was given 2 times"},
		{"include_deregistration yes", "include_deregistration=yes", "text/csv", "123456780\n", "invalid_filter", "include_deregistration \"yes\" must be true or false"},
		{"filter beside a JSON body", "state=NSW", "application/json", `{"identifiers": ["123456780"]}`, "invalid_filter", "state filters a CSV body only"},
		{"malformed identifier first", "q=%22open", "text/csv", "12\n", "invalid_identifier", `"12" on line 1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := f.sendCSV(t, http.MethodPost, "/v1/match?"+c.query, "text/csv", c.contentType, []byte(c.body))
			wantError(t, res, http.StatusBadRequest, c.code)
			if m := errorMessage(t, res); !strings.Contains(m, c.inMessage) {
				t.Errorf("message %q lacks %q", m, c.inMessage)
			}
		})
	}
}

// TestCSVByteOrderMark: bom=1 (or true) starts every CSV answer, the
// export and both screen forms, with a UTF-8 byte-order mark and changes
// nothing else; 0, false or absent writes none; anything else is
// invalid_parameter.
func TestCSVByteOrderMark(t *testing.T) {
	f := newWatchFixture(t, nil)
	for _, c := range []struct {
		name, method, target, contentType, body string
	}{
		{"export", http.MethodGet, "/v1/notices?include_deregistration=true", "", ""},
		{"screen of a CSV body", http.MethodPost, "/v1/match?raw=true", "text/csv", loanBook},
		{"screen of a JSON body", http.MethodPost, "/v1/match?raw=true", "application/json", `{"identifiers": ["123456780", "333333332"]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			plain := f.sendCSV(t, c.method, c.target, "text/csv", c.contentType, []byte(c.body))
			readCSV(t, plain)
			for _, v := range []string{"1", "true"} {
				res := f.sendCSV(t, c.method, c.target+"&bom="+v, "text/csv", c.contentType, []byte(c.body))
				if res.status != http.StatusOK || res.header.Get("Content-Type") != contentTypeCSV {
					t.Fatalf("bom=%s: status %d, Content-Type %q", v, res.status, res.header.Get("Content-Type"))
				}
				if !bytes.Equal(res.body, append([]byte("\xef\xbb\xbf"), plain.body...)) {
					t.Errorf("bom=%s: %q, want the mark then %q", v, clip(res.body), clip(plain.body))
				}
			}
			for _, v := range []string{"0", "false"} {
				res := f.sendCSV(t, c.method, c.target+"&bom="+v, "text/csv", c.contentType, []byte(c.body))
				if readCSV(t, res); !bytes.Equal(res.body, plain.body) {
					t.Errorf("bom=%s: %q, want %q", v, clip(res.body), clip(plain.body))
				}
			}
			for _, v := range []string{"yes", "1&bom=1"} {
				res := f.sendCSV(t, c.method, c.target+"&bom="+v, "text/csv", c.contentType, []byte(c.body))
				wantError(t, res, http.StatusBadRequest, "invalid_parameter")
			}
		})
	}
}

// TestScreenCSVBackendsIdentical: the CSV answers of the bulk screen (an
// upload given back, query filters, raw, bom, a JSON body) are the same
// bytes from the embedded store and from the Redis backend.
func TestScreenCSVBackendsIdentical(t *testing.T) {
	lite := newWatchFixture(t, nil)
	scale := func() *watchFixture {
		scaleWatches = true
		defer func() { scaleWatches = false }()
		return newWatchFixture(t, nil)
	}()
	for _, c := range []struct{ name, query, contentType, body string }{
		{"loan book", "", "text/csv", loanBook},
		{"loan book raw bom", "?raw=true&bom=1", "text/csv", loanBook},
		{"filters", "?state=QLD&include_deregistration=false", "text/csv", loanBook},
		{"one per line", "?q=alpha", "text/csv", "123456780\n123456780\n222222228\n11123456780\n"},
		{"JSON body", "", "application/json", `{"identifiers": ["123456780", "333333332", "444444446"], "filters": {"state": "NSW"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := lite.sendCSV(t, http.MethodPost, "/v1/match"+c.query, "text/csv", c.contentType, []byte(c.body))
			b := scale.sendCSV(t, http.MethodPost, "/v1/match"+c.query, "text/csv", c.contentType, []byte(c.body))
			if a.status != http.StatusOK || !bytes.Equal(a.body, b.body) {
				t.Errorf("status %d and %d; bytes\nembedded:\n%s\nredis:\n%s", a.status, b.status, a.body, b.body)
			}
		})
	}
}
