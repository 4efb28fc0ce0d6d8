package sample

import (
	"math/rand/v2"
	"strconv"
)

// noticeCtx is what a notice's text is written from.
type noticeCtx struct {
	c           *company
	name        string // company name as on the notice
	ident       string // "ACN 123 456 789", "ABN 12 345 678 901" or ""
	k           kind
	code        code
	day         int32 // publication day (Sydney)
	pracs       [2]*practitioner
	np          int
	replacedDay int32 // publication day of the replaced notice, or -1
}

// textWriter appends notice texts; the wording varies so that full-text
// search over the sample is meaningful.
type textWriter struct {
	b []byte
	r *rand.Rand
}

func (t *textWriter) s(parts ...string) {
	for _, p := range parts {
		t.b = append(t.b, p...)
	}
}

func (t *textWriter) pick(list ...string) { t.b = append(t.b, list[t.r.IntN(len(list))]...) }

func (t *textWriter) date(day int32) { t.b = appendLongDate(t.b, day) }

func (t *textWriter) between(day int32, lo, hi int) int32 {
	return day + int32(lo+t.r.IntN(hi-lo+1))
}

func (t *textWriter) co(x *noticeCtx) {
	t.s(x.name)
	if x.ident == "" {
		return
	}
	if t.r.IntN(3) == 0 {
		t.s(" ", x.ident)
	} else {
		t.s(" (", x.ident, ")")
	}
}

func (t *textWriter) pracNames(x *noticeCtx) {
	t.s(x.pracs[0].name)
	if x.np > 1 {
		t.s(" and ", x.pracs[1].name)
	}
}

func (t *textWriter) firm(x *noticeCtx) { t.s(firms[x.pracs[0].firm]) }

func (t *textWriter) address(st int) {
	info := &states[st]
	t.s("Level ")
	t.b = strconv.AppendInt(t.b, int64(1+t.r.IntN(40)), 10)
	t.s(", ")
	t.b = strconv.AppendInt(t.b, int64(1+t.r.IntN(600)), 10)
	t.s(" ")
	t.pick(info.streets...)
	t.s(", ", info.city, " ", info.code, " ", info.postcode)
}

// appointed writes "NAMES of FIRM, ADDRESS, was/were appointed ROLE."
func (t *textWriter) appointed(x *noticeCtx) {
	t.pracNames(x)
	t.s(" of ")
	t.firm(x)
	t.s(", ")
	t.address(x.pracs[0].state)
	t.s(", ")
	t.wasWere(x)
	t.s(" appointed ")
	t.role(x)
	t.s(".")
}

func (t *textWriter) wasWere(x *noticeCtx) {
	if x.np > 1 {
		t.s("were")
	} else {
		t.s("was")
	}
}

func (t *textWriter) role(x *noticeCtx) {
	if x.np > 1 {
		t.s(kinds[x.k].roles)
	} else {
		t.s(kinds[x.k].role)
	}
}

func (t *textWriter) title(x *noticeCtx) {
	if x.np > 1 {
		t.s(kinds[x.k].titles)
	} else {
		t.s(kinds[x.k].title)
	}
}

func (t *textWriter) court(st int) {
	if t.r.IntN(100) < 60 {
		t.s("Supreme Court of ", states[st].long)
	} else {
		t.s("Federal Court of Australia")
	}
}

func (t *textWriter) plaintiff() {
	switch v := t.r.IntN(100); {
	case v < 40:
		t.s("the Deputy Commissioner of Taxation")
	case v < 60:
		t.pick(lenders...)
	case v < 85:
		t.s(titleCase(pick(t.r, surnames)+" "+pick(t.r, industries)), " Pty Ltd")
	default:
		t.s("a creditor of the company")
	}
}

func (t *textWriter) meetTime() {
	t.pick("9:30 am", "10:00 am", "10:30 am", "11:00 am", "11:30 am", "2:00 pm", "2:30 pm", "3:00 pm")
}

func (t *textWriter) venue(x *noticeCtx) {
	switch t.r.IntN(4) {
	case 0:
		t.s("by video conference (Microsoft Teams)")
	case 1:
		t.s("virtually via Zoom")
	case 2:
		t.s("at the offices of ")
		t.firm(x)
		t.s(", ")
		t.address(x.pracs[0].state)
	default:
		t.s("at ")
		t.address(x.pracs[0].state)
	}
}

func (t *textWriter) business(x *noticeCtx) {
	if t.r.IntN(100) >= 45 {
		return
	}
	st := &states[x.c.state]
	t.s(" ")
	t.pick("The company operated a ", "The company conducted a ", "The company carried on a ")
	t.s(industryDescs[x.c.industry], " business ")
	t.pick("from premises in ", "in ", "based in ")
	t.s(st.suburbs[t.r.IntN(len(st.suburbs))], ", ", st.code, ".")
}

func (t *textWriter) contact(x *noticeCtx) {
	p := x.pracs[0]
	switch t.r.IntN(3) {
	case 0:
		t.s(" Enquiries: ", p.first, " on ", p.phone, " or ", p.email, ".")
	case 1:
		t.s(" Creditors with questions should contact the office of the ")
		t.role(x)
		t.s(" on ", p.phone, ".")
	default:
		t.s(" Dated ")
		t.date(x.day)
		t.s(". ")
		t.pracNames(x)
		t.s(", ")
		t.title(x)
		t.s(", ")
		t.firm(x)
		t.s(".")
	}
}

func (t *textWriter) proofs(x *noticeCtx, meeting int32) {
	t.s(" Creditors wishing to attend ")
	t.pick("are requested to", "must")
	t.s(" lodge a proof of debt and, if applicable, a proxy form with the ")
	t.role(x)
	t.s(" by 4:00 pm on ")
	t.date(meeting - 1)
	t.s(".")
}

// write appends the text of one notice.
func (t *textWriter) write(x *noticeCtx) {
	if x.replacedDay >= 0 {
		t.s("This notice replaces the notice published on ")
		t.date(x.replacedDay)
		t.s(", which ")
		t.pick("contained an error in the meeting date", "misstated the company name",
			"contained an incorrect ACN", "omitted the details of a joint appointee", "gave the wrong venue")
		t.s(". ")
	}
	switch x.code {
	case cWUA:
		t.pick("Notice is given that an application for the winding up of ", "An application to wind up ")
		t.co(x)
		t.s(" was filed by ")
		t.plaintiff()
		t.s(" in the ")
		t.court(x.c.state)
		t.s(" on ")
		t.date(t.between(x.day, -21, -5))
		t.s(". The application will be heard at ")
		t.meetTime()
		t.s(" on ")
		t.date(t.between(x.day, 7, 35))
		t.s(" in ", states[x.c.state].city, ".")
		t.s(" Any person intending to appear at the hearing must file a notice of appearance, together with any affidavit on which the person intends to rely, and serve a copy on the plaintiff at least three days before the hearing.")
	case cWUO:
		t.s("On ")
		t.date(t.between(x.day, -6, -1))
		t.s(", the ")
		t.court(x.c.state)
		t.s(" ordered that ")
		t.co(x)
		t.s(" be wound up")
		t.pick(" in insolvency", "", " on the application of the Deputy Commissioner of Taxation")
		t.s(". ")
		t.appointed(x)
		t.business(x)
		t.contact(x)
	case cPLQ:
		t.s("On ")
		t.date(t.between(x.day, -5, -1))
		t.s(", the ")
		t.court(x.c.state)
		t.s(" appointed ")
		t.pracNames(x)
		t.s(" of ")
		t.firm(x)
		t.s(" as ")
		t.role(x)
		t.s(" of ")
		t.co(x)
		t.s(" on the application of ")
		t.plaintiff()
		t.s(". The ")
		t.role(x)
		t.s(" will secure and preserve the assets of the company pending the hearing of the winding up application.")
		t.contact(x)
	case cAPL:
		if x.k == kMVL {
			t.s("Notice is given that at a general meeting of ")
			t.co(x)
			t.s(" held on ")
			t.date(t.between(x.day, -7, -1))
			t.s(", the members resolved by special resolution that the company be wound up voluntarily and that ")
			t.pracNames(x)
			t.s(" of ")
			t.firm(x)
			t.s(" be appointed ")
			t.role(x)
			t.s(". The directors have made a declaration of solvency and creditors will be paid in full.")
		} else {
			switch t.r.IntN(3) {
			case 0:
				t.s("Notice is given that at a general meeting of members of ")
				t.co(x)
				t.s(" held on ")
				t.date(t.between(x.day, -7, -1))
				t.s(", it was resolved that the company be wound up voluntarily and for that purpose ")
			case 1:
				t.co(x)
				t.s(". At a meeting of creditors held on ")
				t.date(t.between(x.day, -5, -1))
				t.s(", the creditors resolved that the company be wound up and ")
			default:
				t.s("Notice is given that on ")
				t.date(t.between(x.day, -5, -1))
				t.s(" the members of ")
				t.co(x)
				t.s(" resolved under section 491 of the Corporations Act 2001 that the company be wound up and ")
			}
			t.appointed(x)
		}
		t.business(x)
		t.contact(x)
	case cAVA:
		t.co(x)
		t.s(". Notice is given that on ")
		t.date(t.between(x.day, -3, -1))
		t.s(" ")
		t.pracNames(x)
		t.s(" of ")
		t.firm(x)
		t.s(", ")
		t.address(x.pracs[0].state)
		t.s(", ")
		t.wasWere(x)
		t.s(" appointed ")
		t.role(x)
		t.pick(" of the company under section 436A of the Corporations Act 2001 by resolution of the directors.",
			" of the company by a secured creditor under section 436C of the Corporations Act 2001.",
			" of the company by the board under section 436A.")
		t.business(x)
		t.contact(x)
	case cDCA:
		t.s("Notice is given that on ")
		t.date(t.between(x.day, -4, -1))
		t.s(" ")
		t.co(x)
		t.s(" executed a deed of company arrangement. ")
		t.pracNames(x)
		t.s(" of ")
		t.firm(x)
		t.s(" ")
		t.wasWere(x)
		t.s(" appointed ")
		t.role(x)
		t.s(". The deed ")
		t.pick("provides for a contribution of $", "provides for the payment of $")
		t.b = strconv.AppendInt(t.b, int64(20+t.r.IntN(980))*1000, 10)
		t.pick(" by the director", " by a related entity", " from future trading profits")
		t.s(" to be distributed to participating creditors.")
		t.contact(x)
	case cARM:
		t.s("Notice is given that on ")
		t.date(t.between(x.day, -5, -1))
		t.s(" ")
		t.pracNames(x)
		t.s(" of ")
		t.firm(x)
		t.s(" ")
		t.wasWere(x)
		t.s(" appointed ")
		t.role(x)
		t.s(" of the property of ")
		t.co(x)
		t.s(" by ")
		t.pick(lenders...)
		t.s(" under a general security agreement.")
		t.business(x)
		t.contact(x)
	case cASR:
		t.co(x)
		t.s(". Notice is given that the directors appointed ")
		t.pracNames(x)
		t.s(" of ")
		t.firm(x)
		t.s(" as ")
		t.role(x)
		t.s(" under section 453B of the Corporations Act 2001 on ")
		t.date(t.between(x.day, -3, -1))
		t.s(". Creditors are invited to submit details of their claims.")
		t.business(x)
		t.contact(x)
	case cMCR, cFMC, cSMC:
		meet := t.between(x.day, 4, 12)
		t.s("Notice is given that ")
		switch x.code {
		case cFMC:
			t.s("the first meeting of creditors of ")
		case cSMC:
			t.s("the second meeting of creditors of ")
		default:
			t.pick("a meeting of creditors of ", "a meeting of the creditors of ")
		}
		t.co(x)
		t.s(" will be held ")
		t.venue(x)
		t.s(" on ")
		t.date(meet)
		t.s(" at ")
		t.meetTime()
		t.s(". ")
		switch x.code {
		case cFMC:
			t.s("The purpose of the meeting is to determine whether to appoint a committee of inspection and, if so, who are to be its members, and whether to replace the ")
			t.role(x)
			t.s(".")
		case cSMC:
			t.s("At the meeting creditors will decide whether the company should execute a deed of company arrangement, the administration should end, or the company should be wound up.")
		default:
			t.pick("The agenda includes the report of the liquidator on the conduct of the winding up and the approval of remuneration.",
				"The purpose of the meeting is to consider the appointment of a committee of inspection and the approval of the liquidator's remuneration.",
				"Creditors will receive a report on the progress of the liquidation and consider a proposal to destroy books and records.")
		}
		t.proofs(x, meet)
		t.contact(x)
	case cMMB:
		t.s("Notice is given that a final meeting of members of ")
		t.co(x)
		t.s(" will be held ")
		t.venue(x)
		t.s(" on ")
		t.date(t.between(x.day, 28, 40))
		t.s(" at ")
		t.meetTime()
		t.s(" for the purpose of laying before it an account showing how the winding up has been conducted and the property of the company disposed of.")
		t.contact(x)
	case cDIV:
		t.co(x)
		t.s(". Notice is given that a ")
		t.pick("first and final", "first", "second", "final", "interim")
		t.s(" dividend is to be declared on or about ")
		t.date(t.between(x.day, 35, 70))
		t.s(". Creditors whose debts or claims have not already been admitted are required on or before ")
		t.date(t.between(x.day, 21, 30))
		t.s(" to formally prove their debts or claims. If they do not, they will be excluded from the benefit of the dividend.")
		t.contact(x)
	case cDDV:
		t.s("A ")
		t.pick("first and final", "first", "final", "second")
		t.s(" dividend of ")
		t.b = strconv.AppendInt(t.b, int64(1+t.r.IntN(99)), 10)
		t.s(" cents in the dollar was declared on ")
		t.date(t.between(x.day, -5, -1))
		t.pick(" to unsecured creditors of ", " in respect of admitted priority claims of employees of ", " to admitted creditors of ")
		t.co(x)
		t.s(". Payment will be made by electronic funds transfer.")
		t.contact(x)
	case cPDF:
		t.s("Creditors of ")
		t.co(x)
		t.s(" are invited to submit formal proofs of debt or claim, with supporting documents, to ")
		t.pracNames(x)
		t.s(" of ")
		t.firm(x)
		t.s(", ")
		t.address(x.pracs[0].state)
		t.s(", by ")
		t.date(t.between(x.day, 21, 42))
		t.s(".")
		t.contact(x)
	case cCTA:
		t.s("Notice is given that on ")
		t.date(t.between(x.day, -5, -1))
		t.s(" ")
		t.pracNames(x)
		t.s(" of ")
		t.firm(x)
		t.s(" ceased to act as ")
		t.role(x)
		t.s(" of the property of ")
		t.co(x)
		t.s(". ")
		t.pick("Control of the remaining property has been returned to the directors.",
			"The secured debt has been repaid in full.",
			"The receivership is complete.")
	case cRPN:
		t.pracNames(x)
		t.s(" of ")
		t.firm(x)
		t.s(", ")
		t.role(x)
		t.s(" for ")
		t.co(x)
		t.s(", give notice that a restructuring plan has been proposed to the company's creditors. Creditors must decide whether to accept the plan by ")
		t.date(t.between(x.day, 14, 20))
		t.s(". Under the plan creditors are expected to receive about ")
		t.b = strconv.AppendInt(t.b, int64(5+t.r.IntN(60)), 10)
		t.s(" cents in the dollar.")
	case cADD:
		t.pick("Corporations Act 2001, subsection 601AB(3). ", "Australian Securities and Investments Commission. Notice under subsection 601AB(3) of the Corporations Act 2001. ", "")
		t.s("ASIC may deregister ")
		t.co(x)
		t.s(" two months after the publication of this notice, unless it is shown cause why the company should not be deregistered. ")
		t.pick("The company has not lodged a document it is required to lodge in the last 18 months.",
			"The annual review fee is more than 12 months overdue.",
			"ASIC has reason to believe the company is not carrying on business.",
			"The company's registered office address is no longer valid.",
			"The company has not responded to correspondence from ASIC.")
		t.s(" Registered in ", states[x.c.state].long, ".")
	case cVDR:
		t.pick("Corporations Act 2001, subsection 601AA(4). ", "")
		t.s("ASIC has received an application to deregister ")
		t.co(x)
		t.s(". Unless ASIC is shown cause why the company should not be deregistered, it will deregister the company two months after the publication of this notice. The application was lodged by ")
		t.pick("a director of the company", "the company", "a member of the company", "the former liquidator")
		t.s(", who confirmed that the company is not carrying on business, has assets worth less than $1,000 and has no outstanding liabilities.")
	case cDRL:
		t.co(x)
		t.s(" was deregistered on ")
		t.date(t.between(x.day, -10, -1))
		t.s(" under ")
		t.pick("section 509 of the Corporations Act 2001, three months after the liquidator lodged the final return of the winding up.",
			"section 601AB of the Corporations Act 2001 following the completion of its winding up.",
			"section 509(1) of the Corporations Act 2001 at the end of the winding up.")
		t.s(" Registered in ", states[x.c.state].long, ".")
	}
}
