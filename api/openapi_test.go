package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/internal/webhook"
)

// openAPIPath is the OpenAPI document of the whole API, relative to this
// package.
const openAPIPath = "../docs/openapi.json"

// errsSource is where the error codes are declared; the test reads the
// constants from it, so a new code needs no edit here.
const errsSource = "../internal/errs/errs.go"

// undocumentedCodes are the errs codes the OpenAPI document leaves out on
// purpose, with the reason.
var undocumentedCodes = map[string]string{}

// docOperationMethods are the keys of an OpenAPI path item that are operations.
var docOperationMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// openAPI is the parsed document with helpers to resolve references.
type openAPI struct {
	root map[string]any
}

func loadOpenAPI(t *testing.T) *openAPI {
	t.Helper()
	raw, err := os.ReadFile(openAPIPath)
	if err != nil {
		t.Fatalf("read %s: %v", openAPIPath, err)
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatalf("%s is not valid JSON: %v", openAPIPath, err)
	}
	return &openAPI{root: root}
}

// docObject returns m[key] as an object, nil when absent or not an object.
func docObject(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	return v
}

// resolve follows a local "$ref" (one level is all the document uses, but
// chains are followed too).
func (d *openAPI) resolve(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	for i := 0; i < 10; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		if !strings.HasPrefix(ref, "#/") {
			t.Fatalf("reference %q is not local to the document", ref)
		}
		cur := d.root
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = docObject(cur, part)
			if cur == nil {
				t.Fatalf("reference %q does not resolve", ref)
			}
		}
		m = cur
	}
	t.Fatalf("reference chain too long at %v", m["$ref"])
	return nil
}

// docOperation is one documented operation.
type docOperation struct {
	method string // upper case
	path   string // as documented, with {name} parameters
	item   map[string]any
	op     map[string]any
}

func (o docOperation) String() string { return o.method + " " + o.path }

// operations lists the document's paths operations, sorted.
func (d *openAPI) operations() []docOperation {
	var out []docOperation
	for path, v := range docObject(d.root, "paths") {
		item, _ := v.(map[string]any)
		for _, m := range docOperationMethods {
			if op := docObject(item, m); op != nil {
				out = append(out, docOperation{method: strings.ToUpper(m), path: path, item: item, op: op})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// security returns the operation's effective security requirements.
func (d *openAPI) security(o docOperation) []any {
	if s, ok := o.op["security"].([]any); ok {
		return s
	}
	s, _ := d.root["security"].([]any)
	return s
}

// responses returns the operation's responses by status key, resolved.
func (d *openAPI) responses(t *testing.T, o docOperation) map[string]map[string]any {
	out := map[string]map[string]any{}
	for status, v := range docObject(o.op, "responses") {
		r, _ := v.(map[string]any)
		out[status] = d.resolve(t, r)
	}
	return out
}

// docErrorCodes returns a response's x-error-codes.
func docErrorCodes(r map[string]any) []string {
	var out []string
	list, _ := r["x-error-codes"].([]any)
	for _, c := range list {
		s, _ := c.(string)
		out = append(out, s)
	}
	return out
}

// fiberParamSegment matches a fiber path parameter segment,
// docParamSegment an OpenAPI one.
var (
	fiberParamSegment = regexp.MustCompile(`/:[^/]+`)
	docParamSegment   = regexp.MustCompile(`\{[^/}]+\}`)
)

// docRouteKey is "METHOD /path" with parameter names dropped ({}), so the
// fiber route /v1/companies/:id and the documented
// /v1/companies/{acn_or_abn} are the same route.
func docRouteKey(method, path string) string {
	path = fiberParamSegment.ReplaceAllString(path, "/{}")
	path = docParamSegment.ReplaceAllString(path, "{}")
	return method + " " + path
}

// TestOpenAPIRoutesMatchServer: every route api.New registers is documented
// and every documented operation is registered.
func TestOpenAPIRoutesMatchServer(t *testing.T) {
	d := loadOpenAPI(t)
	s := New(config.Default(), Deps{})
	registered := map[string]bool{}
	for _, r := range s.routes {
		for _, m := range r.methods {
			registered[docRouteKey(m, r.path)] = true
		}
	}
	documented := map[string]bool{}
	for _, o := range d.operations() {
		documented[docRouteKey(o.method, o.path)] = true
	}
	var undocumented, unregistered []string
	for k := range registered {
		if !documented[k] {
			undocumented = append(undocumented, k)
		}
	}
	for k := range documented {
		if !registered[k] {
			unregistered = append(unregistered, k)
		}
	}
	sort.Strings(undocumented)
	sort.Strings(unregistered)
	if len(undocumented) > 0 {
		t.Errorf("routes registered in api.New but missing from %s (document them):\n  %s", openAPIPath, strings.Join(undocumented, "\n  "))
	}
	if len(unregistered) > 0 {
		t.Errorf("operations documented in %s but not registered in api.New (register them or remove them from the document):\n  %s", openAPIPath, strings.Join(unregistered, "\n  "))
	}
	if len(registered) == 0 || len(documented) == 0 {
		t.Fatalf("found %d registered and %d documented routes; expected both to be non-empty", len(registered), len(documented))
	}
}

// TestOpenAPIPathParameters: every {name} in a documented path has a path
// parameter of that name, and every path parameter appears in the path.
func TestOpenAPIPathParameters(t *testing.T) {
	d := loadOpenAPI(t)
	for _, o := range d.operations() {
		t.Run(o.String(), func(t *testing.T) {
			want := map[string]bool{}
			for _, m := range docParamSegment.FindAllString(o.path, -1) {
				want[strings.Trim(m, "{}")] = true
			}
			got := map[string]bool{}
			for _, list := range []any{o.item["parameters"], o.op["parameters"]} {
				ps, _ := list.([]any)
				for _, p := range ps {
					pm, _ := p.(map[string]any)
					pm = d.resolve(t, pm)
					if pm["in"] == "path" {
						name, _ := pm["name"].(string)
						got[name] = true
						if pm["required"] != true {
							t.Errorf("path parameter %q must be required: true", name)
						}
					}
				}
			}
			for n := range want {
				if !got[n] {
					t.Errorf("path has {%s} but no path parameter named %q", n, n)
				}
			}
			for n := range got {
				if !want[n] {
					t.Errorf("path parameter %q does not appear in the path", n)
				}
			}
		})
	}
}

// declaredErrorCodes parses errs/errs.go and returns the string value of
// every constant of type Code.
func declaredErrorCodes(t *testing.T) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), errsSource, nil, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", errsSource, err)
	}
	codes := map[string]bool{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: a Code constant is not a string literal; update declaredErrorCodes", errsSource)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatalf("%s: %v", errsSource, err)
				}
				codes[s] = true
			}
		}
	}
	if len(codes) < 20 {
		t.Fatalf("found only %d error codes in %s; the parser missed them", len(codes), errsSource)
	}
	return codes
}

// statusCodeMention is an error code quoted after its HTTP status in prose,
// such as "400 `invalid_date`".
var statusCodeMention = regexp.MustCompile("\\b([1-5][0-9][0-9]) `([a-z_]+)`")

// docWalkStrings walks the document and calls fn with the location and
// value of every string.
func docWalkStrings(where string, v any, fn func(where, s string)) {
	switch x := v.(type) {
	case string:
		fn(where, x)
	case []any:
		for i, e := range x {
			docWalkStrings(fmt.Sprintf("%s[%d]", where, i), e, fn)
		}
	case map[string]any:
		for k, e := range x {
			docWalkStrings(where+"/"+k, e, fn)
		}
	}
}

// TestOpenAPIErrorCodes: every error code the document mentions is a real
// errs code with the status api gives it; the Error schema lists every code
// but the deliberate exceptions; each operation documents the key checks
// that apply to it.
func TestOpenAPIErrorCodes(t *testing.T) {
	d := loadOpenAPI(t)
	real := declaredErrorCodes(t)

	t.Run("Error schema enum", func(t *testing.T) {
		errSchema := docObject(docObject(docObject(docObject(docObject(d.root, "components"), "schemas"), "Error"), "properties"), "error")
		enum, _ := docObject(docObject(errSchema, "properties"), "code")["enum"].([]any)
		inEnum := map[string]bool{}
		for _, c := range enum {
			s, _ := c.(string)
			inEnum[s] = true
			if !real[s] {
				t.Errorf("Error.code enum lists %q, which is not an errs.Code constant", s)
			}
			if why, ok := undocumentedCodes[s]; ok {
				t.Errorf("Error.code enum lists %q, which is left out on purpose (%s)", s, why)
			}
		}
		for c := range real {
			if _, skip := undocumentedCodes[c]; !skip && !inEnum[c] {
				t.Errorf("errs code %q is missing from the Error.code enum of %s", c, openAPIPath)
			}
		}
	})

	t.Run("responses", func(t *testing.T) {
		for _, o := range d.operations() {
			for status, r := range d.responses(t, o) {
				where := fmt.Sprintf("%s response %s", o, status)
				isError := strings.HasSuffix(fmt.Sprint(docObject(docObject(docObject(r, "content"), "application/json"), "schema")["$ref"]), "/Error")
				codes := docErrorCodes(r)
				if isError != (len(codes) > 0) {
					t.Errorf("%s: an Error-shaped response must list its x-error-codes, and only those may (error shape %v, %d codes)", where, isError, len(codes))
				}
				desc, _ := r["description"].(string)
				for _, c := range codes {
					if !real[c] {
						t.Errorf("%s: x-error-codes lists %q, which is not an errs.Code constant", where, c)
						continue
					}
					if got := strconv.Itoa(StatusFor(errs.Code(c))); got != status {
						t.Errorf("%s: code %q is documented under %s but api answers it with %s", where, c, status, got)
					}
					if !strings.Contains(desc, "`"+c+"`") {
						t.Errorf("%s: description does not explain code `%s`", where, c)
					}
				}
			}
		}
	})

	t.Run("prose", func(t *testing.T) {
		n := 0
		docWalkStrings("", d.root, func(where, s string) {
			for _, m := range statusCodeMention.FindAllStringSubmatch(s, -1) {
				n++
				status, code := m[1], m[2]
				if !real[code] {
					t.Errorf("%s mentions %s `%s`, which is not an errs.Code constant", where, status, code)
					continue
				}
				if got := strconv.Itoa(StatusFor(errs.Code(code))); got != status {
					t.Errorf("%s mentions %s `%s` but api answers that code with %s", where, status, code, got)
				}
			}
		})
		if n == 0 {
			t.Fatal("no \"NNN `code`\" mention found in the document; the pattern is out of date")
		}
	})

	t.Run("key checks per docOperation", func(t *testing.T) {
		for _, o := range d.operations() {
			rs := d.responses(t, o)
			secured := len(d.security(o)) > 0
			if want := strings.HasPrefix(o.path, "/v1/"); secured != want {
				t.Errorf("%s: security present = %v, want %v (every /v1/ route needs a key, /health none)", o, secured, want)
			}
			if !secured {
				continue
			}
			if !slices.Contains(docErrorCodes(rs["401"]), string(errs.Unauthorised)) {
				t.Errorf("%s: needs a key but does not document 401 unauthorised", o)
			}
			if !slices.Contains(docErrorCodes(rs["402"]), string(errs.SubscriptionInactive)) {
				t.Errorf("%s: does not document 402 subscription_inactive", o)
			}
			if !slices.Contains(docErrorCodes(rs["500"]), string(errs.ServerError)) {
				t.Errorf("%s: does not document 500 server_error", o)
			}
			if strings.Contains(o.path, "/webhook") || strings.HasSuffix(o.path, "/deliveries") {
				if !slices.Contains(docErrorCodes(rs["500"]), string(errs.WebhookUnavailable)) {
					t.Errorf("%s: a webhook route must document 500 webhook_unavailable", o)
				}
			}
		}
	})
}

// TestOpenAPIAuthMatchesServer: the documented security and 403 responses
// are what the server does: without a key every secured route is 401 and
// /health is not; with a read-only key exactly the routes documenting 403
// account_required answer it.
func TestOpenAPIAuthMatchesServer(t *testing.T) {
	d := loadOpenAPI(t)
	f := newFixture(t)
	registered := map[string]bool{}
	for _, r := range f.srv.routes {
		for _, m := range r.methods {
			registered[docRouteKey(m, r.path)] = true
		}
	}
	sample := map[string]string{"id": "wch_doesnotexist", "acn_or_abn": "123456780", "file": "app.js", "delivery_id": "dlv_doesnotexist"}
	for _, o := range d.operations() {
		t.Run(o.String(), func(t *testing.T) {
			if !registered[docRouteKey(o.method, o.path)] {
				t.Fatalf("documented but not registered (TestOpenAPIRoutesMatchServer lists every difference)")
			}
			target := docParamSegment.ReplaceAllStringFunc(o.path, func(p string) string {
				v, ok := sample[strings.Trim(p, "{}")]
				if !ok {
					t.Fatalf("no sample value for path parameter %s; add one to the test", p)
				}
				return v
			})
			res := f.do(t, o.method, target, "")
			if secured := len(d.security(o)) > 0; secured {
				if res.status != http.StatusUnauthorized {
					t.Errorf("without a key: status %d, want 401 (the document says a key is needed); body %s", res.status, res.body)
				}
			} else if res.status == http.StatusUnauthorized {
				t.Errorf("without a key: 401, but the document says no key is needed")
			}
			if len(d.security(o)) == 0 {
				return
			}
			res = f.do(t, o.method, target, f.read)
			wants403 := slices.Contains(docErrorCodes(d.responses(t, o)["403"]), string(errs.AccountRequired))
			if got403 := res.status == http.StatusForbidden; got403 != wants403 {
				t.Errorf("with a read-only key: status %d; the document says account_required = %v; body %s", res.status, wants403, res.body)
			}
		})
	}
}

// shapeProblems checks v (decoded JSON) against a schema of the document:
// types, enums and consts, required and undocumented object members,
// array items, anyOf/oneOf, if/then/else and not. Typed objects with
// properties are treated as closed, so a member the code sends but the
// document does not describe is reported.
func (d *openAPI) shapeProblems(t *testing.T, where string, schema map[string]any, v any) []string {
	schema = d.resolve(t, schema)
	var out []string
	for _, key := range []string{"anyOf", "oneOf"} {
		alts, ok := schema[key].([]any)
		if !ok {
			continue
		}
		matched := 0
		for _, a := range alts {
			am, _ := a.(map[string]any)
			if len(d.shapeProblems(t, where, am, v)) == 0 {
				matched++
			}
		}
		if matched == 0 || (key == "oneOf" && matched > 1) {
			out = append(out, fmt.Sprintf("%s: %s matches %d of the %s alternatives", where, docClip(v), matched, key))
		}
	}
	if tv, ok := schema["type"]; ok {
		var types []string
		switch x := tv.(type) {
		case string:
			types = []string{x}
		case []any:
			for _, e := range x {
				s, _ := e.(string)
				types = append(types, s)
			}
		}
		if !slices.ContainsFunc(types, func(ty string) bool { return docJSONTypeIs(v, ty) }) {
			return append(out, fmt.Sprintf("%s: %s is not of type %v", where, docClip(v), types))
		}
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, v) {
		out = append(out, fmt.Sprintf("%s: %s is not one of %v", where, docClip(v), enum))
	}
	if c, ok := schema["const"]; ok && c != v {
		out = append(out, fmt.Sprintf("%s: %s is not %v", where, docClip(v), c))
	}
	if m, ok := v.(map[string]any); ok {
		props := docObject(schema, "properties")
		closed := props != nil && schema["type"] != nil // not in if/then/else parts
		for k, e := range m {
			p, known := props[k].(map[string]any)
			if closed && !known {
				out = append(out, fmt.Sprintf("%s: member %q is not in the schema", where, k))
				continue
			}
			if known {
				out = append(out, d.shapeProblems(t, where+"."+k, p, e)...)
			}
		}
		req, _ := schema["required"].([]any)
		for _, r := range req {
			if _, ok := m[r.(string)]; !ok {
				out = append(out, fmt.Sprintf("%s: required member %q is missing", where, r))
			}
		}
	}
	if a, ok := v.([]any); ok {
		if items := docObject(schema, "items"); items != nil {
			for i, e := range a {
				out = append(out, d.shapeProblems(t, fmt.Sprintf("%s[%d]", where, i), items, e)...)
			}
		}
	}
	if cond := docObject(schema, "if"); cond != nil {
		branch := docObject(schema, "else")
		if len(d.shapeProblems(t, where, cond, v)) == 0 {
			branch = docObject(schema, "then")
		}
		if branch != nil {
			out = append(out, d.shapeProblems(t, where, branch, v)...)
		}
	}
	if not := docObject(schema, "not"); not != nil && len(d.shapeProblems(t, where, not, v)) == 0 {
		out = append(out, fmt.Sprintf("%s: %s matches a schema it must not (%v)", where, docClip(v), not))
	}
	return out
}

func docJSONTypeIs(v any, ty string) bool {
	switch ty {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return false
}

func docClip(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// checkShape decodes body and reports every way it departs from schema.
func (d *openAPI) checkShape(t *testing.T, name string, schema map[string]any, body []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: body is not JSON: %v: %s", name, err, body)
	}
	for _, p := range d.shapeProblems(t, name, schema, v) {
		t.Error(p)
	}
}

func docSchemaRef(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

// TestOpenAPIReadResponsesMatchSchemas: real responses of the read routes
// and /health have exactly the documented shape.
func TestOpenAPIReadResponsesMatchSchemas(t *testing.T) {
	d := loadOpenAPI(t)
	f := newFixture(t)
	tests := []struct {
		target string
		status string
	}{
		{"/v1/notices?include_deregistration=true&limit=100", "200"},
		{"/v1/notices/" + notice.IDFor("N1"), "200"},
		{"/v1/companies/123456780", "200"},
		{"/v1/companies/11123456780", "200"},
		{"/v1/filters?include_deregistration=true", "200"},
		{"/v1/stats", "200"},
		{"/v1/stats?group_by=appointment_type&include_deregistration=true", "200"},
		{"/health", "200"},
		{"/v1/notices?from=2026-13-01", "400"},
		{"/v1/notices/ntc_nothing", "404"},
	}
	ops := map[string]docOperation{}
	for _, o := range d.operations() {
		ops[docRouteKey(o.method, o.path)] = o
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			path, _, _ := strings.Cut(tc.target, "?")
			key := ""
			for _, r := range f.srv.routes {
				if segmentsMatch(r.segments, splitPath(path)) {
					key = docRouteKey(http.MethodGet, r.path)
				}
			}
			o, ok := ops[key]
			if !ok {
				t.Fatalf("GET %s is not documented", path)
			}
			resp := d.responses(t, o)[tc.status]
			if resp == nil {
				t.Fatalf("%s documents no %s response", o, tc.status)
			}
			schema := docObject(docObject(docObject(resp, "content"), "application/json"), "schema")
			res := f.do(t, http.MethodGet, tc.target, f.read)
			if strconv.Itoa(res.status) != tc.status {
				t.Fatalf("status %d, want %s; body %s", res.status, tc.status, res.body)
			}
			d.checkShape(t, o.String(), schema, res.body)
		})
	}
}

// TestOpenAPIDomainJSONMatchesSchemas: the JSON of the domain values the
// watch, screen and webhook routes send (and of the webhook delivery body)
// has exactly the documented shape, with optional members both set and
// unset.
func TestOpenAPIDomainJSONMatchesSchemas(t *testing.T) {
	d := loadOpenAPI(t)
	str := func(s string) *string { return &s }
	no := false
	now := time.Date(2026, 2, 1, 3, 4, 5, 123e6, time.UTC)
	full := notice.Notice{
		ID: notice.IDFor("N1"), Seq: 7, SourceID: "N1", SourceURL: str("https://notices.example.gov.au/N1"),
		PublishedDate: "2026-02-01", PublishedAt: notice.Timestamp(now), CollectedAt: notice.Timestamp(now),
		ACN: str("123456780"), ABN: str("11123456780"), CompanyName: "Alpha Pty Ltd", NoticeType: "Appointment",
		NoticeCode: "LQ", NoticePurpose: "Appointment", AppointmentType: str("Court Liquidation"), State: "NSW",
		Status: "In Liquidation", Text: "text", Replaces: str(notice.IDFor("N0")),
		Practitioners: []notice.Practitioner{{Name: "Jane Citizen", Firm: "Citizen Insolvency", Role: "Liquidator"}},
	}
	bare := presentNotice(notice.Notice{ID: notice.IDFor("N2"), Seq: 8, SourceID: "N2", PublishedDate: "2026-02-01",
		PublishedAt: notice.Timestamp(now), CollectedAt: notice.Timestamp(now), CompanyName: "Beta"})
	active := watch.Watch{
		ID: "wch_m5ttq2lxh3ruyw6ljbaxpqf4zq", AccountID: "acc_x", Name: "Key suppliers", Active: true,
		Identifiers: []string{"123456780", "51824753556"}, Unresolved: []string{"51824753556"},
		Filters:    watch.Filters{NoticePurpose: []string{"Appointment"}, Q: "liquidator", IncludeDeregistration: &no},
		AlertEmail: str("credit@example.com"), WebhookURL: str("https://hooks.example.com/n"), CreatedAt: now, UpdatedAt: now,
	}
	inactive := watch.Watch{ID: "wch_aaaaaaaaaaaaaaaaaaaaaaaaaa", Active: false, DeactivatedReason: watch.ManualDeactivationReason,
		Filters: watch.Filters{State: []string{"NSW"}}, CreatedAt: now, UpdatedAt: now}
	payload, err := webhook.Payload(active.ID, now, full)
	if err != nil {
		t.Fatal(err)
	}
	payloadBare, err := webhook.Payload(inactive.ID, now, notice.Notice{ID: bare.ID, Seq: 8})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		schema string
		value  any
	}{
		{"full notice", "Notice", full},
		{"bare notice", "Notice", bare},
		{"search page", "SearchPage", searchResponse{Data: []notice.Notice{full, bare}, Page: 1, Limit: 20, Total: 2}},
		{"search page with highlights", "SearchPage", searchResponse{Data: []highlighted{{Notice: full, Highlight: []string{"a <mark>text</mark>"}}, {Notice: bare, Highlight: []string{}}}, Page: 1, Limit: 20, Total: 2}},
		{"company page", "CompanyPage", companiesResponse{Data: []notice.NameMatch{
			{ACN: "123456780", ABN: str("11123456780"), Name: "Alpha", MatchedName: "Alpha Holdings", Status: "REGD"},
			{ACN: "333333332", Name: "Delta", MatchedName: "Delta", Status: "DRGD"}}, Page: 1, Limit: 20, Total: 2}},
		{"company with register", "Company", notice.Company{ACN: str("123456780"), ABN: str("11123456780"), Name: str("Alpha"),
			Register: &notice.Register{Name: "Alpha", RegisteredOn: str("2001-05-01"), FormerNames: []string{"Old"}}, NoticeCount: 1, Notices: []notice.Notice{full}}},
		{"company without register", "Company", notice.Company{ACN: str("123456780"), Notices: []notice.Notice{}}},
		{"active watch", "Watch", active},
		{"inactive watch", "Watch", inactive},
		{"watch summary", "WatchSummary", active.Summary()},
		{"inactive watch summary", "WatchSummary", inactive.Summary()},
		{"watch list", "WatchList", watchList{Data: []watch.Summary{active.Summary(), inactive.Summary()}}},
		{"matches", "MatchPage", matchesResponse{Data: []notice.Notice{full}, Since: 0, NextSince: 7, HasMore: false}},
		{"screen", "ScreenResult", watch.ScreenResult{
			Matched: []watch.Matched{
				{Identifier: "123456780", ACN: str("123456780"), CompanyName: str("Alpha"), NoticeCount: 1,
					LatestNotice: watch.LatestNotice{ID: full.ID, Seq: 7, PublishedDate: "2026-02-01", NoticeType: "x", NoticePurpose: "y", AppointmentType: str("z")},
					Insolvency:   true, LatestInsolvencyNotice: &watch.LatestNotice{ID: full.ID, Seq: 7, PublishedDate: "2026-02-01", NoticeType: "x", NoticePurpose: "y", AppointmentType: str("z")},
					NoticePurposes: []string{"y"}},
				{Identifier: "51824753556", NoticeCount: 2, LatestNotice: watch.LatestNotice{ID: bare.ID, Seq: 8, PublishedDate: "2026-02-01", NoticePurpose: "Deregistration"},
					NoticePurposes: []string{"Deregistration"}},
			},
			Unmatched: []string{"000000019"}, Unresolved: []string{}, Counts: watch.ScreenCounts{Submitted: 3, Matched: 2, Unmatched: 1},
			UnmatchedCompanies: []watch.UnmatchedCompany{{Identifier: "000000019", ACN: str("000000019"), CompanyName: str("Quiet")}, {Identifier: "51824753556"}}}},
		{"pending delivery", "DeliveryRecord", delivery.Record{ID: webhook.DeliveryID(active.ID, full.ID), NoticeID: full.ID, NoticeSeq: 7,
			Status: delivery.Pending, Attempts: 1, LastError: str("HTTP 502"), CreatedAt: notice.Timestamp(now), UpdatedAt: notice.Timestamp(now), NextAttemptAt: str(notice.Timestamp(now))}},
		{"delivered delivery", "DeliveryRecord", delivery.Record{ID: webhook.DeliveryID(active.ID, bare.ID), NoticeID: bare.ID, NoticeSeq: 8,
			Status: delivery.Delivered, Attempts: 1, CreatedAt: notice.Timestamp(now), UpdatedAt: notice.Timestamp(now), DeliveredAt: str(notice.Timestamp(now))}},
		{"webhook registration", "WebhookRegistration", webhookRegistration{ID: active.ID, WebhookURL: *active.WebhookURL, Secret: webhook.NewSecret()}},
		{"delivery list", "DeliveryList", deliveryList{Data: []delivery.Record{}}},
		{"error", "Error", errorBody{Error: errorDetail{Code: errs.InvalidDate, Message: "from is not a date"}}},
		{"webhook delivery body", "WebhookDelivery", json.RawMessage(payload)},
		{"webhook delivery body, bare notice", "WebhookDelivery", json.RawMessage(payloadBare)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.value)
			if err != nil {
				t.Fatal(err)
			}
			d.checkShape(t, tc.schema, docSchemaRef(tc.schema), b)
		})
	}
}

// TestOpenAPIRequestBodiesAccepted: every documented member of the request
// bodies is accepted by the parsers, the documented examples parse, and an
// undocumented member is refused.
func TestOpenAPIRequestBodiesAccepted(t *testing.T) {
	d := loadOpenAPI(t)
	schemas := docObject(docObject(d.root, "components"), "schemas")
	members := func(name string) map[string]any {
		t.Helper()
		m := map[string]any{}
		for k := range docObject(schemas[name].(map[string]any), "properties") {
			m[k] = nil
		}
		if len(m) == 0 {
			t.Fatalf("schema %s has no properties", name)
		}
		return m
	}
	allFilters := members("WatchFiltersInput")
	parsers := map[string]func([]byte) error{
		"WatchCreateRequest": func(b []byte) error { _, err := watch.ParseCreate(b); return err },
		"WatchUpdateRequest": func(b []byte) error { _, err := watch.ParsePatch(b); return err },
		"MatchRequest":       func(b []byte) error { _, err := watch.ParseMatchRequest(b); return err },
	}
	unknownCode := map[string]errs.Code{
		"WatchCreateRequest": errs.InvalidFilter,
		"WatchUpdateRequest": errs.InvalidUpdate,
		"MatchRequest":       errs.InvalidFilter,
	}
	for name, parse := range parsers {
		t.Run(name, func(t *testing.T) {
			body := members(name)
			for k := range body {
				switch k {
				case "identifiers":
					body[k] = []string{"123456780"}
				case "filters":
					body[k] = allFilters
				case "active":
					body[k] = true
				}
			}
			b, _ := json.Marshal(body)
			if err := parse(b); err != nil {
				t.Errorf("every documented member %s: %v", b, err)
			}
			examples, _ := schemas[name].(map[string]any)["examples"].([]any)
			if len(examples) == 0 {
				t.Errorf("schema %s has no example", name)
			}
			for _, ex := range examples {
				b, _ := json.Marshal(ex)
				if err := parse(b); err != nil {
					t.Errorf("documented example %s: %v", b, err)
				}
			}
			body["undocumented_member"] = 1
			b, _ = json.Marshal(body)
			if err := parse(b); !errs.Is(err, unknownCode[name]) {
				t.Errorf("an undocumented member: got %v, want %s", err, unknownCode[name])
			}
		})
	}
}

// TestOpenAPIFormatted: the document is indented with two spaces, as
// json.Indent writes it, so diffs stay readable.
func TestOpenAPIFormatted(t *testing.T) {
	raw, err := os.ReadFile(openAPIPath)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimRight(buf.Bytes(), "\n"), bytes.TrimRight(raw, "\n")) {
		t.Errorf("%s is not formatted with 2-space indentation; reformat it (for example: python3 -m json.tool --indent 2 --no-ensure-ascii)", openAPIPath)
	}
}
