package sample

// code indexes noticeTypes.
type code uint8

// The notice types of the sample; see doc.go for the table.
const (
	cWUA code = iota
	cWUO
	cPLQ
	cAPL
	cAVA
	cDCA
	cARM
	cASR
	cMCR
	cFMC
	cSMC
	cMMB
	cDIV
	cDDV
	cPDF
	cCTA
	cRPN
	cADD
	cVDR
	cDRL
	numCodes
)

// Notice purposes.
const (
	purposeAppointment    = "Appointment"
	purposeMeeting        = "Meeting"
	purposeDividend       = "Dividend"
	purposeDeregistration = "Deregistration"
	purposeOther          = "Other"
)

// Company statuses as stated on notices.
const (
	statusRegistered = "Registered"
	statusLiq        = "In Liquidation"
	statusExAd       = "Under External Administration"
	statusSoff       = "Strike Off Action in Progress"
	statusDeregd     = "Deregistered"
)

// noticeType is one notice type: short code, title and purpose.
type noticeType struct {
	code, title, purpose string
}

var noticeTypes = [numCodes]noticeType{
	cWUA: {"WUA", "Notice of application for winding up order", purposeOther},
	cWUO: {"WUO", "Notice of winding up order and appointment of liquidator", purposeAppointment},
	cPLQ: {"PLQ", "Notice of appointment of provisional liquidator", purposeAppointment},
	cAPL: {"APL", "Notice of appointment of liquidator", purposeAppointment},
	cAVA: {"AVA", "Notice of appointment of administrator", purposeAppointment},
	cDCA: {"DCA", "Notice of execution of deed of company arrangement", purposeAppointment},
	cARM: {"ARM", "Notice of appointment of receiver and manager", purposeAppointment},
	cASR: {"ASR", "Notice of appointment of restructuring practitioner", purposeAppointment},
	cMCR: {"MCR", "Notice of meeting of creditors", purposeMeeting},
	cFMC: {"FMC", "Notice of first meeting of creditors", purposeMeeting},
	cSMC: {"SMC", "Notice of second meeting of creditors", purposeMeeting},
	cMMB: {"MMB", "Notice of final meeting of members", purposeMeeting},
	cDIV: {"DIV", "Notice of intention to declare dividend", purposeDividend},
	cDDV: {"DDV", "Notice of declaration of dividend", purposeDividend},
	cPDF: {"PDF", "Notice to creditors to submit formal proof of debt or claim", purposeOther},
	cCTA: {"CTA", "Notice of ceasing to act as receiver and manager", purposeOther},
	cRPN: {"RPN", "Notice of proposal of restructuring plan", purposeOther},
	cADD: {"ADD", "Deregistration of company (ASIC initiated)", purposeDeregistration},
	cVDR: {"VDR", "Application for deregistration (voluntary)", purposeDeregistration},
	cDRL: {"DRL", "Deregistration of company following winding up", purposeDeregistration},
}

// kind is the kind of external administration a chain of notices follows.
type kind uint8

// The chain kinds. kCourtApp is a winding-up application that has not (yet)
// led to an appointment.
const (
	kCourtApp kind = iota
	kCourt
	kProvisional
	kCVL
	kMVL
	kVA
	kDOCA
	kRM
	kSBR
	numKinds
)

// stage is one possible next notice in a chain.
type stage struct {
	code     code
	pct      int  // chance, in percent, that the chain reaches this stage
	min, max int  // days after the previous notice
	after    code // only after this code (0 = any; cWUA is never a follow-up)
	to       kind // the chain becomes this kind when the stage is emitted
	switches bool // whether to applies
}

// kindInfo describes a kind: its appointment_type, practitioner role, the
// status on its notices, the name suffix practitioners often add, and its
// stages (stages[0] is the notice that opens it).
type kindInfo struct {
	appointment   string // "" gives a null appointment_type
	role, roles   string // singular and plural, lower case
	title, titles string // singular and plural, as signed
	status        string
	suffix        [2]string // one practitioner, several
	suffixPct     int
	liquidation   bool
	weight        int // per cent of fresh chains
	maxPracs      int
	stages        []stage
}

var kinds = [numKinds]kindInfo{
	kCourtApp: {
		appointment: "", role: "liquidator", roles: "liquidators", title: "Liquidator", titles: "Liquidators",
		status: statusRegistered, weight: 9, maxPracs: 0,
		stages: []stage{
			{code: cWUA},
			{code: cWUO, pct: 85, min: 28, max: 70, to: kCourt, switches: true},
		},
	},
	kCourt: {
		appointment: "Court Liquidation", role: "liquidator", roles: "joint and several liquidators",
		title: "Liquidator", titles: "Joint and Several Liquidators",
		status: statusLiq, suffix: [2]string{" (IN LIQUIDATION)", " (IN LIQUIDATION)"}, suffixPct: 70,
		liquidation: true, weight: 12, maxPracs: 2,
		stages: []stage{
			{code: cWUO},
			{code: cMCR, pct: 35, min: 20, max: 90},
			{code: cPDF, pct: 15, min: 30, max: 120},
			{code: cDIV, pct: 25, min: 120, max: 500},
			{code: cDDV, pct: 55, min: 28, max: 60, after: cDIV},
			{code: cDRL, pct: 30, min: 150, max: 700},
		},
	},
	kProvisional: {
		appointment: "Provisional Liquidation", role: "provisional liquidator", roles: "joint and several provisional liquidators",
		title: "Provisional Liquidator", titles: "Joint and Several Provisional Liquidators",
		status: statusExAd, suffix: [2]string{" (PROVISIONAL LIQUIDATOR APPOINTED)", " (PROVISIONAL LIQUIDATORS APPOINTED)"}, suffixPct: 50,
		liquidation: true, weight: 2, maxPracs: 2,
		stages: []stage{
			{code: cPLQ},
			{code: cWUO, pct: 60, min: 14, max: 45, to: kCourt, switches: true},
		},
	},
	kCVL: {
		appointment: "Creditors' Voluntary Liquidation", role: "liquidator", roles: "joint and several liquidators",
		title: "Liquidator", titles: "Joint and Several Liquidators",
		status: statusLiq, suffix: [2]string{" (IN LIQUIDATION)", " (IN LIQUIDATION)"}, suffixPct: 70,
		liquidation: true, weight: 37, maxPracs: 2,
		stages: []stage{
			{code: cAPL},
			{code: cMCR, pct: 55, min: 5, max: 25},
			{code: cPDF, pct: 20, min: 30, max: 120},
			{code: cDIV, pct: 30, min: 90, max: 400},
			{code: cDDV, pct: 55, min: 28, max: 60, after: cDIV},
			{code: cDRL, pct: 35, min: 120, max: 600},
		},
	},
	kMVL: {
		appointment: "Members' Voluntary Liquidation", role: "liquidator", roles: "joint and several liquidators",
		title: "Liquidator", titles: "Joint and Several Liquidators",
		status: statusLiq, suffix: [2]string{" (IN LIQUIDATION)", " (IN LIQUIDATION)"}, suffixPct: 40,
		liquidation: true, weight: 6, maxPracs: 2,
		stages: []stage{
			{code: cAPL},
			{code: cMMB, pct: 55, min: 60, max: 300},
			{code: cDRL, pct: 60, min: 90, max: 200},
		},
	},
	kVA: {
		appointment: "Voluntary Administration", role: "administrator", roles: "joint and several administrators",
		title: "Administrator", titles: "Joint and Several Administrators",
		status: statusExAd, suffix: [2]string{" (ADMINISTRATOR APPOINTED)", " (ADMINISTRATORS APPOINTED)"}, suffixPct: 65,
		weight: 18, maxPracs: 2,
		stages: []stage{
			{code: cAVA},
			{code: cFMC, pct: 95, min: 5, max: 8},
			{code: cSMC, pct: 85, min: 18, max: 35},
			{code: cDCA, pct: 40, min: 1, max: 14, to: kDOCA, switches: true},
			{code: cAPL, pct: 75, min: 0, max: 3, to: kCVL, switches: true},
		},
	},
	kDOCA: {
		appointment: "Deed of Company Arrangement", role: "deed administrator", roles: "joint and several deed administrators",
		title: "Deed Administrator", titles: "Joint and Several Deed Administrators",
		status: statusExAd, suffix: [2]string{" (SUBJECT TO DEED OF COMPANY ARRANGEMENT)", " (SUBJECT TO DEED OF COMPANY ARRANGEMENT)"}, suffixPct: 40,
		weight: 0, maxPracs: 2,
		stages: []stage{
			{code: cDCA},
			{code: cDIV, pct: 35, min: 90, max: 400},
			{code: cDDV, pct: 50, min: 28, max: 60, after: cDIV},
		},
	},
	kRM: {
		appointment: "Receiver and Manager", role: "receiver and manager", roles: "joint and several receivers and managers",
		title: "Receiver and Manager", titles: "Joint and Several Receivers and Managers",
		status: statusExAd, suffix: [2]string{" (RECEIVER AND MANAGER APPOINTED)", " (RECEIVERS AND MANAGERS APPOINTED)"}, suffixPct: 50,
		weight: 8, maxPracs: 2,
		stages: []stage{
			{code: cARM},
			{code: cCTA, pct: 40, min: 90, max: 400},
		},
	},
	kSBR: {
		appointment: "Small Business Restructuring", role: "restructuring practitioner", roles: "restructuring practitioners",
		title: "Restructuring Practitioner", titles: "Restructuring Practitioners",
		status: statusExAd, suffix: [2]string{" (RESTRUCTURING PRACTITIONER APPOINTED)", " (RESTRUCTURING PRACTITIONER APPOINTED)"}, suffixPct: 50,
		weight: 8, maxPracs: 1,
		stages: []stage{
			{code: cASR},
			{code: cRPN, pct: 70, min: 10, max: 20},
		},
	},
}

// kindWeightTotal is the sum of kinds[*].weight.
var kindWeightTotal = func() int {
	t := 0
	for _, k := range kinds {
		t += k.weight
	}
	return t
}()
