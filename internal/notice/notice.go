// Package notice holds the domain types of the service: notices, companies,
// register rows and the queries the API asks of a backend.
package notice

import "strings"

// Practitioner is an insolvency practitioner named on a notice.
type Practitioner struct {
	Name string `json:"name"`
	Firm string `json:"firm"`
	Role string `json:"role"`
}

// Notice is the notice object of API.md, the same on every route and in
// webhook deliveries. Timestamps are RFC 3339 UTC strings with milliseconds
// (see Timestamp); dates are YYYY-MM-DD.
type Notice struct {
	ID              string         `json:"id"`
	Seq             int64          `json:"notice_seq"`
	SourceID        string         `json:"source_id"`
	SourceURL       *string        `json:"source_url"`
	PublishedDate   string         `json:"published_date"`
	PublishedAt     string         `json:"published_at"`
	CollectedAt     string         `json:"collected_at"`
	ACN             *string        `json:"acn"`
	ABN             *string        `json:"abn"`
	CompanyName     string         `json:"company_name"`
	NoticeType      string         `json:"notice_type"`
	NoticeCode      string         `json:"notice_code"`
	NoticePurpose   string         `json:"notice_purpose"`
	AppointmentType *string        `json:"appointment_type"`
	State           string         `json:"state"`
	Status          string         `json:"status"`
	Text            string         `json:"text"`
	Practitioners   []Practitioner `json:"practitioners"`
	Replaces        *string        `json:"replaces"`
}

// PractitionerText is what full-text search sees of a notice's
// practitioners: names and firms, space-separated (roles are not searched).
// The SQLite index and the in-memory matcher both use it, so a phrase may
// run from a name into a firm on both.
func PractitionerText(ps []Practitioner) string {
	var b strings.Builder
	for _, p := range ps {
		for _, s := range []string{p.Name, p.Firm} {
			if s == "" {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// DeregistrationPurpose is the notice_purpose of deregistration notices.
const DeregistrationPurpose = "Deregistration"

// IsDeregistration reports whether the notice is a deregistration notice.
func (n *Notice) IsDeregistration() bool {
	return EqualFoldASCII(n.NoticePurpose, DeregistrationPurpose)
}

// EqualFoldASCII compares ignoring ASCII case only, like SQLite's NOCASE
// collation, so in-memory filters agree with the SQL ones.
func EqualFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
