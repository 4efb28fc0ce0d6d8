// Package watch is the domain of watches: a saved list of ACNs/ABNs with
// optional filters whose matching notices can be polled or pushed to a
// webhook. It validates request bodies (create, patch, the bulk screen) and
// shapes the watch object of API.md. It does no storage and no HTTP.
//
// Decisions the contract leaves open, taken here:
//   - In request bodies null means absent for every optional member
//     (identifiers, filters, each filter field, name, alert_email).
//   - identifiers that is not an array is invalid_identifier; an
//     alert_email of the wrong JSON type is invalid_alert_email (it is
//     "neither an email address nor null"); other wrong types are
//     invalid_filter on create and invalid_update on PATCH.
//   - Enumerated filter values are trimmed; blank values and repeats that
//     differ only in case are dropped; a string is one value (never split on
//     commas). include_deregistration alone does not make a watch non-empty.
//   - name is trimmed and at most MaxNameLength characters; absent is "".
//     On PATCH, null clears it.
//   - alert_email must be a bare address with a dotted domain (ParseEmail).
//   - PATCH {} is empty_request ("nothing to update").
//   - On POST /v1/match, a body without identifiers but with an unknown
//     field (a misspelt "identifiers") is invalid_filter naming it, not
//     empty_request.
//   - The list view (Summary) drops only the identifiers array.
package watch

import (
	"crypto/rand"
	"encoding/json"
	"strings"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
)

// IDPrefix starts every watch id.
const IDPrefix = "wch_"

// ManualDeactivationReason is the deactivated_reason of a watch switched off
// with PATCH {"active": false}.
const ManualDeactivationReason = "deactivated by the account holder with PATCH {\"active\": false}; PATCH {\"active\": true} turns it back on"

// NewID returns a fresh watch id: "wch_" and 26 lower-case base32
// characters (128 random bits).
func NewID() string {
	return IDPrefix + strings.ToLower(rand.Text())
}

// Watch is a stored watch.
type Watch struct {
	ID        string
	AccountID string
	Name      string
	// Active is false once deactivated, by hand or after ten consecutive
	// failed webhook notices; DeactivatedReason then says why.
	Active            bool
	DeactivatedReason string
	// Identifiers are the watched ACNs/ABNs, normalised, deduplicated, in
	// the caller's first-seen order.
	Identifiers []string
	// Unresolved are the identifiers (a subset of Identifiers) that neither
	// the register nor the notices knew when the watch was created. They
	// stay watched: a company may appear later.
	Unresolved []string
	Filters    Filters
	AlertEmail *string
	// WebhookURL is nil until a webhook is registered.
	WebhookURL *string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// New returns an active watch built from a validated create request, with a
// fresh id and both timestamps set to now (to the millisecond). Unresolved
// is left for the caller, who knows the register.
func New(req CreateRequest, accountID string, now time.Time) Watch {
	now = now.UTC().Truncate(time.Millisecond)
	ids := make([]string, len(req.Identifiers))
	for i, id := range req.Identifiers {
		ids[i] = id.Value
	}
	return Watch{
		ID:          NewID(),
		AccountID:   accountID,
		Name:        req.Name,
		Active:      true,
		Identifiers: ids,
		Filters:     req.Filters,
		AlertEmail:  req.AlertEmail,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
}

// Apply applies a validated patch and sets UpdatedAt to now. Deactivating
// an active watch sets ManualDeactivationReason; deactivating an inactive
// one keeps its reason; activating clears it.
func (w *Watch) Apply(p Patch, now time.Time) {
	if p.Active != nil {
		switch {
		case *p.Active:
			w.Active, w.DeactivatedReason = true, ""
		case w.Active:
			w.Active, w.DeactivatedReason = false, ManualDeactivationReason
		}
	}
	if p.Name != nil {
		w.Name = *p.Name
	}
	if p.AlertEmailSet {
		w.AlertEmail = p.AlertEmail
	}
	w.UpdatedAt = now.UTC().Truncate(time.Millisecond)
}

// view is the watch object of API.md. Field order is the documented one.
type view struct {
	ID                string    `json:"id"`
	Name              string    `json:"name"`
	Active            bool      `json:"active"`
	DeactivatedReason *string   `json:"deactivated_reason,omitempty"`
	Identifiers       *[]string `json:"identifiers,omitempty"` // nil in the list view
	IdentifierCount   int       `json:"identifier_count"`
	Unresolved        []string  `json:"unresolved"`
	Filters           Filters   `json:"filters"`
	AlertEmail        *string   `json:"alert_email"`
	WebhookURL        *string   `json:"webhook_url"`
	CreatedAt         string    `json:"created_at"`
	UpdatedAt         string    `json:"updated_at"`
}

func (w *Watch) view() view {
	v := view{
		ID:              w.ID,
		Name:            w.Name,
		Active:          w.Active,
		IdentifierCount: len(w.Identifiers),
		Unresolved:      nonNil(w.Unresolved),
		Filters:         w.Filters,
		AlertEmail:      w.AlertEmail,
		WebhookURL:      w.WebhookURL,
		CreatedAt:       notice.Timestamp(w.CreatedAt),
		UpdatedAt:       notice.Timestamp(w.UpdatedAt),
	}
	if !w.Active {
		r := w.DeactivatedReason
		v.DeactivatedReason = &r
	}
	return v
}

// MarshalJSON writes the full watch object of API.md (201 on create, GET
// /v1/watches/{id}): deactivated_reason only when active is false,
// identifiers always (an empty array when the watch is filter-only),
// webhook_url null until registered. The account id is never shown.
func (w Watch) MarshalJSON() ([]byte, error) {
	v := w.view()
	ids := nonNil(w.Identifiers)
	v.Identifiers = &ids
	return json.Marshal(v)
}

// Summary is a watch as listed by GET /v1/watches: the watch object without
// the identifiers array (identifier_count and unresolved stay).
type Summary Watch

// Summary returns the list view of the watch.
func (w Watch) Summary() Summary { return Summary(w) }

// MarshalJSON writes the watch object without "identifiers".
func (s Summary) MarshalJSON() ([]byte, error) {
	w := Watch(s)
	return json.Marshal(w.view())
}
