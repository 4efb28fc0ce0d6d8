package watch

// LatestNotice is the summary of a company's newest notice in a bulk screen.
type LatestNotice struct {
	ID              string  `json:"id"`
	Seq             int64   `json:"notice_seq"`
	PublishedDate   string  `json:"published_date"`
	NoticeType      string  `json:"notice_type"`
	NoticePurpose   string  `json:"notice_purpose"`
	AppointmentType *string `json:"appointment_type"`
}

// Matched is one identifier of a bulk screen that has notices. Its
// notice fields are all over the same notices (those passing the
// screen's filters): NoticeCount counts them, LatestNotice is the newest
// of any purpose, LatestInsolvencyNotice the newest whose purpose is not
// Deregistration (nil when there is none; Insolvency says whether there
// is one), and NoticePurposes their distinct purposes, sorted.
type Matched struct {
	Identifier             string        `json:"identifier"`
	ACN                    *string       `json:"acn"`
	CompanyName            *string       `json:"company_name"`
	NoticeCount            int           `json:"notice_count"`
	LatestNotice           LatestNotice  `json:"latest_notice"`
	Insolvency             bool          `json:"insolvency"`
	LatestInsolvencyNotice *LatestNotice `json:"latest_insolvency_notice"`
	NoticePurposes         []string      `json:"notice_purposes"`
}

// UnmatchedCompany is an unmatched identifier of a bulk screen with its
// company as the register knows it: ACN is the identifier itself for an
// ACN and the register's ACN for an ABN (nil when the register has none);
// CompanyName is the register's current name (nil when it has none).
type UnmatchedCompany struct {
	Identifier  string  `json:"identifier"`
	ACN         *string `json:"acn"`
	CompanyName *string `json:"company_name"`
}

// ScreenCounts counts the three disjoint lists of a bulk screen.
type ScreenCounts struct {
	Submitted  int `json:"submitted"`
	Matched    int `json:"matched"`
	Unmatched  int `json:"unmatched"`
	Unresolved int `json:"unresolved"`
}

// ScreenResult is the POST /v1/match answer: every distinct submitted
// identifier lands in exactly one of Matched (has notices passing the
// filters), Unmatched (known to the register, no such notices) and
// Unresolved (well-formed, unknown to both register and notices), each in
// the caller's first-seen order. UnmatchedCompanies holds one entry per
// identifier of Unmatched, in the same order.
type ScreenResult struct {
	Matched            []Matched          `json:"matched"`
	Unmatched          []string           `json:"unmatched"`
	Unresolved         []string           `json:"unresolved"`
	Counts             ScreenCounts       `json:"counts"`
	UnmatchedCompanies []UnmatchedCompany `json:"unmatched_companies"`
}
