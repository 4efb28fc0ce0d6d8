package watch

import (
	"encoding/json"
	"net/mail"
	"strings"

	"github.com/noticesd/noticesd/internal/errs"
)

// maxEmailLength is the longest accepted alert_email (RFC 5321's path limit).
const maxEmailLength = 254

// ParseEmail checks that s is a plausible email address and returns it
// trimmed. Plausible means: net/mail.ParseAddress accepts it; it is a bare
// address (no display name, no angle brackets, no quoted local part: the
// parsed address must equal the input); the domain has a dot that is neither
// first nor last, no empty label and is not an IP literal; at most 254
// characters. Whether the mailbox exists is not checked. A failure is
// invalid_alert_email.
func ParseEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	bad := func(why string) error {
		return errs.New(errs.InvalidAlertEmail,
			"alert_email %s is not an email address (%s); send a bare address like name@example.com, or null for none", errs.Quote(s), why)
	}
	if s == "" {
		return "", bad("it is empty")
	}
	if len(s) > maxEmailLength {
		return "", bad("it is longer than 254 characters")
	}
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Name != "" || addr.Address != s {
		return "", bad("it must be just the address, without a name or <>")
	}
	at := strings.LastIndexByte(s, '@')
	domain := s[at+1:]
	if strings.HasPrefix(domain, "[") || !strings.Contains(domain, ".") ||
		strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") ||
		strings.Contains(domain, "..") {
		return "", bad("its domain must be a name with a dot, like example.com")
	}
	return s, nil
}

// parseEmailField decodes an alert_email member: null clears it, a string
// must be a plausible address (ParseEmail), anything else is
// invalid_alert_email.
func parseEmailField(raw json.RawMessage) (*string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, errs.New(errs.InvalidAlertEmail,
			"alert_email must be an email address as a JSON string, or null for none; got %s", clip(raw))
	}
	e, err := ParseEmail(s)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// clip shortens a raw JSON value for an error message (errs.Clip).
func clip(raw json.RawMessage) string { return errs.Clip(string(raw)) }
