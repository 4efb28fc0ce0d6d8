package sample

import "bufio"

// RegisterHeader is the header row of the ASIC company dataset, as
// published on data.gov.au (tab-separated).
const RegisterHeader = "Company Name\tACN\tType\tClass\tSub Class\tStatus\tDate of Registration\tDate of Deregistration\tPrevious State of Registration\tState Registration number\tModified since last report\tCurrent Name Indicator\tABN\tCurrent Name\tCurrent Name Start Date"

// writeRegister writes the header and one row per company name, companies
// in ACN order, each company's former names (oldest first) before its
// current name.
func (g *generator) writeRegister(w *bufio.Writer) error {
	if _, err := w.WriteString(RegisterHeader + "\n"); err != nil {
		return err
	}
	var b []byte
	for i := int64(0); i < g.cs.n; i++ {
		c := g.cs.load(i)
		status, dereg := g.registerStatus(c)
		recent := g.today - 7
		modified := c.lastStart() > recent || dereg > recent || int32(g.events[i]&0xFFFFFF) > recent
		cur := len(c.names) - 1
		for k := range c.names {
			b = b[:0]
			b = append(b, c.names[k]...)
			b = append(b, '\t')
			b = append(b, c.acn...)
			b = append(b, '\t')
			f := &companyForms[c.form]
			b = append(b, f.typ...)
			b = append(b, '\t')
			b = append(b, f.class...)
			b = append(b, '\t')
			b = append(b, f.sub...)
			b = append(b, '\t')
			b = append(b, registerStatus[status]...)
			b = append(b, '\t')
			b = appendDMY(b, c.reg)
			b = append(b, '\t')
			if dereg > 0 {
				b = appendDMY(b, dereg)
			}
			b = append(b, '\t')
			b = append(b, c.prevState...)
			b = append(b, '\t')
			b = append(b, c.stateRegNo...)
			b = append(b, '\t')
			if modified {
				b = append(b, 'Y')
			}
			b = append(b, '\t')
			if k == cur {
				b = append(b, 'Y')
			}
			b = append(b, '\t')
			b = append(b, c.abn...)
			b = append(b, '\t')
			if k != cur {
				b = append(b, c.names[cur]...)
				b = append(b, '\t')
				b = appendDMY(b, c.lastStart())
			} else {
				b = append(b, '\t')
			}
			b = append(b, '\n')
			if _, err := w.Write(b); err != nil {
				return err
			}
			g.sum.RegisterRows++
		}
	}
	return nil
}

// registerStatus returns a register company's status code and
// deregistration day (0 when none), from its notices if it has any: an
// appointment makes it EXAD; an ASIC or voluntary deregistration notice makes
// it SOFF, then DRGD two months (61 days) after the notice; a deregistration
// after winding up makes it DRGD that day.
func (g *generator) registerStatus(c *company) (uint8, int32) {
	ev := g.events[c.idx]
	dn := int32(ev & 0xFFFFFF)
	switch ev >> 24 {
	case evTouched:
		return regREGD, 0
	case evEXAD:
		return regEXAD, 0
	case evSOFF:
		if dn+61 <= g.today {
			return regDRGD, dn + 61
		}
		return regSOFF, 0
	case evDRGD:
		return regDRGD, dn
	}
	if c.base == regDRGD {
		return regDRGD, c.baseDereg
	}
	return c.base, 0
}
