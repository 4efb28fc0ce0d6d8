package watch

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/errs"
)

// checkErr fails unless err carries code and its message holds every part.
func checkErr(t *testing.T, err error, code errs.Code, parts ...string) {
	t.Helper()
	e, ok := errs.As(err)
	if !ok {
		t.Fatalf("got error %v, want code %s", err, code)
	}
	if e.Code != code {
		t.Fatalf("got code %s (%s), want %s", e.Code, e.Message, code)
	}
	for _, p := range parts {
		if !strings.Contains(e.Message, p) {
			t.Errorf("message %q does not contain %q", e.Message, p)
		}
	}
}

// identifierBody returns {"identifiers": [...]} with n copies of value, then extra members.
func identifierBody(n int, value, extra string) string {
	var b strings.Builder
	b.WriteString(`{"identifiers": [`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(value)
	}
	b.WriteString("]")
	b.WriteString(extra)
	b.WriteString("}")
	return b.String()
}

func TestParseCreateErrors(t *testing.T) {
	long := strings.Repeat("x", MaxNameLength+1)
	tests := []struct {
		name  string
		body  string
		code  errs.Code
		parts []string
	}{
		{"no body", "", errs.EmptyRequest, nil},
		{"only whitespace", " \n\t ", errs.EmptyRequest, nil},
		{"truncated json", `{"identifiers": [`, errs.InvalidJSON, nil},
		{"array body", `["123456789"]`, errs.InvalidJSON, []string{"object"}},
		{"string body", `"123456789"`, errs.InvalidJSON, nil},
		{"null body", `null`, errs.InvalidJSON, nil},
		{"trailing garbage", `{} {}`, errs.InvalidJSON, nil},
		{"too many identifiers", identifierBody(50001, `"123456789"`, ""), errs.TooManyIdentifiers, []string{"50001", "50000"}},
		{"malformed identifier", `{"identifiers": ["123456789", "12"]}`, errs.InvalidIdentifier, []string{`"12"`, "position 1"}},
		{"number identifier", `{"identifiers": [123456789]}`, errs.InvalidIdentifier, []string{"123456789", "position 0"}},
		{"identifiers not an array", `{"identifiers": "123456789"}`, errs.InvalidIdentifier, []string{"array"}},
		{"unknown top-level fields", `{"identifiers": ["123456789"], "zeta": 1, "alpha": 2}`, errs.InvalidFilter, []string{`"alpha", "zeta"`}},
		{"unknown filter field", `{"filters": {"state": "NSW", "colour": "red", "acn": "1"}}`, errs.InvalidFilter, []string{`"filters.acn", "filters.colour"`}},
		{"filters not an object", `{"identifiers": ["123456789"], "filters": ["NSW"]}`, errs.InvalidFilter, []string{"filters must be a JSON object"}},
		{"state a number", `{"filters": {"state": 5}}`, errs.InvalidFilter, []string{"filters.state"}},
		{"state array with a number", `{"filters": {"state": ["NSW", 5]}}`, errs.InvalidFilter, []string{"filters.state"}},
		{"state array with a null", `{"filters": {"state": ["NSW", null]}}`, errs.InvalidFilter, []string{"filters.state"}},
		{"status an object", `{"filters": {"status": {"a": 1}}}`, errs.InvalidFilter, []string{"filters.status"}},
		{"q a number", `{"filters": {"q": 5}}`, errs.InvalidFilter, []string{"filters.q"}},
		{"q unparsable", `{"filters": {"q": "\"unbalanced"}}`, errs.InvalidFilter, []string{"filters.q"}},
		{"include_deregistration a string", `{"filters": {"state": "NSW", "include_deregistration": "yes"}}`, errs.InvalidFilter, []string{"filters.include_deregistration"}},
		{"name a number", `{"identifiers": ["123456789"], "name": 5}`, errs.InvalidFilter, []string{"name must be a string"}},
		{"name too long", `{"identifiers": ["123456789"], "name": "` + long + `"}`, errs.InvalidFilter, []string{"name", "201"}},
		{"nothing", `{}`, errs.EmptyWatch, nil},
		{"empty identifiers", `{"identifiers": []}`, errs.EmptyWatch, nil},
		{"empty filters", `{"filters": {}}`, errs.EmptyWatch, nil},
		{"empty filter values", `{"filters": {"state": [], "status": ["", " "], "q": "  "}}`, errs.EmptyWatch, nil},
		{"only include_deregistration true (the default)", `{"filters": {"include_deregistration": true}}`, errs.EmptyWatch, nil},
		{"only a name", `{"name": "x", "alert_email": null}`, errs.EmptyWatch, nil},
		{"bad alert_email", `{"identifiers": ["123456789"], "alert_email": "not-an-email"}`, errs.InvalidAlertEmail, []string{"not-an-email"}},
		{"alert_email a number", `{"identifiers": ["123456789"], "alert_email": 5}`, errs.InvalidAlertEmail, []string{"null"}},
		{"alert_email empty", `{"identifiers": ["123456789"], "alert_email": ""}`, errs.InvalidAlertEmail, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCreate([]byte(tt.body))
			checkErr(t, err, tt.code, tt.parts...)
		})
	}
}

// TestParseCreateOrder sends bodies with two problems: the earlier check in
// API.md's order must be the one reported.
func TestParseCreateOrder(t *testing.T) {
	tests := []struct {
		name string
		body string
		code errs.Code
	}{
		{"too many before malformed values", identifierBody(50001, `"x"`, ""), errs.TooManyIdentifiers},
		{"too many before unknown field", identifierBody(50001, `"123456789"`, `, "bogus": 1`), errs.TooManyIdentifiers},
		{"too many before unknown field listed first", `{"bogus": 1, ` + identifierBody(50001, `5`, "")[1:], errs.TooManyIdentifiers},
		{"malformed identifier before unknown field", `{"bogus": 1, "identifiers": ["x"]}`, errs.InvalidIdentifier},
		{"malformed identifier before bad filter", `{"filters": {"colour": 1}, "identifiers": ["x"]}`, errs.InvalidIdentifier},
		{"malformed identifier before bad email", `{"identifiers": ["x"], "alert_email": "nope"}`, errs.InvalidIdentifier},
		{"unknown field before empty watch", `{"bogus": 1}`, errs.InvalidFilter},
		{"bad q before empty watch", `{"filters": {"q": "\""}}`, errs.InvalidFilter},
		{"bad name before bad email", `{"identifiers": ["123456789"], "name": [], "alert_email": "nope"}`, errs.InvalidFilter},
		{"empty watch before bad email", `{"alert_email": "nope"}`, errs.EmptyWatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCreate([]byte(tt.body))
			checkErr(t, err, tt.code)
		})
	}
}

func TestParseCreateFull(t *testing.T) {
	body, err := os.ReadFile("testdata/create_full.json")
	if err != nil {
		t.Fatal(err)
	}
	req, err := ParseCreate(body)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, id := range req.Identifiers {
		ids = append(ids, id.Value)
	}
	if want := []string{"000000019", "51824753556", "004085616"}; !slices.Equal(ids, want) {
		t.Errorf("identifiers = %v, want %v (normalised, deduplicated, first-seen order)", ids, want)
	}
	f := req.Filters
	if !slices.Equal(f.AppointmentType, []string{"Court Liquidation"}) {
		t.Errorf("appointment_type = %q, want a one-value list", f.AppointmentType)
	}
	if !slices.Equal(f.NoticePurpose, []string{"Appointment", "Meeting"}) {
		t.Errorf("notice_purpose = %q, want blanks and case repeats dropped", f.NoticePurpose)
	}
	if !slices.Equal(f.State, []string{"NSW", "VIC"}) || f.Q != "liquidator" {
		t.Errorf("state = %q, q = %q", f.State, f.Q)
	}
	if f.IncludeDeregistration == nil || *f.IncludeDeregistration {
		t.Errorf("include_deregistration = %v, want explicit false", f.IncludeDeregistration)
	}
	if req.Name != "Key suppliers" {
		t.Errorf("name = %q, want it trimmed", req.Name)
	}
	if req.AlertEmail == nil || *req.AlertEmail != "credit.team@example.com.au" {
		t.Errorf("alert_email = %v", req.AlertEmail)
	}
}

func TestParseCreateAccepts(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		ids      int
		email    bool
		nameWant string
	}{
		{"identifiers only", `{"identifiers": ["123 456 789"]}`, 1, false, ""},
		{"filter only", `{"filters": {"state": "NSW"}}`, 0, false, ""},
		{"q only", `{"filters": {"q": "liquidator"}}`, 0, false, ""},
		{"include_deregistration false only", `{"filters": {"include_deregistration": false}}`, 0, false, ""},
		{"nulls are absent", `{"identifiers": ["123456789"], "filters": null, "name": null, "alert_email": null}`, 1, false, ""},
		{"null filter values", `{"identifiers": ["123456789"], "filters": {"state": null, "q": null, "include_deregistration": null}}`, 1, false, ""},
		{"exactly 50000", identifierBody(50000, `"123456789"`, ""), 1, false, ""},
		{"with email", `{"identifiers": ["12345678901"], "alert_email": "a@example.com", "name": "n"}`, 1, true, "n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ParseCreate([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if len(req.Identifiers) != tt.ids || (req.AlertEmail != nil) != tt.email || req.Name != tt.nameWant {
				t.Errorf("got %d identifiers, email %v, name %q", len(req.Identifiers), req.AlertEmail, req.Name)
			}
		})
	}
}

func TestParsePatch(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		code  errs.Code // "" when accepted
		parts []string
		check func(t *testing.T, p Patch)
	}{
		{name: "no body", body: "", code: errs.EmptyRequest},
		{name: "not an object", body: `[{"active": true}]`, code: errs.InvalidJSON},
		{name: "not json", body: `{active: true}`, code: errs.InvalidJSON},
		{name: "empty object", body: `{}`, code: errs.EmptyRequest, parts: []string{"nothing to update"}},
		{name: "unexpected fields named, sorted", body: `{"identifiers": [], "active": true, "colour": 1}`, code: errs.InvalidUpdate, parts: []string{`"colour", "identifiers"`}},
		{name: "active not boolean", body: `{"active": "yes"}`, code: errs.InvalidUpdate, parts: []string{"active"}},
		{name: "active null", body: `{"active": null}`, code: errs.InvalidUpdate, parts: []string{"active"}},
		{name: "name not string", body: `{"name": 5}`, code: errs.InvalidUpdate, parts: []string{"name"}},
		{name: "bad email", body: `{"alert_email": "x@y"}`, code: errs.InvalidAlertEmail},
		{name: "email a number", body: `{"alert_email": 1}`, code: errs.InvalidAlertEmail},
		{name: "unknown before bad email", body: `{"bogus": 1, "alert_email": "x"}`, code: errs.InvalidUpdate, parts: []string{`"bogus"`}},
		{name: "bad type before bad email", body: `{"active": 1, "alert_email": "x"}`, code: errs.InvalidUpdate},
		{name: "deactivate", body: `{"active": false}`, check: func(t *testing.T, p Patch) {
			if p.Active == nil || *p.Active || p.Name != nil || p.AlertEmailSet {
				t.Errorf("patch = %+v", p)
			}
		}},
		{name: "clear email and name", body: `{"alert_email": null, "name": null}`, check: func(t *testing.T, p Patch) {
			if !p.AlertEmailSet || p.AlertEmail != nil || p.Name == nil || *p.Name != "" || p.Active != nil {
				t.Errorf("patch = %+v", p)
			}
		}},
		{name: "set email and name", body: `{"alert_email": " ops@example.org ", "name": " Ops "}`, check: func(t *testing.T, p Patch) {
			if p.AlertEmail == nil || *p.AlertEmail != "ops@example.org" || *p.Name != "Ops" {
				t.Errorf("patch = %+v", p)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePatch([]byte(tt.body))
			if tt.code != "" {
				checkErr(t, err, tt.code, tt.parts...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, p)
		})
	}
}

func TestParseMatchRequest(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		code  errs.Code // "" when accepted
		parts []string
		ids   []string
	}{
		{name: "no body", body: "  ", code: errs.EmptyRequest},
		{name: "not json", body: `{"identifiers": ["1`, code: errs.InvalidJSON},
		{name: "not an object", body: `["123456789"]`, code: errs.InvalidJSON},
		{name: "empty object", body: `{}`, code: errs.EmptyRequest},
		{name: "empty list", body: `{"identifiers": [ ]}`, code: errs.EmptyRequest},
		{name: "null list", body: `{"identifiers": null}`, code: errs.EmptyRequest},
		{name: "empty list before unknown field", body: `{"identifiers": [], "bogus": 1}`, code: errs.EmptyRequest},
		{name: "misspelt identifiers", body: `{"identifers": ["123456789"]}`, code: errs.InvalidFilter, parts: []string{`"identifers"`}},
		{name: "too many", body: identifierBody(50001, `"x"`, `, "bogus": 1`), code: errs.TooManyIdentifiers},
		{name: "malformed", body: `{"identifiers": ["123456789", "abc"], "bogus": 1}`, code: errs.InvalidIdentifier, parts: []string{`"abc"`, "position 1"}},
		{name: "unknown top-level field", body: `{"identifiers": ["123456789"], "name": "x"}`, code: errs.InvalidFilter, parts: []string{`"name"`}},
		{name: "unknown filter field", body: `{"identifiers": ["123456789"], "filters": {"from": "2026-01-01"}}`, code: errs.InvalidFilter, parts: []string{"filters.from"}},
		{name: "bad q", body: `{"identifiers": ["123456789"], "filters": {"q": "\""}}`, code: errs.InvalidFilter, parts: []string{"filters.q"}},
		{name: "accepted, deduplicated", body: `{"identifiers": ["123 456 789", "123456789", "12345678901"], "filters": {"state": "NSW"}}`, ids: []string{"123456789", "12345678901"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ParseMatchRequest([]byte(tt.body))
			if tt.code != "" {
				checkErr(t, err, tt.code, tt.parts...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, id := range req.Identifiers {
				ids = append(ids, id.Value)
			}
			if !slices.Equal(ids, tt.ids) {
				t.Errorf("identifiers = %v, want %v", ids, tt.ids)
			}
			nf, err := req.Filters.NoticeFilter()
			if err != nil || !nf.IncludeDeregistration {
				t.Errorf("notice filter %+v, %v: want deregistration included by default", nf, err)
			}
		})
	}
}

func TestParseEmail(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" when rejected
	}{
		{"a@example.com", "a@example.com"},
		{"  first.last+tag@sub.example.com.au ", "first.last+tag@sub.example.com.au"},
		{"o'brien@example.ie", "o'brien@example.ie"},
		{"", ""},
		{"plainaddress", ""},
		{"a@localhost", ""},
		{"a@.example.com", ""},
		{"a@example.com.", ""},
		{"a@example..com", ""},
		{"a@[10.0.0.1]", ""},
		{"Bob <bob@example.com>", ""},
		{"<bob@example.com>", ""},
		{"a@b@example.com", ""},
		{"two words@example.com", ""},
		{strings.Repeat("a", 250) + "@example.com", ""},
		{"a@1.2.3.4", ""},
		{"a@b.123", ""},
		{"a@-b.co", ""},
		{"a@b-.co", ""},
		{"a@b.c_o", ""},
		{"a@" + strings.Repeat("b", 64) + ".com", ""},
		{"a@xn--bcher-kva.example", "a@xn--bcher-kva.example"},
		{"a@123.example.com", "a@123.example.com"},
		{"a@my-host.com.au", "a@my-host.com.au"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseEmail(tt.in)
			if tt.want == "" {
				checkErr(t, err, errs.InvalidAlertEmail, "alert_email")
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseEmail(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestErrorsAreJSONSafe(t *testing.T) {
	// Messages echo caller input; they must survive being put in JSON.
	_, err := ParseCreate([]byte(`{"identifiers": ["\u0000<>"]}`))
	e, _ := errs.As(err)
	if e == nil {
		t.Fatal("want an error")
	}
	if _, jerr := json.Marshal(e.Message); jerr != nil {
		t.Fatal(jerr)
	}
}
