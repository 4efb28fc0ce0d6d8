package notice

import "github.com/noticesd/noticesd/internal/ident"

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

// IsCurrent reports whether the row is marked as its company's current name
// (the indicator "Y", in either case). A company is named by its first such
// row, else by its first row, on every path: the company view, the bulk
// screen and both backends' register loads.
func (r RegisterRow) IsCurrent() bool {
	return r.CurrentNameIndicator == "Y" || r.CurrentNameIndicator == "y"
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

// BuildCompany assembles the company view every backend answers: regs are
// the register rows of the company (in file order; for an ABN, those of the
// first ACN it maps to), ns its notices newest first. The register block
// comes from the current-name row (the first row when none is marked), the
// other names as former_names in file order. acn and abn come from the
// register, else from the newest notice carrying the other identifier; the
// name is the register's current name, else the newest notice's
// company_name.
func BuildCompany(id ident.ID, regs []RegisterRow, ns []Notice) Company {
	c := Company{Notices: ns, NoticeCount: len(ns)}
	var acn, abn string
	if id.Kind == ident.ABN {
		abn = id.Value
	} else {
		acn = id.Value
	}
	if len(regs) > 0 {
		cur := 0
		for i, r := range regs {
			if r.IsCurrent() {
				cur = i
				break
			}
		}
		r := regs[cur]
		reg := &Register{
			Name:                    r.CompanyName,
			Type:                    r.Type,
			Class:                   r.Class,
			SubClass:                r.SubClass,
			Status:                  r.Status,
			RegisteredOn:            blankNil(r.RegisteredOn),
			DeregisteredOn:          blankNil(r.DeregisteredOn),
			PreviousState:           blankNil(r.PreviousState),
			StateRegistrationNumber: blankNil(r.StateRegistrationNumber),
			CurrentName:             blankNil(r.CurrentName),
			CurrentNameStart:        blankNil(r.CurrentNameStart),
			FormerNames:             []string{},
		}
		for i, o := range regs {
			if i != cur {
				reg.FormerNames = append(reg.FormerNames, o.CompanyName)
			}
		}
		c.Register = reg
		c.Name = &reg.Name
		acn = r.ACN
		if abn == "" {
			abn = r.ABN
		}
	}
	// Fill what the register did not say from the newest notice saying it.
	for i := range ns {
		n := &ns[i]
		if acn == "" && n.ACN != nil && (id.Kind != ident.ABN || (n.ABN != nil && *n.ABN == id.Value)) {
			acn = *n.ACN
		}
		if abn == "" && n.ABN != nil && (id.Kind != ident.ACN || (n.ACN != nil && *n.ACN == id.Value)) {
			abn = *n.ABN
		}
		if c.Name == nil && n.CompanyName != "" {
			name := n.CompanyName
			c.Name = &name
		}
	}
	if acn != "" {
		c.ACN = &acn
	}
	if abn != "" {
		c.ABN = &abn
	}
	return c
}

func blankNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
