package notice

// RegisterRow is one row of the ASIC company dataset: one company name of one
// company. A company has one row per name; CurrentNameIndicator "Y" marks
// the current one. Dates are YYYY-MM-DD ("" when blank).
type RegisterRow struct {
	CompanyName             string
	ACN                     string
	Type                    string
	Class                   string
	SubClass                string
	Status                  string
	RegisteredOn            string
	DeregisteredOn          string
	PreviousState           string
	StateRegistrationNumber string
	ModifiedSinceLastReport string
	CurrentNameIndicator    string
	ABN                     string
	CurrentName             string
	CurrentNameStart        string
}

// Register is the register data attached to a company view.
type Register struct {
	Name                    string   `json:"name"`
	Type                    string   `json:"type"`
	Class                   string   `json:"class"`
	SubClass                string   `json:"sub_class"`
	Status                  string   `json:"status"`
	RegisteredOn            *string  `json:"registered_on"`
	DeregisteredOn          *string  `json:"deregistered_on"`
	PreviousState           *string  `json:"previous_state"`
	StateRegistrationNumber *string  `json:"state_registration_number"`
	CurrentName             *string  `json:"current_name"`
	CurrentNameStart        *string  `json:"current_name_start"`
	FormerNames             []string `json:"former_names"`
}

// Company is the /v1/companies/{acn_or_abn} view: all notices, newest first.
type Company struct {
	ACN         *string   `json:"acn"`
	ABN         *string   `json:"abn"`
	Name        *string   `json:"name"`
	Register    *Register `json:"register"`
	NoticeCount int       `json:"notice_count"`
	Notices     []Notice  `json:"notices"`
}
