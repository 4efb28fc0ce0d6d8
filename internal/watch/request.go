package watch

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
)

// MaxNameLength is the longest accepted watch name, in characters.
const MaxNameLength = 200

// Top-level body fields.
const (
	fieldIdentifiers = "identifiers"
	fieldFilters     = "filters"
	fieldName        = "name"
	fieldAlertEmail  = "alert_email"
	fieldActive      = "active"
)

var (
	createFields = []string{fieldIdentifiers, fieldFilters, fieldName, fieldAlertEmail}
	matchFields  = []string{fieldIdentifiers, fieldFilters}
	patchFields  = []string{fieldActive, fieldName, fieldAlertEmail}
)

// CreateRequest is a validated POST /v1/watches body.
type CreateRequest struct {
	// Identifiers are normalised and deduplicated, in first-seen order.
	Identifiers []ident.ID
	Filters     Filters
	// Name is trimmed; "" when absent or null.
	Name string
	// AlertEmail is nil when absent or null.
	AlertEmail *string
}

// ParseCreate validates a POST /v1/watches body:
// {"identifiers": [...], "filters": {...}, "name": "...", "alert_email": "..." | null}.
// Every member is optional and null means absent. Checks run in API.md's
// order and the first failing one is reported: empty_request (no body),
// invalid_json (not JSON, or not an object), too_many_identifiers (over
// 50,000, counted before any value is looked at), invalid_identifier
// (identifiers not an array, or a malformed value: the message names the
// first and its position), invalid_filter (unknown top-level or filters
// field, a wrong value type, a name that is not a string or too long, an
// unparsable filters.q), empty_watch (neither identifiers nor any filter),
// invalid_alert_email.
func ParseCreate(body []byte) (CreateRequest, error) {
	var req CreateRequest
	m, err := decodeObject(body)
	if err != nil {
		return req, err
	}
	if req.Identifiers, err = parseIdentifiers(m[fieldIdentifiers]); err != nil {
		return req, err
	}
	if err := rejectUnknown(m, createFields, errs.InvalidFilter); err != nil {
		return req, err
	}
	if req.Filters, err = parseFilters(m[fieldFilters]); err != nil {
		return req, err
	}
	if err := req.Filters.checkQ(); err != nil {
		return req, err
	}
	if raw, ok := m[fieldName]; ok && !isNull(raw) {
		if req.Name, err = parseName(raw, errs.InvalidFilter); err != nil {
			return req, err
		}
	}
	if len(req.Identifiers) == 0 && req.Filters.Empty() {
		return req, errs.New(errs.EmptyWatch,
			"a watch needs identifiers (a list of ACNs or ABNs) or at least one filter (%s)",
			strings.Join(filterFields[:6], ", "))
	}
	if raw, ok := m[fieldAlertEmail]; ok {
		if req.AlertEmail, err = parseEmailField(raw); err != nil {
			return req, err
		}
	}
	return req, nil
}

// MatchRequest is a validated POST /v1/match body.
type MatchRequest struct {
	// Identifiers are normalised and deduplicated, in first-seen order;
	// never empty.
	Identifiers []ident.ID
	// Filters apply to the notices counted; include_deregistration
	// defaults to true as on watches.
	Filters Filters
	// Upload is the CSV body as sent (ParseMatchCSV), nil for a JSON
	// body; the CSV answer gives its rows back with the results.
	Upload *Upload
}

// ParseMatchRequest validates a POST /v1/match body:
// {"identifiers": [...], "filters": {...}}. Checks in order: empty_request
// (no body), invalid_json, empty_request again when identifiers are absent,
// null or an empty list (but an unknown field, such as a misspelt
// "identifiers", is reported as invalid_filter when no identifiers came),
// too_many_identifiers, invalid_identifier, invalid_filter (unknown fields,
// wrong types, unparsable filters.q).
func ParseMatchRequest(body []byte) (MatchRequest, error) {
	var req MatchRequest
	m, err := decodeObject(body)
	if err != nil {
		return req, err
	}
	raw := m[fieldIdentifiers]
	if raw == nil || isNull(raw) {
		// A misspelt "identifiers" is more use reported by name.
		if err := rejectUnknown(m, matchFields, errs.InvalidFilter); err != nil {
			return req, err
		}
	}
	if raw == nil || isNull(raw) || isEmptyArray(raw) {
		return req, errs.New(errs.EmptyRequest,
			`nothing to screen: send {"identifiers": ["ACN or ABN", ...]} with at least one identifier`)
	}
	if req.Identifiers, err = parseIdentifiers(raw); err != nil {
		return req, err
	}
	if err := rejectUnknown(m, matchFields, errs.InvalidFilter); err != nil {
		return req, err
	}
	if req.Filters, err = parseFilters(m[fieldFilters]); err != nil {
		return req, err
	}
	if err := req.Filters.checkQ(); err != nil {
		return req, err
	}
	return req, nil
}

// Patch is a validated PATCH /v1/watches/{id} body. Nil pointers leave a
// field as it is.
type Patch struct {
	Active *bool
	Name   *string
	// AlertEmailSet is true when alert_email was sent; AlertEmail is then
	// the new value, nil to clear it.
	AlertEmailSet bool
	AlertEmail    *string
}

// ParsePatch validates a PATCH body. Only active (boolean), name (string;
// null clears it) and alert_email (email address or null) are accepted.
// Checks in order: empty_request (no body), invalid_json (not JSON or not an
// object), invalid_update naming every unexpected field (sorted),
// invalid_update for a wrong value type (naming the field),
// invalid_alert_email, and empty_request for {} ("nothing to update"), so a
// client bug that sends nothing is not mistaken for success.
func ParsePatch(body []byte) (Patch, error) {
	var p Patch
	m, err := decodeObject(body)
	if err != nil {
		return p, err
	}
	if err := rejectUnknown(m, patchFields, errs.InvalidUpdate); err != nil {
		return p, err
	}
	if raw, ok := m[fieldActive]; ok {
		var b bool
		if isNull(raw) || json.Unmarshal(raw, &b) != nil {
			return p, errs.New(errs.InvalidUpdate, "active must be true or false; got %s", clip(raw))
		}
		p.Active = &b
	}
	if raw, ok := m[fieldName]; ok {
		name := ""
		if !isNull(raw) {
			if name, err = parseName(raw, errs.InvalidUpdate); err != nil {
				return p, err
			}
		}
		p.Name = &name
	}
	if raw, ok := m[fieldAlertEmail]; ok {
		if p.AlertEmail, err = parseEmailField(raw); err != nil {
			return p, err
		}
		p.AlertEmailSet = true
	}
	if len(m) == 0 {
		return p, errs.New(errs.EmptyRequest,
			"nothing to update: send at least one of active, name, alert_email")
	}
	return p, nil
}

// decodeObject checks for a body and decodes it as a JSON object whose
// members are kept raw, so later checks can run in the contract's order.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 {
		return nil, errs.New(errs.EmptyRequest, "a JSON object body is required and none was sent")
	}
	// go-json decodes a 50,000-identifier body in 0.6 ms where
	// encoding/json takes 4.7 (docs/benchmarks.md, 2026-11-25). It rejects
	// what encoding/json rejects (FuzzDecodeObject holds the two to the
	// same answer); when it fails, encoding/json decodes again for the
	// messages clients have always had.
	var m map[string]json.RawMessage
	if gojson.Unmarshal(t, &m) == nil && t[0] == '{' {
		return m, nil
	}
	return stdDecodeObject(t)
}

// stdDecodeObject is decodeObject with encoding/json: one decode (which
// validates first); json.Valid only tells the two failures apart.
func stdDecodeObject(t []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	err := json.Unmarshal(t, &m)
	if err != nil && !json.Valid(t) {
		return nil, errs.New(errs.InvalidJSON, "the body is not valid JSON (%v); send a JSON object", err)
	}
	if err != nil || t[0] != '{' {
		return nil, errs.New(errs.InvalidJSON, "the body must be a JSON object ({...}), not %s", clip(t))
	}
	return m, nil
}

// parseIdentifiers decodes the identifiers member: absent or null is none;
// otherwise an array checked by ident.ParseList (too_many_identifiers is
// counted before any value is looked at).
func parseIdentifiers(raw json.RawMessage) ([]ident.ID, error) {
	if raw == nil || isNull(raw) {
		return nil, nil
	}
	if ids, ok, err := ident.ParseArray(raw, errs.InvalidIdentifier); ok {
		return ids, err
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errs.New(errs.InvalidIdentifier,
			`identifiers must be a JSON array of strings, like ["123 456 780", "51824753556"]; got %s`, clip(raw))
	}
	return ident.ParseList(list, errs.InvalidIdentifier)
}

// rejectUnknown reports every member of m not in allowed, sorted, with code.
func rejectUnknown(m map[string]json.RawMessage, allowed []string, code errs.Code) error {
	var unknown []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return errs.New(code, "unexpected field(s) %s; the accepted fields are %s",
		quoteList("", unknown), strings.Join(allowed, ", "))
}

// parseName decodes a name: a string of at most MaxNameLength characters
// after trimming. Failures use code, naming the field.
func parseName(raw json.RawMessage, code errs.Code) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errs.New(code, "name must be a string; got %s", clip(raw))
	}
	s = strings.TrimSpace(s)
	if n := utf8.RuneCountInString(s); n > MaxNameLength {
		return "", errs.New(code, "name is %d characters long; at most %d are allowed", n, MaxNameLength)
	}
	return s, nil
}

// isEmptyArray reports whether raw is [] (with any inner whitespace).
func isEmptyArray(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) >= 2 && t[0] == '[' && t[len(t)-1] == ']' &&
		len(bytes.TrimSpace(t[1:len(t)-1])) == 0
}
