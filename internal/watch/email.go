package watch

import (
	"encoding/json"
	"net/mail"
	"strconv"
	"strings"
	"unicode"

	"github.com/noticesd/noticesd/internal/errs"
)

// maxEmailLength is the longest accepted alert_email (RFC 5321's path limit).
const maxEmailLength = 254

// ParseEmail checks that s is a plausible email address and returns it
// trimmed. Plausible means: net/mail.ParseAddress accepts it; it is a bare
// address (no display name, no angle brackets, no quoted local part: the
// parsed address must equal the input); the domain is a host name with a
// dot (domainProblem), not an IP address; at most 254
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
	if why := domainProblem(s[at+1:]); why != "" {
		return "", bad("its domain " + why + "; it must be a host name with a dot, like example.com")
	}
	return s, nil
}

// domainProblem says why domain is not a host name an address can have, or
// "" when it is one: dot-separated labels of letters, digits and '-' (not
// first or last), at most 63 bytes each, at least two, the last not all
// digits (so no IP address, bracketed or bare).
func domainProblem(domain string) string {
	if strings.HasPrefix(domain, "[") {
		return "is an IP literal"
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return "has no dot"
	}
	for _, label := range labels {
		switch {
		case label == "":
			return "has an empty label (a leading, trailing or doubled dot)"
		case len(label) > 63:
			return "has a label longer than 63 characters"
		case label[0] == '-' || label[len(label)-1] == '-':
			return "has a label that starts or ends with '-'"
		}
		for _, r := range label {
			if r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				return "contains " + strconv.QuoteRune(r) + ", which no host name has"
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "ends in a number (an IP address is not accepted)"
	}
	return ""
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
