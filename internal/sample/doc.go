// Package sample writes a realistic, deterministic sample of the two files
// the service ingests: published notices (JSON Lines) and the ASIC company
// register (the company dataset's tab-separated form). `noticesd sample`
// and `make run` use it; benchmarks use it at 1,000,000 notices and
// 4,000,000 register rows.
//
// # Determinism and size
//
// The same Options give byte-identical files (math/rand/v2 PCG streams
// seeded from Options.Seed; no clock, no map iteration). Every company's
// details derive from (seed, company number), so notices and register rows
// agree without either file being held in memory; the generator keeps 4
// bytes per register company plus the pending notices of open
// administrations. Output is streamed; WriteFiles gzips on a second
// goroutine. Identical output across Go releases is not promised, as
// math/rand/v2's derived methods may change.
//
// # Notices
//
// Notices are written in ascending published_at order, the order a feed
// delivers them. published_at is RFC 3339 UTC with a Z and whole seconds,
// always within Sydney business hours (09:00 to 17:00 Australia/Sydney,
// Monday to Friday, not 25-26 December or 1 January), over Options.Years
// (default 5) years up to Options.Now; daily volume rises linearly so the
// latest day has 2.5 times the density of the earliest.
//
// source_id looks like the regulator's ids ("2A8013542": a digit, a letter,
// seven digits), unique and ascending. source_url is
// https://publishednotices.asic.gov.au/browsesearch-notices/notice-details/<slug>/<source_id>,
// the slug being the company name as on the notice.
//
// About 80% of notices are deregistration notices (notice_purpose
// Deregistration, appointment_type null, no practitioners); the generator
// steers the running share to 80%. The rest are chains of notices about one
// company's external administration, each notice published when the
// previous one's delay has passed: for example appointment of liquidator,
// meeting of creditors, intention to declare dividend, declaration of
// dividend, deregistration following winding up. A voluntary
// administration may turn into a deed of company arrangement or a
// creditors' voluntary liquidation, a provisional liquidation or a winding
// up application into a court liquidation. The same practitioners (one or
// two of one firm's office, usually in the company's state) sign every
// notice of a chain.
//
// Notice codes, titles and purposes (open sets; these are the sample's):
//
//	WUA Notice of application for winding up order                  Other
//	WUO Notice of winding up order and appointment of liquidator    Appointment
//	PLQ Notice of appointment of provisional liquidator             Appointment
//	APL Notice of appointment of liquidator                         Appointment
//	AVA Notice of appointment of administrator                      Appointment
//	DCA Notice of execution of deed of company arrangement          Appointment
//	ARM Notice of appointment of receiver and manager               Appointment
//	ASR Notice of appointment of restructuring practitioner         Appointment
//	MCR Notice of meeting of creditors                              Meeting
//	FMC Notice of first meeting of creditors                        Meeting
//	SMC Notice of second meeting of creditors                       Meeting
//	MMB Notice of final meeting of members                          Meeting
//	DIV Notice of intention to declare dividend                     Dividend
//	DDV Notice of declaration of dividend                           Dividend
//	PDF Notice to creditors to submit formal proof of debt or claim Other
//	CTA Notice of ceasing to act as receiver and manager            Other
//	RPN Notice of proposal of restructuring plan                    Other
//	ADD Deregistration of company (ASIC initiated)                  Deregistration
//	VDR Application for deregistration (voluntary)                  Deregistration
//	DRL Deregistration of company following winding up              Deregistration
//
// appointment_type is one of Court Liquidation, Creditors' Voluntary
// Liquidation, Members' Voluntary Liquidation, Provisional Liquidation,
// Voluntary Administration, Deed of Company Arrangement, Receiver and
// Manager, Small Business Restructuring; it is null on deregistration
// notices and on winding-up applications (WUA: no appointment yet, no
// practitioners). Practitioner roles are the singular titles: Liquidator,
// Provisional Liquidator, Administrator, Deed Administrator, Receiver and
// Manager, Restructuring Practitioner.
//
// status is the company status the notice states: In Liquidation, Under
// External Administration (administration, deed, receivership,
// restructuring, provisional liquidation), Strike Off Action in Progress
// (ADD, VDR), Deregistered (DRL), Registered (WUA, CTA).
//
// state is the company's state, weighted NSW 32%, VIC 27%, QLD 21%, WA 9%,
// SA 6%, TAS, ACT and NT 2% each.
//
// company_name is the register's current name; on administration notices
// practitioners often add a suffix such as " (IN LIQUIDATION)" or
// " (ADMINISTRATORS APPOINTED)", and trustee companies appear as
// "... PTY LTD ATF THE SMITH FAMILY TRUST", others as
// "... PTY LTD trading as Bayside Plumbing". The text always contains
// company_name exactly; it names the ACN (or ABN), dates, places, amounts
// and, on appointment notices, the practitioners and their firm.
//
// Identifiers: a register company's notice carries acn and abn (78% when
// the company has an ABN), acn only (15%, and always when it has none) or
// abn only (7%). About 1% of notices that carry an acn carry it with a wrong
// check digit (the abn, if present, stays right), as on the real site; such
// ACNs are never in the register. About 3% of notices name companies the
// register does not hold (ACNs from 700 000 000 up); a tenth of those carry
// neither acn nor abn, only company_name.
//
// About 0.5% of notices replace an earlier notice of the same chain,
// published 1 to 10 days after it: replaces is notice.IDFor of the
// replaced notice's source_id, the text begins "This notice replaces the
// notice published on ...", and code, company and practitioners repeat.
//
// # Register
//
// The header is exactly the published dataset's (RegisterHeader). Options.
// Companies is the number of rows, not companies: there is one row per
// company name, and about 17% of companies have one to three former names.
// Rows are in ACN order; ACNs (valid check digits, from 001 000 000 up) rise
// with registration date, as ASIC issues them. Each company's former-name
// rows come first, oldest first, with Current Name Indicator blank and
// Current Name / Current Name Start Date giving the current name and the
// day it took effect (as the real file does); the current-name row comes
// last with Current Name Indicator "Y" and those two columns blank. Other
// columns repeat on every row of a company.
//
// Values: Type APTY or APUB; Class LMSH, LMGT or UNLM; Sub Class PROP,
// PSTC, HUNT, ULSN, NLTD, ULST, LIST (the dataset's codes: HUNT is the home
// unit company); Status REGD, DRGD, SOFF or EXAD; dates DD/MM/YYYY, blank
// for none; Date of Deregistration only on DRGD rows. Previous State of
// Registration and State Registration number are filled for companies
// registered before 1991 only. Modified since last report is "Y" when
// something changed in the last 7 days. ABN is the company's ABN (two
// check digits then the ACN, as ident.ABNFromACN); about 12% of companies
// have none and the column is blank. The real dataset's help file says an
// absent ABN may also appear as "0"; readers should accept both.
//
// The register agrees with the notices: a company with an appointment is
// EXAD; one with an ASIC or voluntary deregistration notice is SOFF, then
// DRGD 61 days after the notice; one deregistered after winding up is DRGD
// from that notice's day. Companies without notices are mostly REGD, with
// some DRGD, SOFF and EXAD. A company is chosen for a notice only if it is
// registered and has not been registered or renamed in the 90 days before,
// so notices always give the name current at the time and the register's
// current name.
package sample
