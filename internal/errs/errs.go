// Package errs defines the service's errors as values: a stable code from
// SPEC.md (or API.md's extra codes) and a message that says what to fix.
// The mapping from code to HTTP status lives in exactly one place, api/errors.go.
package errs

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code. Clients branch on it.
type Code string

// The codes of SPEC.md's error table and API.md's additions.
const (
	Unauthorised         Code = "unauthorised"
	SubscriptionInactive Code = "subscription_inactive"
	QuotaExceeded        Code = "quota_exceeded"
	WatchLimitReached    Code = "watch_limit_reached"
	AccountRequired      Code = "account_required"
	EmptyRequest         Code = "empty_request"
	EmptyWatch           Code = "empty_watch"
	TooManyIdentifiers   Code = "too_many_identifiers"
	InvalidIdentifier    Code = "invalid_identifier"
	InvalidACN           Code = "invalid_acn"
	InvalidFilter        Code = "invalid_filter"
	InvalidSince         Code = "invalid_since"
	InvalidDate          Code = "invalid_date"
	InvalidQuery         Code = "invalid_query"
	InvalidGroupBy       Code = "invalid_group_by"
	InvalidUpdate        Code = "invalid_update"
	InvalidAlertEmail    Code = "invalid_alert_email"
	InvalidWebhookURL    Code = "invalid_webhook_url"
	MissingURL           Code = "missing_url"
	NotFound             Code = "not_found"
	MethodNotAllowed     Code = "method_not_allowed"
	ServerError          Code = "server_error"
	WebhookUnavailable   Code = "webhook_unavailable"
	InvalidJSON          Code = "invalid_json"
	InvalidParameter     Code = "invalid_parameter"
	PayloadTooLarge      Code = "payload_too_large"
	RateLimited          Code = "rate_limited"
	// ExportTooLarge: a CSV export of GET /v1/notices matches more notices
	// than one export may carry.
	ExportTooLarge Code = "export_too_large"
	Unavailable    Code = "unavailable"
	// BackendUnavailable: a storage backend (Redis, Elasticsearch) cannot be
	// reached or did not answer in time; the request may be retried.
	BackendUnavailable Code = "backend_unavailable"
	// NoWebhook: a webhook action (a test delivery, a retry) on a watch
	// that has no webhook registered.
	NoWebhook Code = "no_webhook"
	// DeliveryNotDead: a retry of a delivery that is not dead (pending or
	// delivered); only dead deliveries are retried.
	DeliveryNotDead Code = "delivery_not_dead"
)

// Error is an error with a stable code and a human-readable message.
type Error struct {
	Code    Code
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// New returns an *Error with the given code and a formatted message.
// The message is cut to MaxMessageBytes, so no caller can make an error
// response large; quote client-supplied values with Quote so the cut never
// falls on the advice that follows them.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: bound(fmt.Sprintf(format, args...))}
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Is reports whether err carries the given code.
func Is(err error, code Code) bool {
	e, ok := As(err)
	return ok && e.Code == code
}
