package sqlite

import (
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
)

// synth generates a deterministic synthetic corpus shaped like the real one:
// 80% deregistration notices with short boilerplate, the rest insolvency
// notices with Zipf-distributed body words, spread over three years, states
// weighted by population, companies drawn from a pool a third the size of
// the corpus (so companies have several notices).
type synth struct {
	r         *rand.Rand
	n         int
	companies int
	zipf      *rand.Zipf
	vocab     []string
	start     time.Time
	span      time.Duration
}

var (
	synthDomain = strings.Fields(`creditors liquidator meeting dividend proof debt company administrator
		voluntary administration court liquidation members resolution appointed notice insolvency receiver
		manager claims lodge declared final first interim secured unsecured employee entitlements report
		deed arrangement wound order federal supreme winding application director shareholders assets`)
	synthNameWords = strings.Fields(`harbour pacific coastal mining alpine southern northern eastern western
		bright summit river valley golden silver red blue green ocean desert forest city metro urban rural
		capital prime united global national royal crown eagle falcon phoenix star sun moon iron steel stone
		timber water energy solar wind transport logistics building construction property holdings`)
	synthSuffixes  = []string{"PTY LTD", "PTY LTD", "PTY LTD", "LIMITED", "PTY. LTD."}
	synthFirst     = strings.Fields(`jane john mary peter sarah david emma michael lucy james anna robert`)
	synthLast      = strings.Fields(`smith jones williams brown wilson taylor nguyen johnson martin white lee walker hall young king wright`)
	synthStates    = []string{"NSW", "NSW", "NSW", "VIC", "VIC", "VIC", "QLD", "QLD", "WA", "SA", "ACT", "TAS", "NT"}
	synthInsolvent = []struct{ code, purpose, appt, typ, status string }{
		{"LQ", "Appointment", "Court Liquidation", "Appointment of Liquidator", "In Liquidation"},
		{"LQ", "Appointment", "Creditors' Voluntary Liquidation", "Appointment of Liquidator", "In Liquidation"},
		{"LQ", "Appointment", "Members' Voluntary Liquidation", "Appointment of Liquidator", "In Liquidation"},
		{"VA", "Appointment", "Voluntary Administration", "Appointment of Administrator", "Under Administration"},
		{"RM", "Appointment", "Receivership", "Appointment of Receiver and Manager", "Under External Administration"},
		{"MC", "Meeting", "Creditors' Voluntary Liquidation", "Notice of Meeting of Creditors", "In Liquidation"},
		{"PD", "Proof of Debt", "Court Liquidation", "Notice to Creditors to Submit Proofs of Debt", "In Liquidation"},
		{"DV", "Dividend", "Creditors' Voluntary Liquidation", "Notice of Intention to Declare Dividend", "In Liquidation"},
		{"FM", "Meeting", "Members' Voluntary Liquidation", "Notice of Final Meeting", "In Liquidation"},
	}
)

func newSynth(seed int64, n int) *synth {
	r := rand.New(rand.NewSource(seed))
	vocab := append([]string(nil), synthDomain...)
	syll := strings.Fields("ka lo mi ne ru sa te vi bo da fe gi ho ju ly")
	for len(vocab) < 3000 {
		w := syll[r.Intn(len(syll))] + syll[r.Intn(len(syll))] + syll[r.Intn(len(syll))]
		vocab = append(vocab, w)
	}
	return &synth{
		r: r, n: n, companies: max(n/3, 1000),
		zipf:  rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1)),
		vocab: vocab,
		start: time.Date(2023, 11, 20, 0, 0, 0, 0, time.UTC),
		span:  3 * 365 * 24 * time.Hour,
	}
}

func (g *synth) companyACN(i int) string {
	first8 := fmt.Sprintf("%08d", (i*7919+1000003)%100000000)
	return first8 + fmt.Sprint(ident.ACNCheckDigit(first8))
}

func (g *synth) companyName(i int) string {
	w := synthNameWords
	return strings.ToUpper(w[i%len(w)]+" "+w[(i/len(w))%len(w)]) + fmt.Sprintf(" %d ", i%97) + synthSuffixes[i%len(synthSuffixes)]
}

func (g *synth) words(k int) string {
	var b strings.Builder
	for i := 0; i < k; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(g.vocab[g.zipf.Uint64()])
	}
	return b.String()
}

func (g *synth) notice(i int) notice.Notice {
	r := g.r
	c := r.Intn(g.companies)
	acn := g.companyACN(c)
	at := g.start.Add(time.Duration(float64(g.span) * float64(i) / float64(max(g.n, 1)))).Add(time.Duration(r.Intn(3600)) * time.Second)
	n := notice.Notice{
		SourceID:      fmt.Sprintf("SYN-%09d", i),
		PublishedAt:   notice.Timestamp(at),
		PublishedDate: notice.PublishedDate(at),
		CompanyName:   g.companyName(c),
		State:         synthStates[r.Intn(len(synthStates))],
		Practitioners: []notice.Practitioner{},
	}
	n.ID = notice.IDFor(n.SourceID)
	url := "https://notices.example.test/" + n.SourceID
	n.SourceURL = &url
	switch r.Intn(10) {
	case 0:
		abn := ident.ABNFromACN(acn)
		n.ABN = &abn
	case 1:
		abn := ident.ABNFromACN(acn)
		n.ACN, n.ABN = &acn, &abn
	default:
		n.ACN = &acn
	}
	if r.Intn(5) != 0 {
		n.NoticeType, n.NoticeCode, n.NoticePurpose, n.Status = "Deregistration", "DR", "Deregistration", "Registered"
		n.Text = "Notice is hereby given that " + n.CompanyName + " will be deregistered under section 601AA " + g.words(8)
		return n
	}
	k := synthInsolvent[r.Intn(len(synthInsolvent))]
	n.NoticeType, n.NoticeCode, n.NoticePurpose, n.Status = k.typ, k.code, k.purpose, k.status
	appt := k.appt
	n.AppointmentType = &appt
	for p := 0; p < 1+r.Intn(2); p++ {
		n.Practitioners = append(n.Practitioners, notice.Practitioner{
			Name: titleASCII(synthFirst[r.Intn(len(synthFirst))] + " " + synthLast[r.Intn(len(synthLast))]),
			Firm: titleASCII(synthLast[r.Intn(len(synthLast))] + " " + synthNameWords[r.Intn(len(synthNameWords))] + " Advisory"),
			Role: "Liquidator",
		})
	}
	n.Text = k.typ + ". " + g.words(60+r.Intn(120))
	return n
}

// registerRows returns n rows of distinct companies (and former names).
func (g *synth) registerRows(n int) []notice.RegisterRow {
	rows := make([]notice.RegisterRow, 0, n+1)
	for i := 0; len(rows) < n; i++ {
		rows = append(rows, g.registerRow(i, i%5 == 0)...)
	}
	return rows[:n]
}

func (g *synth) registerRow(i int, former bool) []notice.RegisterRow {
	acn := g.companyACN(i)
	cur := notice.RegisterRow{
		CompanyName: g.companyName(i), ACN: acn, Type: "APTY", Class: "LMSH", SubClass: "PROP", Status: "REGD",
		RegisteredOn: "2001-03-04", CurrentNameIndicator: "Y", ABN: ident.ABNFromACN(acn), ModifiedSinceLastReport: "N",
	}
	if !former {
		return []notice.RegisterRow{cur}
	}
	old := cur
	old.CompanyName, old.CurrentNameIndicator, old.CurrentName, old.CurrentNameStart = "FORMER "+cur.CompanyName, "", cur.CompanyName, "2012-06-30"
	return []notice.RegisterRow{old, cur}
}

// titleASCII upper-cases the first letter of each space-separated word
// (the synthetic names are ASCII).
func titleASCII(s string) string {
	b := []byte(s)
	for i := range b {
		if (i == 0 || b[i-1] == ' ') && b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}
