package sample

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Register status codes of the ASIC company dataset.
const (
	regREGD uint8 = iota
	regDRGD
	regSOFF
	regEXAD
)

var registerStatus = [...]string{"REGD", "DRGD", "SOFF", "EXAD"}

// companyForm is a Type/Class/Sub Class combination with its share of
// companies (per mille).
type companyForm struct {
	typ, class, sub string
	permille        int
}

var companyForms = []companyForm{
	{"APTY", "LMSH", "PROP", 880},
	{"APTY", "LMSH", "PSTC", 30},
	{"APTY", "LMSH", "HUNT", 10},
	{"APTY", "UNLM", "PROP", 5},
	{"APUB", "LMGT", "ULSN", 40},
	{"APUB", "LMGT", "NLTD", 10},
	{"APUB", "LMSH", "ULST", 20},
	{"APUB", "LMSH", "LIST", 5},
}

// company is everything the sample knows about one company. Companies are
// numbered: 0..n-1 are in the register (ACNs ascending with the number),
// n and above are companies that notices name but the register lacks.
// All of it derives from (seed, number), so notices and register rows agree
// without either being held in memory.
type company struct {
	idx        int64
	inRegister bool
	acn        string // 9 digits, valid check digit
	abn        string // "" when the company has no ABN
	names      []string
	starts     []int32 // day each name took effect; starts[0] is registration
	reg        int32
	base       uint8 // register status when no notice changes it
	baseDereg  int32
	form       int
	prevState  string
	stateRegNo string
	state      int
	industry   int
	trust      string
	tradingAs  string
}

// current returns the company's current name.
func (c *company) current() string { return c.names[len(c.names)-1] }

// lastStart returns the day the current name took effect.
func (c *company) lastStart() int32 { return c.starts[len(c.starts)-1] }

// companies derives company records. It owns its random source, reseeded per
// company.
type companies struct {
	seed      uint64
	pcg       *rand.PCG
	r         *rand.Rand
	n         int64 // companies in the register
	lastCap   int   // former names allowed for company n-1
	stride    int64
	today     int32
	earliest  int32
	scratch   company
	nameBuf   []byte
	formTotal int
}

func newCompanies(seed uint64, today int32) *companies {
	pcg := rand.NewPCG(0, 0)
	cs := &companies{seed: seed, pcg: pcg, r: rand.New(pcg), today: today, earliest: dayOf(1975, 1, 1)}
	if cs.earliest > today-400 {
		cs.earliest = today - 400
	}
	for _, f := range companyForms {
		cs.formTotal += f.permille
	}
	return cs
}

// splitmix scrambles a 64-bit value (SplitMix64's finaliser).
func splitmix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

func (cs *companies) reseed(i int64) {
	cs.pcg.Seed(splitmix(cs.seed^0xC0FFEE), splitmix(uint64(i)+cs.seed*0x9E3779B97F4A7C15))
}

// formerDraw is the first draw of every company: how many former names it
// has (about 17% have one or more).
func formerDraw(r *rand.Rand) int {
	switch v := r.IntN(1000); {
	case v < 830:
		return 0
	case v < 958:
		return 1
	case v < 992:
		return 2
	default:
		return 3
	}
}

// size sets the register size from the number of rows wanted: companies are
// counted until their rows reach rows; the last one loses former names to
// make the total exact.
func (cs *companies) size(rows int) {
	remaining := rows
	var i int64
	for remaining > 0 {
		cs.reseed(i)
		n := 1 + formerDraw(cs.r)
		if n >= remaining {
			cs.lastCap = remaining - 1
			i++
			break
		}
		remaining -= n
		i++
	}
	cs.n = i
	if cs.n > 0 {
		cs.stride = 69_900_000 / cs.n
		if cs.stride < 1 {
			cs.stride = 1
		}
	}
}

// core draws what choosing a company for a notice needs: former-name count,
// registration day, base status and name start days. It leaves the random
// source positioned for load to continue.
func (cs *companies) core(i int64) *company {
	c := &cs.scratch
	cs.reseed(i)
	r := cs.r
	c.idx = i
	c.inRegister = i < cs.n
	f := formerDraw(r)
	if !c.inRegister {
		f = 0
	} else if i == cs.n-1 && f > cs.lastCap {
		f = cs.lastCap
	}
	// Registration days rise with the company number, as ACNs are issued
	// in order; density rises towards today (ago = span*u*u).
	span := float64(cs.today - cs.earliest)
	u := r.Float64()
	if c.inRegister {
		u = 1 - (float64(i)+u)/float64(cs.n)
	}
	c.reg = cs.today - int32(span*u*u) - 1
	c.starts = append(c.starts[:0], c.reg)
	for range f {
		c.starts = append(c.starts, c.reg+1+int32(r.IntN(int(max(1, cs.today-c.reg-1)))))
	}
	slices.Sort(c.starts)
	c.base = regREGD
	switch v := r.IntN(100); {
	case v < 8:
		c.base = regDRGD
		c.baseDereg = c.lastStart() + 1 + int32(r.IntN(int(max(1, cs.today-c.lastStart()))))
		if c.baseDereg > cs.today {
			c.baseDereg = cs.today
		}
	case v < 9:
		c.base = regSOFF
	case v < 10:
		c.base = regEXAD
	}
	return c
}

// load returns the full record of company i (valid until the next call).
func (cs *companies) load(i int64) *company {
	c := cs.core(i)
	r := cs.r
	if c.inRegister {
		first8 := 100_000 + i*cs.stride + int64(r.IntN(int(cs.stride)))
		c.acn = acnOf(first8)
	} else {
		j := i - cs.n
		first8 := 70_000_000 + (j*7+int64(r.IntN(7)))%29_999_999
		c.acn = acnOf(first8)
	}
	v := r.IntN(cs.formTotal)
	c.form = 0
	for k, f := range companyForms {
		if v < f.permille {
			c.form = k
			break
		}
		v -= f.permille
	}
	c.state = pickWeighted(r, stateWeights)
	c.industry = r.IntN(len(industries))
	c.abn = ""
	if r.IntN(100) < 88 || !c.inRegister {
		c.abn = abnOf(c.acn)
	}
	c.prevState, c.stateRegNo = "", ""
	if c.reg < dayOf(1991, 1, 1) {
		c.prevState = states[c.state].code
		c.stateRegNo = strconv.Itoa(100000 + r.IntN(99_900_000))
	}
	c.names = c.names[:0]
	n := len(c.starts)
	for k := range n {
		numbered := k == 0 && n > 1 && r.IntN(100) < 40 || r.IntN(100) < 2
		c.names = append(c.names, cs.name(c, numbered))
	}
	c.trust, c.tradingAs = "", ""
	if companyForms[c.form].sub == "PROP" && companyForms[c.form].typ == "APTY" {
		switch v := r.IntN(100); {
		case v < 8:
			c.trust = trustName(r)
		case v < 14:
			c.tradingAs = titleCase(pick(r, places) + " " + industries[c.industry])
		}
	}
	return c
}

// name builds one company name in the company's legal form.
func (cs *companies) name(c *company, numbered bool) string {
	r := cs.r
	b := cs.nameBuf[:0]
	form := companyForms[c.form]
	switch {
	case numbered:
		b = append(b, c.acn[0:3]...)
		b = append(b, ' ')
		b = append(b, c.acn[3:6]...)
		b = append(b, ' ')
		b = append(b, c.acn[6:9]...)
	case form.sub == "HUNT":
		b = strconv.AppendInt(b, int64(1+r.IntN(250)), 10)
		b = append(b, ' ')
		b = append(b, pick(r, surnames)...)
		b = append(b, pick(r, []string{" STREET", " ROAD", " AVENUE", " PARADE"})...)
	default:
		b = appendBaseName(b, r, c.industry)
	}
	switch {
	case form.sub == "PSTC":
		b = append(b, pick(r, []string{" SUPER", " SUPERANNUATION", " SUPER FUND"})...)
	case form.sub == "NLTD":
		b = append(b, pick(r, []string{" ASSOCIATION", " FOUNDATION", " CLUB", " INSTITUTE"})...)
	}
	switch {
	case form.sub == "NLTD":
	case form.class == "UNLM":
		b = append(b, " PTY"...)
	case form.typ == "APTY":
		switch v := r.IntN(100); {
		case v < 70:
			b = append(b, " PTY LTD"...)
		case v < 82:
			b = append(b, " PTY. LTD."...)
		case v < 92:
			b = append(b, " PTY LIMITED"...)
		default:
			b = append(b, " PROPRIETARY LIMITED"...)
		}
	default:
		if r.IntN(100) < 60 {
			b = append(b, " LIMITED"...)
		} else {
			b = append(b, " LTD"...)
		}
	}
	cs.nameBuf = b
	return string(b)
}

// appendBaseName appends a name without its legal form.
func appendBaseName(b []byte, r *rand.Rand, industry int) []byte {
	ind := industries[industry]
	switch v := r.IntN(100); {
	case v < 25:
		b = append(b, pick(r, surnames)...)
		b = append(b, ' ')
		b = append(b, ind...)
	case v < 45:
		b = append(b, pick(r, places)...)
		b = append(b, ' ')
		b = append(b, ind...)
	case v < 55:
		b = append(b, pick(r, surnames)...)
		b = append(b, pick(r, []string{" FAMILY HOLDINGS", " FAMILY INVESTMENTS", " NOMINEES", " HOLDINGS"})...)
		return b
	case v < 63:
		b = append(b, pick(r, surnames)...)
		b = append(b, " & "...)
		b = append(b, pick(r, surnames)...)
		if r.IntN(2) == 0 {
			b = append(b, ' ')
			b = append(b, ind...)
		}
		return b
	case v < 70:
		b = append(b, byte('A'+r.IntN(26)), ' ', '&', ' ', byte('A'+r.IntN(26)), ' ')
		b = append(b, pick(r, surnames)...)
	case v < 80:
		b = append(b, pick(r, places)...)
		b = append(b, ' ')
		b = append(b, pick(r, groupWords)...)
		return b
	default:
		for k := 2 + r.IntN(2); k > 0; k-- {
			b = append(b, pick(r, syllables)...)
		}
		b = append(b, ' ')
		b = append(b, ind...)
	}
	if r.IntN(100) < 35 {
		b = append(b, ' ')
		b = append(b, pick(r, groupWords)...)
	}
	return b
}

func trustName(r *rand.Rand) string {
	switch r.IntN(3) {
	case 0:
		return "THE " + pick(r, surnames) + " FAMILY TRUST"
	case 1:
		return pick(r, surnames) + " UNIT TRUST"
	}
	return "THE " + pick(r, places) + " " + pick(r, industries) + " TRUST"
}

// titleCase turns "BAYSIDE PLUMBING" into "Bayside Plumbing" (and
// "MCDONALD" into "McDonald").
func titleCase(s string) string {
	words := strings.Fields(strings.ToLower(s))
	for k, w := range words {
		rs := []rune(w)
		rs[0] = toUpperRune(rs[0])
		if len(rs) > 2 && rs[0] == 'M' && rs[1] == 'c' {
			rs[2] = toUpperRune(rs[2])
		}
		for j := 1; j < len(rs); j++ {
			if rs[j-1] == '\'' {
				rs[j] = toUpperRune(rs[j])
			}
		}
		words[k] = string(rs)
	}
	return strings.Join(words, " ")
}

func toUpperRune(c rune) rune {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return []rune(strings.ToUpper(string(c)))[0]
}

func pick(r *rand.Rand, list []string) string { return list[r.IntN(len(list))] }

// pickWeighted returns an index with probability weights[i]/sum(weights).
func pickWeighted(r *rand.Rand, weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	v := r.IntN(total)
	for i, w := range weights {
		if v < w {
			return i
		}
		v -= w
	}
	return len(weights) - 1
}

// acnOf returns the ACN whose first eight digits are first8.
func acnOf(first8 int64) string {
	var b [9]byte
	for k := 7; k >= 0; k-- {
		b[k] = byte('0' + first8%10)
		first8 /= 10
	}
	sum := 0
	for k := range 8 {
		sum += int(b[k]-'0') * (8 - k)
	}
	b[8] = byte('0' + (10-sum%10)%10)
	return string(b[:])
}

// abnOf returns the ABN of a company: the smallest two-digit prefix 10..99
// that makes prefix+ACN a valid ABN. It gives the same answer as
// ident.ABNFromACN without formatting 90 candidates.
func abnOf(acn string) string {
	weights := [9]int{3, 5, 7, 9, 11, 13, 15, 17, 19}
	rest := 0
	for k := range 9 {
		rest += int(acn[k]-'0') * weights[k]
	}
	for p := 10; p <= 99; p++ {
		d0, d1 := p/10, p%10
		if ((d0-1)*10+d1+rest)%89 == 0 {
			return string([]byte{byte('0' + d0), byte('0' + d1)}) + acn
		}
	}
	return ""
}

// corruptACN returns acn with a wrong check digit.
func corruptACN(acn string, r *rand.Rand) string {
	good := int(acn[8] - '0')
	bad := (good + 1 + r.IntN(9)) % 10
	return acn[:8] + string(rune('0'+bad))
}
